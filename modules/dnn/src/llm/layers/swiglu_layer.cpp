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
        const Mat gateMat = inputs_arr.getMat(0), upMat = inputs_arr.getMat(1);
        CV_CheckTypeEQ(gateMat.type(), CV_32F, "LLMSwiGLU: float32 only");
        CV_CheckTypeEQ(upMat.type(), CV_32F, "LLMSwiGLU: float32 only");
        struct Args
        {
            const float* gate;
            const float* up;
            float* y;
        } args{gateMat.ptr<float>(), upMat.ptr<float>(), outputs_arr.getMatRef(0).ptr<float>()};
        const int n = (int)gateMat.total();
        parallel_for_(Range(0, n), [&args](const Range& r) {
            for (int i = r.start; i < r.end; i++)
            {
                const float g = args.gate[i];
                args.y[i] = g / (1.f + std::exp(-g)) * args.up[i];
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
