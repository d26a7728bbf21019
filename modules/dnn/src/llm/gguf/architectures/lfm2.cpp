// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// lfm2 (LiquidAI LFM2; llama.cpp's src/models/lfm2.cpp): shortconv.l_cache, the short
// convolution's taps (>= 2). Layers whose attention.head_count_kv is 0 are short-convolution
// layers (readKVHeads). A sliding window (LFM2's iSWA variants) is not implemented.
void readLFM2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    h.shortConvKernel = r.hparam("shortconv.l_cache");
    if (h.shortConvKernel < 2 || h.shortConvKernel > 64)
        r.fail(format("metadata '%s' = %d is out of range (2 .. 64)", r.key("shortconv.l_cache").c_str(),
                      h.shortConvKernel));
    if (r.has("attention.sliding_window") && r.file().getInt(r.key("attention.sliding_window")) > 0)
        r.fail("metadata key '" + r.key("attention.sliding_window") + "' (LFM2's sliding-window attention) is not supported");
}

/* LFM2's block is llamaBlock (attention with per-head Q/K norms, SwiGLU feed-forward) with this
   short convolution in place of attention on the recurrent layers (build_shortconv_block):
     b | c | xs = in_proj(h)    (the projection's rows in thirds, in that order)
     y = out_proj(c * conv(b * xs))
   conv: each channel's last shortconv.l_cache values of b * xs (the earlier ones kept per
   sequence), no bias, no activation. */
LayerPin lfm2ShortConvolution(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const int d = hp.nEmbd;
    const std::vector<LayerPin> bcx = g.projections(p + "shortconv.in_proj",
                                                    g.rowParts(p + "shortconv.in_proj.weight", d, {d, d, d}), d, h);
    const LayerPin bx = g.elementwise(p + "shortconv.bx", "mul", {bcx[0], bcx[2]});
    const LayerPin conv = g.shortConvolution(p + "shortconv.conv", hp.shortConvKernel, {d}, {bx}, false)[0];
    const LayerPin y = g.elementwise(p + "shortconv.cy", "mul", {bcx[1], conv});
    return g.matmul(p + "shortconv.out_proj", d, d, y);
}

}}} // namespace cv::dnn::llm
