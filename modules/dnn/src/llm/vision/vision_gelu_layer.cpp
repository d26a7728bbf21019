// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "vision_layers.hpp"
#include "../ggml/ggml_types.hpp"

#include <cstring>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

// ggml's ggml_table_gelu_f16: the F16 result of the tanh GELU for every F16 input.
static const std::vector<hfloat>& geluTanhF16Table()
{
    static const std::vector<hfloat> table = [] {
        std::vector<hfloat> t(65536);
        for (int i = 0; i < 65536; i++)
        {
            const float x = llm::halfBitsToFloat((uint16_t)i);
            t[i] = hfloat(0.5f * x * (1.f + std::tanh(0.7978845608028654f * x * (1.f + 0.044715f * x * x))));
        }
        return t;
    }();
    return table;
}

// The same values as LLMElementwise's "gelu_tanh_f16" (x rounded to F16, the formula in float,
// the result rounded to F16; 0 at or below -10, x at or above 10), as ggml_vec_gelu_f32 with
// GGML_GELU_FP16 computes them; but a table lookup instead of a tanh per element, as ggml.
class VisionGeluF16LayerImpl CV_FINAL : public VisionGeluF16Layer
{
public:
    explicit VisionGeluF16LayerImpl(const LayerParams& params)
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
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const float* x = in.ptr<float>();
        float* y = out.ptr<float>();
        const size_t n = in.total();
        const std::vector<hfloat>& table = geluTanhF16Table();
        parallel_for_(Range(0, (int)((n + 4095) / 4096)), [&](const Range& r) {
            const size_t begin = (size_t)r.start * 4096, end = std::min(n, (size_t)r.end * 4096);
            const int len = (int)(end - begin);
            Mat half;
            Mat(1, len, CV_32F, (void*)(x + begin)).convertTo(half, CV_16F);
            hfloat* h = half.ptr<hfloat>();
            for (int i = 0; i < len; i++)
            {
                ushort bits;
                std::memcpy(&bits, &h[i], sizeof(bits));
                h[i] = table[bits];
            }
            Mat dst(1, len, CV_32F, y + begin);
            half.convertTo(dst, CV_32F);
            for (size_t i = begin; i < end; i++)  // ggml saturates outside (-10, 10)
                if (x[i] <= -10.f)
                    y[i] = 0.f;
                else if (x[i] >= 10.f)
                    y[i] = x[i];
        });
    }
};

Ptr<VisionGeluF16Layer> VisionGeluF16Layer::create(const LayerParams& params)
{
    return makePtr<VisionGeluF16LayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
