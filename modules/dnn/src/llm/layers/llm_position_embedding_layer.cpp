// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Learned absolute positions (GPT-2's position_embd): y[t] = x[t] + table[position of token t in
// its sequence], the position taken from the Net's batch plan, so batches of several sequences,
// rewinds and later decode steps see the same positions as a lone run. Allocation-free: the
// table row is decoded straight into the output row, then the input is added.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../kernels/ggml_kernels.hpp"
#include "../net/llm_net_state.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMPositionEmbeddingLayerImpl CV_FINAL : public LLMPositionEmbeddingLayer
{
public:
    explicit LLMPositionEmbeddingLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        type_ = (llm::GGMLType)params.get<int>("ggml_type");
        dim_ = params.get<int>("embedding_length");
        positions_ = params.get<int>("max_positions");
        CV_CheckGT(dim_, 0, "LLMPositionEmbedding: embedding_length must be positive");
        CV_CheckGT(positions_, 0, "LLMPositionEmbedding: max_positions must be positive");
        const llm::WeightTypeTraits& traits = llm::weightTypeTraits(type_);
        CV_Check(type_, traits.computable, "LLMPositionEmbedding: unsupported ggml type");
        decodeRow_ = traits.decodeRow;
        CV_CheckEQ(blobs.size(), (size_t)1, "LLMPositionEmbedding: expects the table as one blob");
        CV_CheckEQ(blobs[0].rows, positions_, "LLMPositionEmbedding: table rows != max_positions");
        CV_CheckEQ((size_t)blobs[0].cols, llm::ggmlRowBytes(type_, dim_), "LLMPositionEmbedding: row size mismatch");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    void attachState(const Ptr<llm::LLMNetState>& state) CV_OVERRIDE
    {
        state_ = state;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMPositionEmbedding: expects one input");
        CV_CheckEQ((int)inputs[0].size(), 2, "LLMPositionEmbedding: the input must be 2-D (tokens x features)");
        CV_CheckEQ(inputs[0][1], dim_, "LLMPositionEmbedding: features != embedding_length");
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat x = inputs_arr.getMat(0);
        Mat& y = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMPositionEmbedding: float32 input only");
        CV_Assert(x.isContinuous() && y.isContinuous());
        const int tokens = x.rows;
        // Without a Net state (a Net built by hand), the tokens are positions 0..T-1.
        const int* position = nullptr;
        if (state_)
        {
            const llm::BatchPlan& plan = state_->plan();
            CV_CheckEQ(plan.tokens, tokens, "LLMPositionEmbedding: the batch plan has another token count");
            position = plan.position.data();
        }
        for (int t = 0; t < tokens; t++)
        {
            const int pos = position ? position[t] : t;
            if (pos < 0 || pos >= positions_)
                CV_Error(Error::StsOutOfRange, format("LLMPositionEmbedding: position %d is beyond the %d learned positions",
                                                      pos, positions_));
        }
        struct Args
        {
            const LLMPositionEmbeddingLayerImpl* self;
            const int* position;
            const float* src;
            float* dst;
        } args{this, position, x.ptr<float>(), y.ptr<float>()};
        parallel_for_(Range(0, tokens), [&args](const Range& r) {
            const int n = args.self->dim_;
            const Mat& table = args.self->blobs[0];
            for (int t = r.start; t < r.end; t++)
            {
                const int pos = args.position ? args.position[t] : t;
                float* yr = args.dst + (size_t)t * n;
                const float* xr = args.src + (size_t)t * n;
                args.self->decodeRow_(table.ptr(pos), yr, n);
                for (int j = 0; j < n; j++)
                    yr[j] = xr[j] + yr[j];  // ggml_add(tok, pos)
            }
        });
    }

private:
    llm::GGMLType type_;
    llm::RowDecoder decodeRow_;
    int dim_, positions_;
    Ptr<llm::LLMNetState> state_;
};

Ptr<LLMPositionEmbeddingLayer> LLMPositionEmbeddingLayer::create(const LayerParams& params)
{
    return makePtr<LLMPositionEmbeddingLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
