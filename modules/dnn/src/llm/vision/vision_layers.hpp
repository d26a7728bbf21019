// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The layers a vision encoder's Net needs beyond dnn's Convolution and the LLM layers
// (LLMMatMul, LLMLayerNorm, LLMElementwise). Registered with dnn's layer factory by
// registerVisionLayers() (vision_encoder.cpp) before the first encoder is built.

#ifndef OPENCV_DNN_SRC_LLM_VISION_VISION_LAYERS_HPP
#define OPENCV_DNN_SRC_LLM_VISION_VISION_LAYERS_HPP

#include <opencv2/dnn.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

/** Full multi-head attention among all tokens (a ViT block's). Inputs q, k, v: T x
    num_heads*head_dim. Output: T x num_heads*head_dim. Parameters: `num_heads`, `head_dim`,
    `scale` (default 1/sqrt(head_dim)). */
class VisionAttentionLayer : public Layer
{
public:
    static Ptr<VisionAttentionLayer> create(const LayerParams& params);
};

/** The patch embedding convolution's output (1 x D x rows x cols) as tokens: one row per
    patch in raster order, then the class embedding (blobs[1], 1 x D, optional) as the LAST row
    (llama.cpp's clip graph appends it; Hugging Face's CLIP puts it first), plus the position
    embedding (blobs[0]: tokens x D) row by row. Output: tokens x D. */
class VisionPatchTokensLayer : public Layer
{
public:
    static Ptr<VisionPatchTokensLayer> create(const LayerParams& params);
};

/** Rows [`begin`, `end`) of a tokens x D input (llava keeps rows 1..N of its N+1 tokens). */
class VisionRowsLayer : public Layer
{
public:
    static Ptr<VisionRowsLayer> create(const LayerParams& params);
};

/** CLIP's quick GELU, x * sigmoid(1.702 x), as ggml_gelu_quick computes it on the CPU
    (GGML_GELU_QUICK_FP16): x rounded to half precision, the result rounded to half precision.
    Parameter `exact` (default false): the float formula without rounding. */
class VisionQuickGeluLayer : public Layer
{
public:
    static Ptr<VisionQuickGeluLayer> create(const LayerParams& params);
};

/** Rounds its input to half precision (and back to float32): what ggml does to a matmul's
    activations when the weights are F16 (they are converted to the weights' dot type). */
class VisionRoundF16Layer : public Layer
{
public:
    static Ptr<VisionRoundF16Layer> create(const LayerParams& params);
};

/** The tanh GELU as ggml_gelu computes it on the CPU (GGML_GELU_FP16): x rounded to half
    precision indexes a table of half-precision results; 0 for x <= -10, x for x >= 10. The
    values of LLMElementwise's "gelu_tanh_f16", by a table lookup. */
class VisionGeluF16Layer : public Layer
{
public:
    static Ptr<VisionGeluF16Layer> create(const LayerParams& params);
};

/** Idefics3's pixel shuffle (llama.cpp's build_patch_merge_permute): a `grid_h` x `grid_w`
    raster of tokens x D becomes (grid_h/`scale`) x (grid_w/`scale`) tokens of D*scale*scale
    features, each the scale x scale neighbours it covers, row by row. */
class VisionPixelShuffleLayer : public Layer
{
public:
    static Ptr<VisionPixelShuffleLayer> create(const LayerParams& params);
};

/** Gemma 3's pooling (ggml_pool_2d, GGML_OP_POOL_AVG): a tokens x D input holding a `grid` x
    `grid` patch grid in raster order, averaged over `kernel` x `kernel` windows with stride
    `kernel` (floor(grid / kernel) windows per side). Output: (grid / kernel)^2 x D, raster order. */
class VisionAvgPoolLayer : public Layer
{
public:
    static Ptr<VisionAvgPoolLayer> create(const LayerParams& params);
};

CV__DNN_INLINE_NS_END

namespace llm {
//! Registers the layers above with dnn's layer factory (once; thread-safe).
void registerVisionLayers();
}

}} // namespace cv::dnn

#endif
