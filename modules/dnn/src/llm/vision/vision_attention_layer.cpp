// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Full (bidirectional) multi-head attention over one image's patches, as a ViT block computes
// it: no KV cache, no mask, no rotary; softmax(Q K^T * scale) V per head, in float32 as
// llama.cpp's clip graph does without flash attention.

#include "../../precomp.hpp"
#include "vision_layers.hpp"
#include "../../layers/cpu_kernels/fast_gemm.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class VisionAttentionLayerImpl CV_FINAL : public VisionAttentionLayer
{
public:
    explicit VisionAttentionLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        heads_ = params.get<int>("num_heads");
        headDim_ = params.get<int>("head_dim");
        CV_CheckGT(heads_, 0, "VisionAttention: num_heads must be positive");
        CV_CheckGT(headDim_, 0, "VisionAttention: head_dim must be positive");
        scale_ = params.get<float>("scale", 1.f / std::sqrt((float)headDim_));
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)3, "VisionAttention: expects q, k and v");
        const int width = heads_ * headDim_;
        for (const MatShape& s : inputs)
        {
            CV_CheckEQ(s.size(), (size_t)2, "VisionAttention: inputs must be tokens x width");
            CV_CheckEQ(s[1], width, "VisionAttention: input width != num_heads * head_dim");
            CV_CheckEQ(s[0], inputs[0][0], "VisionAttention: q, k and v differ in tokens");
        }
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        std::vector<Mat> in;
        inputs_arr.getMatVector(in);
        Mat& out = outputs_arr.getMatRef(0);
        const int T = in[0].size[0], width = heads_ * headDim_;
        const float* q = in[0].ptr<float>();
        const float* k = in[1].ptr<float>();
        const float* v = in[2].ptr<float>();
        float* o = out.ptr<float>();
        parallel_for_(Range(0, heads_), [&](const Range& r) {
            FastGemmOpt opt;
            opt.init();
            opt.multi_thread = false;  // one head per thread
            std::vector<float> scores((size_t)T * T);
            for (int h = r.start; h < r.end; h++)
            {
                const int off = h * headDim_;
                // scores = scale * Q_h K_h^T (rows of Q_h and K_h are `width` apart)
                fastGemm(false, true, T, headDim_, T, headDim_, scale_, q + off, width, 1, k + off, width, 1, 0.f,
                         scores.data(), T, opt);
                for (int i = 0; i < T; i++)
                {
                    float* s = scores.data() + (size_t)i * T;
                    float mx = s[0];
                    for (int j = 1; j < T; j++)
                        mx = std::max(mx, s[j]);
                    double sum = 0;
                    for (int j = 0; j < T; j++)
                    {
                        s[j] = std::exp(s[j] - mx);
                        sum += s[j];
                    }
                    const float inv = (float)(1.0 / sum);
                    for (int j = 0; j < T; j++)
                        s[j] *= inv;
                }
                // O_h = softmax(scores) V_h, written into the head's columns of the output
                fastGemm(false, false, T, T, T, headDim_, 1.f, scores.data(), T, 1, v + off, width, 1, 0.f, o + off,
                         width, opt);
            }
        });
    }

private:
    int heads_, headDim_;
    float scale_;
};

Ptr<VisionAttentionLayer> VisionAttentionLayer::create(const LayerParams& params)
{
    return makePtr<VisionAttentionLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
