// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// y = a + b for two inputs of the same shape: the residual connections of a transformer block.
// (dnn's Eltwise does the same but allocates per forward, which a decode step must not.)

#include "../../precomp.hpp"
#include "../llm_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMResidualAddLayerImpl CV_FINAL : public LLMResidualAddLayer
{
public:
    explicit LLMResidualAddLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)2, "LLMResidualAdd: expects two inputs");
        CV_Check(inputs[1].size(), inputs[0] == inputs[1], "LLMResidualAdd: inputs must have the same shape");
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat a = inputs_arr.getMat(0), b = inputs_arr.getMat(1);
        Mat& y = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(a.type(), CV_32F, "LLMResidualAdd: float32 only");
        CV_CheckTypeEQ(b.type(), CV_32F, "LLMResidualAdd: float32 only");
        const float* pa = a.ptr<float>();
        const float* pb = b.ptr<float>();
        float* py = y.ptr<float>();
        for (size_t i = 0, n = a.total(); i < n; i++)
            py[i] = pa[i] + pb[i];
    }
};

Ptr<LLMResidualAddLayer> LLMResidualAddLayer::create(const LayerParams& params)
{
    return makePtr<LLMResidualAddLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
