// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "../llm_layers.hpp"

#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMSwiGLULayerImpl CV_FINAL : public LLMSwiGLULayer
{
public:
    explicit LLMSwiGLULayerImpl(const LayerParams& params)
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
        CV_CheckEQ(inputs.size(), (size_t)2, "LLMSwiGLU: expects two inputs (gate, up)");
        CV_Check(inputs[1].size(), inputs[0] == inputs[1], "LLMSwiGLU: gate and up must have the same shape");
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        std::vector<Mat> inputs, outputs;
        inputs_arr.getMatVector(inputs);
        outputs_arr.getMatVector(outputs);
        CV_CheckTypeEQ(inputs[0].type(), CV_32F, "LLMSwiGLU: float32 only");
        const float* gate = inputs[0].ptr<float>();
        const float* up = inputs[1].ptr<float>();
        float* y = outputs[0].ptr<float>();
        const int n = (int)inputs[0].total();
        parallel_for_(Range(0, n), [&](const Range& r) {
            for (int i = r.start; i < r.end; i++)
            {
                const float g = gate[i];
                y[i] = g / (1.f + std::exp(-g)) * up[i];
            }
        }, std::max(1.0, n / 16384.0));
    }
};

Ptr<LLMSwiGLULayer> LLMSwiGLULayer::create(const LayerParams& params)
{
    return makePtr<LLMSwiGLULayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
