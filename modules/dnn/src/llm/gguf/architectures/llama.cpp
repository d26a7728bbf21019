// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

/* The block of llama, qwen2/3, gemma2/3, olmo2, granite, smollm3 and mistral3, as their rows
   set it (llama.cpp's src/models/llama.cpp, qwen3.cpp, gemma3.cpp, olmo2.cpp, granite.cpp, ...):
     x += residual_scale * post_norm(selfAttention(norm(x)))
     x += residual_scale * post_norm(gatedFeedForward(norm(x)))
   where norm is absent for olmo2, post_norm only in gemma2/3 and olmo2, residual_scale only in
   granite(hybrid); the feed-forward a mixture of experts where the file has them (Mixtral,
   qwen3moe). Hybrid rows (lfm2, granitehybrid) put their recurrent mixer in place of
   selfAttention on the layers the hyper-parameters mark recurrent. */
LayerPin llamaBlock(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const std::string p = format("blk.%d.", i);
    const GGUFArchitecture& arch = g.arch();
    const float residualScale = g.hp().residualScale;

    LayerPin h = arch.preNorms ? g.rmsNorm(p + "attn_norm", x) : x;
    const bool recurrent = g.hp().isRecurrent(i);
    CV_Assert(!recurrent || arch.recurrentMixer);  // a hybrid row with llamaBlock names its mixer
    LayerPin o = recurrent ? arch.recurrentMixer(g, p, h) : g.selfAttention(p, i, h);
    if (arch.postNorms)
        o = g.rmsNorm(p + "post_attention_norm", o);
    if (residualScale != 0.f)
        o = g.scaleBy(p + "attn_residual_scale", residualScale, o);
    x = g.residual(p + "attn_residual", x, o);

    h = arch.preNorms ? g.rmsNorm(p + "ffn_norm", x) : x;
    LayerPin d = g.feedForward(p, h);
    if (arch.postNorms)
        d = g.rmsNorm(p + "post_ffw_norm", d);
    if (residualScale != 0.f)
        d = g.scaleBy(p + "ffn_residual_scale", residualScale, d);
    return g.residual(p + "ffn_residual", x, d);
}

}}} // namespace cv::dnn::llm
