// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Keeps the rows whose logits a forward returns: the last token of each sequence of the batch,
// the tokens the batch named (setLLMBatch with logit tokens), or all tokens. Placed before the final norm, so that the output projection, the largest
// matmul of a small model, runs on those rows only.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../net/llm_net_state.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMLogitRowsLayerImpl CV_FINAL : public LLMLogitRowsLayer
{
public:
    explicit LLMLogitRowsLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        allLogits_ = params.get<bool>("all_logits", false);
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    void attachState(const Ptr<llm::LLMNetState>& state) CV_OVERRIDE
    {
        state_ = state;
    }

    bool allLogits() const CV_OVERRIDE { return allLogits_; }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMLogitRows: expects one input");
        CV_CheckEQ((int)inputs[0].size(), 2, "LLMLogitRows: the input must be 2-D (tokens x features)");
        const int tokens = inputs[0][0];
        // The Net's state planned this forward before its shapes were made (patch 0009).
        const int rows = state_ ? state_->outputRows(tokens) : (allLogits_ ? tokens : 1);
        outputs.assign(1, MatShape{rows, inputs[0][1]});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat x = inputs_arr.getMat(0);
        Mat& y = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMLogitRows: float32 input only");
        const int tokens = x.rows;
        const size_t rowBytes = x.cols * sizeof(float);
        if (allLogits_)
        {
            x.copyTo(y);
            return;
        }
        if (!state_)
        {
            std::memcpy(y.ptr(), x.ptr(tokens - 1), rowBytes);
            return;
        }
        const llm::BatchPlan& plan = state_->plan();
        CV_CheckEQ(plan.tokens, tokens, "LLMLogitRows: the batch plan has another token count");
        CV_CheckEQ((int)plan.logitTokens.size(), y.rows, "LLMLogitRows: the Net's buffers were made for another plan");
        for (int r = 0; r < y.rows; r++)
            std::memcpy(y.ptr(r), x.ptr(plan.logitTokens[r]), rowBytes);
    }

private:
    bool allLogits_;
    Ptr<llm::LLMNetState> state_;
};

Ptr<LLMLogitRowsLayer> LLMLogitRowsLayer::create(const LayerParams& params)
{
    return makePtr<LLMLogitRowsLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
