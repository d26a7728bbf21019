// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../kernels/ggml_kernels.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMTokenEmbeddingLayerImpl CV_FINAL : public LLMTokenEmbeddingLayer
{
public:
    explicit LLMTokenEmbeddingLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        type_ = (llm::GGMLType)params.get<int>("ggml_type");
        dim_ = params.get<int>("embedding_length");
        vocab_ = params.get<int>("vocab_size");
        tokenScale_ = params.get<float>("token_scale", 1.f);
        CV_CheckGT(dim_, 0, "LLMTokenEmbedding: embedding_length must be positive");
        CV_CheckGT(vocab_, 0, "LLMTokenEmbedding: vocab_size must be positive");
        const llm::WeightTypeTraits& traits = llm::weightTypeTraits(type_);
        CV_Check(type_, traits.computable, "LLMTokenEmbedding: unsupported ggml type");
        decodeRow_ = traits.decodeRow;
        CV_CheckEQ(blobs.size(), (size_t)1, "LLMTokenEmbedding: expects the table as one blob");
        CV_CheckEQ(blobs[0].rows, vocab_, "LLMTokenEmbedding: table rows != vocab_size");
        CV_CheckEQ((size_t)blobs[0].cols, llm::ggmlRowBytes(type_, dim_), "LLMTokenEmbedding: row size mismatch");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMTokenEmbedding: expects one input (token ids)");
        const int tokens = (int)total(inputs[0]);
        CV_CheckGT(tokens, 0, "LLMTokenEmbedding: no token ids");
        outputs.assign(1, MatShape{tokens, dim_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat ids = inputs_arr.getMat(0);
        CV_CheckTypeEQ(ids.type(), CV_32F, "LLMTokenEmbedding: token ids must be float32");
        const int tokens = (int)ids.total();
        const float* idp = ids.ptr<float>();
        const int external = external_.rows;
        for (int t = 0; t < tokens; t++)
        {
            const float id = idp[t];
            if (!(id >= (float)-external && id < (float)vocab_) || id != std::floor(id))
                CV_Error(Error::StsOutOfRange, format("LLMTokenEmbedding: token id %g is not in [0, %d)", id, vocab_));
        }
        struct Args
        {
            const LLMTokenEmbeddingLayerImpl* self;
            const float* ids;
            float* out;
        } args{this, idp, outputs_arr.getMatRef(0).ptr<float>()};
        parallel_for_(Range(0, tokens), [&args](const Range& r) {
            const Mat& table = args.self->blobs[0];
            for (int t = r.start; t < r.end; t++)
            {
                const int id = (int)args.ids[t];
                float* out = args.out + (size_t)t * args.self->dim_;
                if (id < 0)  // an external row (an image embedding)
                    std::copy_n(args.self->external_.ptr<float>(-1 - id), args.self->dim_, out);
                else
                {
                    args.self->decodeRow_(table.ptr(id), out, args.self->dim_);
                    const float scale = args.self->tokenScale_;
                    if (scale != 1.f)
                        for (int i = 0; i < args.self->dim_; i++)
                            out[i] *= scale;
                }
            }
        });
    }

    int embeddingLength() const CV_OVERRIDE { return dim_; }

    void setExternalRows(const Mat& rows) CV_OVERRIDE
    {
        if (!rows.empty())
        {
            CV_CheckTypeEQ(rows.type(), CV_32F, "LLMTokenEmbedding: external rows must be float32");
            CV_CheckEQ(rows.cols, dim_, "LLMTokenEmbedding: external rows must be embedding_length wide");
            CV_Assert(rows.isContinuous());
        }
        external_ = rows;
    }

private:
    Mat external_;  // rows that ids -1, -2, ... stand for
    llm::GGMLType type_;
    llm::RowDecoder decodeRow_;  // the fastest decoder of the type on this CPU (weight-type table)
    int dim_, vocab_;
    float tokenScale_;  // times the table's rows, not the external ones (gemma3's sqrt(n_embd))
};

Ptr<LLMTokenEmbeddingLayer> LLMTokenEmbeddingLayer::create(const LayerParams& params)
{
    return makePtr<LLMTokenEmbeddingLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
