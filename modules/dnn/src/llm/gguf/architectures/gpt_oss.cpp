// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// gpt-oss as llama.cpp reads it (src/models/openai-moe.cpp, LLM_ARCH_OPENAI_MOE): the keys it
// requires (attention.sliding_window, expert_feed_forward_length; the window on layers 0, 2, ...
// as the row's period 2 sets it), and its routing: the expert_used_count largest router logits,
// their softmax as the weights (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT), not renormalised.
void readGptOssHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    for (const char* key : {"attention.sliding_window", "expert_feed_forward_length"})
        if (!r.has(key))
            r.fail("metadata key '" + r.key(key) + "' is missing");
    h.expertGating = "softmax_weight";
    h.expertWeightsNorm = false;
    // Keys that change other architectures' results and that this graph does not apply.
    for (const char* key : {"attention.scale", "logit_scale", "embedding_scale", "residual_scale",
                            "attn_logit_softcapping", "final_logit_softcapping"})
        if (r.has(key))
            r.fail("metadata key '" + r.key(key) + "' is not supported for gpt-oss");
}

// gpt-oss (llama.cpp's src/models/openai-moe.cpp):
//   x += attn_output(attention(q, k, v of attn_norm(x); biases, sinks, sliding window on even layers))
//   x += experts(post_attention_norm(x))   (router with bias, experts with biases, clamped SwiGLU)
LayerPin gptOssBlock(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const std::string p = format("blk.%d.", i);
    // The biases llama.cpp requires (q / k / v biases are optional there too).
    for (const char* b : {"attn_output.bias", "ffn_gate_inp.bias", "ffn_gate_exps.bias", "ffn_up_exps.bias",
                          "ffn_down_exps.bias"})
        g.tensor(p + b);
    LayerPin h = g.rmsNorm(p + "attn_norm", x);
    LayerPin o = g.selfAttention(p, i, h);
    x = g.residual(p + "attn_residual", x, o);
    h = g.rmsNorm(p + "post_attention_norm", x);
    LayerPin d = g.expertFeedForward(p, h, "swiglu_oai");
    return g.residual(p + "ffn_residual", x, d);
}

}}} // namespace cv::dnn::llm
