// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "vision_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class VisionAvgPoolLayerImpl CV_FINAL : public VisionAvgPoolLayer
{
public:
    explicit VisionAvgPoolLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        grid_ = params.get<int>("grid");
        kernel_ = params.get<int>("kernel");
        CV_CheckGT(grid_, 0, "VisionAvgPool: grid must be positive");
        CV_CheckGT(kernel_, 0, "VisionAvgPool: kernel must be positive");
        CV_CheckGE(grid_, kernel_, "VisionAvgPool: grid must not be smaller than kernel");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "VisionAvgPool: expects one input");
        CV_CheckEQ(inputs[0].size(), (size_t)2, "VisionAvgPool: input must be tokens x D");
        CV_CheckEQ(inputs[0][0], grid_ * grid_, "VisionAvgPool: tokens != grid * grid");
        const int side = grid_ / kernel_;
        outputs.assign(1, MatShape{side * side, inputs[0][1]});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const int D = in.size[1], side = grid_ / kernel_, area = kernel_ * kernel_;
        const float* x = in.ptr<float>();
        float* y = out.ptr<float>();
        // ggml_pool_2d (GGML_OP_POOL_AVG) on the CPU: per feature, a float sum over the
        // window's rows then columns, divided by the window's area; floor(grid / kernel)
        // windows per side (the last patches of a grid that is not a multiple are not used).
        for (int oy = 0; oy < side; oy++)
            for (int ox = 0; ox < side; ox++)
            {
                float* o = y + (size_t)(oy * side + ox) * D;
                for (int d = 0; d < D; d++)
                {
                    float res = 0.f;
                    for (int ky = 0; ky < kernel_; ky++)
                        for (int kx = 0; kx < kernel_; kx++)
                            res += x[(size_t)((oy * kernel_ + ky) * grid_ + ox * kernel_ + kx) * D + d];
                    o[d] = res / (float)area;
                }
            }
    }

private:
    int grid_, kernel_;
};

Ptr<VisionAvgPoolLayer> VisionAvgPoolLayer::create(const LayerParams& params)
{
    return makePtr<VisionAvgPoolLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
