// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// LayerNorm with a per-feature weight and bias over the last axis of a tokens x features input:
// y = (x - mean) / sqrt(var + epsilon) * weight + bias, computed as ggml's ggml_norm followed by
// ggml_mul and ggml_add (GPT-2's norms): the mean and the variance accumulated in double, the
// centered row scaled by 1/sqrtf(var + eps), then weight, then bias. dnn's LayerNormalization
// layer is not used: it works on any rank through temporaries, while this one writes its output
// in place of nothing but the planned buffer (a decode step allocates nothing).
// With `group_size`, each group of that many features is normalized on its own, the weight and
// bias still covering the whole row (StableLM 2's Q/K norms: a LayerNorm per head, with a weight
// per head: ggml_norm over a head, then ggml_mul by the [head_dim, n_head] weight).

#include "../../precomp.hpp"
#include "llm_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMLayerNormLayerImpl CV_FINAL : public LLMLayerNormLayer
{
public:
    explicit LLMLayerNormLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        epsilon_ = params.get<float>("epsilon", 1e-5f);
        CV_CheckGE(epsilon_, 0.f, "LLMLayerNorm: epsilon must not be negative");
        groupSize_ = params.get<int>("group_size", 0);
        CV_CheckGE(groupSize_, 0, "LLMLayerNorm: group_size must not be negative");
        CV_CheckEQ(blobs.size(), (size_t)2, "LLMLayerNorm: expects the weight and the bias as blobs");
        for (const Mat& b : blobs)
        {
            CV_CheckTypeEQ(b.type(), CV_32F, "LLMLayerNorm: weight and bias must be float32");
            CV_Assert(b.isContinuous());
        }
        CV_CheckEQ(blobs[0].total(), blobs[1].total(), "LLMLayerNorm: weight and bias differ in size");
        CV_CheckGT(blobs[0].total(), (size_t)0, "LLMLayerNorm: empty weight");
        if (groupSize_ > 0)
            CV_CheckEQ(blobs[0].total() % groupSize_, (size_t)0, "LLMLayerNorm: weight size is not a multiple of group_size");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMLayerNorm: expects one input");
        CV_CheckEQ((int)inputs[0].size(), 2, "LLMLayerNorm: the input must be 2-D (tokens x features)");
        CV_CheckEQ((size_t)inputs[0][1], blobs[0].total(), "LLMLayerNorm: features != weight size");
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat x = inputs_arr.getMat(0);
        Mat& y = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMLayerNorm: float32 input only");
        CV_Assert(x.isContinuous() && y.isContinuous());
        struct Rows
        {
            const float *src, *weight, *bias;
            float* dst;
            int group;  // features normalized together: the row, or group_size of them
            float eps;
        } rows{x.ptr<float>(), blobs[0].ptr<float>(), blobs[1].ptr<float>(), y.ptr<float>(),
               groupSize_ > 0 ? groupSize_ : x.cols, epsilon_};
        CV_CheckEQ(x.cols % rows.group, 0, "LLMLayerNorm: features are not a multiple of group_size");
        const int groups = x.cols / rows.group;
        const double nstripes = std::max(1.0, (double)x.total() / (1 << 16));
        parallel_for_(Range(0, x.rows * groups), [&rows, groups](const Range& r) {
            const int n = rows.group;
            for (int g = r.start; g < r.end; g++)
            {
                const float* xr = rows.src + (size_t)g * n;
                float* yr = rows.dst + (size_t)g * n;
                const float* weight = rows.weight + (size_t)(g % groups) * n;
                const float* bias = rows.bias + (size_t)(g % groups) * n;
                double sum = 0;
                for (int j = 0; j < n; j++)
                    sum += xr[j];
                const float mean = (float)(sum / n);
                double sum2 = 0;
                for (int j = 0; j < n; j++)
                {
                    const float v = xr[j] - mean;
                    yr[j] = v;
                    sum2 += (double)(v * v);
                }
                const float variance = (float)(sum2 / n);
                const float scale = 1.f / std::sqrt(variance + rows.eps);
                for (int j = 0; j < n; j++)
                    yr[j] = yr[j] * scale * weight[j] + bias[j];
            }
        }, nstripes);
    }

private:
    float epsilon_;
    int groupSize_;
};

Ptr<LLMLayerNormLayer> LLMLayerNormLayer::create(const LayerParams& params)
{
    return makePtr<LLMLayerNormLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
