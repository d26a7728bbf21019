// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "vision_layers.hpp"

#include <cstring>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

// llama.cpp's clip_graph::build_patch_merge_permute (idefics3's pixel shuffle), written out:
// of ggml's [D, W, H] patch grid it reshapes to [D*s, W/s, H] (s neighbours along a row
// joined), permutes rows and columns, reshapes to [D*s*s, H/s, W/s] (s of those along a column
// joined) and permutes back. Merged token (Y, X), raster order over the (H/s) x (W/s) grid,
// holds features [dy][dx][c] = patch (row Y*s + dy, column X*s + dx), feature c.
class VisionPixelShuffleLayerImpl CV_FINAL : public VisionPixelShuffleLayer
{
public:
    explicit VisionPixelShuffleLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        gridW_ = params.get<int>("grid_w");
        gridH_ = params.get<int>("grid_h");
        scale_ = params.get<int>("scale");
        CV_CheckGT(scale_, 0, "VisionPixelShuffle: scale must be positive");
        CV_Check(gridW_, gridW_ > 0 && gridW_ % scale_ == 0, "VisionPixelShuffle: the grid width must be a multiple of scale");
        CV_Check(gridH_, gridH_ > 0 && gridH_ % scale_ == 0, "VisionPixelShuffle: the grid height must be a multiple of scale");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "VisionPixelShuffle: expects one input");
        CV_CheckEQ(inputs[0].size(), (size_t)2, "VisionPixelShuffle: input must be tokens x D");
        CV_CheckEQ(inputs[0][0], gridW_ * gridH_, "VisionPixelShuffle: tokens != grid_w * grid_h");
        outputs.assign(1, MatShape{gridW_ * gridH_ / (scale_ * scale_), inputs[0][1] * scale_ * scale_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const int D = in.size[1], s = scale_, outW = gridW_ / s, outH = gridH_ / s;
        const float* src = in.ptr<float>();
        float* dst = out.ptr<float>();
        for (int Y = 0; Y < outH; Y++)
            for (int X = 0; X < outW; X++)
            {
                float* row = dst + (size_t)(Y * outW + X) * D * s * s;
                for (int dy = 0; dy < s; dy++)
                    for (int dx = 0; dx < s; dx++)
                        std::memcpy(row + (size_t)(dy * s + dx) * D,
                                    src + (size_t)((Y * s + dy) * gridW_ + X * s + dx) * D, D * sizeof(float));
            }
    }

private:
    int gridW_, gridH_, scale_;
};

Ptr<VisionPixelShuffleLayer> VisionPixelShuffleLayer::create(const LayerParams& params)
{
    return makePtr<VisionPixelShuffleLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
