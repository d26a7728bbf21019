// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// gpt2 as llama.cpp's src/models/gpt2.cpp builds it: LayerNorm epsilon from
// attention.layer_norm_epsilon (required there), q width n_embd, no rotary.
void readGPT2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    if (!r.has("attention.layer_norm_epsilon"))
        r.fail("metadata key '" + r.key("attention.layer_norm_epsilon") + "' is missing");
    h.eps = (float)r.file().getNumber(r.key("attention.layer_norm_epsilon"));
    if (!(h.eps >= 0.f && h.eps < 1.f))
        r.fail(format("layer_norm_epsilon %g is out of range", h.eps));
    if (h.nHead * h.headDim != h.nEmbd)
        r.fail(format("head_count %d x head size %d != embedding_length %d (gpt2's Q is n_embd wide)",
                      h.nHead, h.headDim, h.nEmbd));
    // Keys that change other architectures' results and that this graph does not apply.
    for (const char* key : {"rope.scaling.type", "rope.scaling.factor", "attention.scale", "logit_scale",
                            "embedding_scale", "residual_scale", "attention.clamp_kqv", "rope.scaling.attn_factor",
                            "attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window"})
        if (r.has(key))
            r.fail("metadata key '" + r.key(key) + "' is not supported for gpt2");
}

// gpt2 (llama.cpp's src/models/gpt2.cpp): every projection with its bias (required),
//   x += attn_output(attention(attn_qkv(layer_norm(x))))   (no rotary)
//   x += ffn_down(gelu_tanh(ffn_up(layer_norm(x))))
LayerPin gpt2Block(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);
    const int kvWidth = hp.nKV * hp.headDim;
    for (const char* b : {"attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"})
        g.tensor(p + b);  // present (matmul reads it)

    LayerPin h = g.layerNorm(p + "attn_norm", x);
    LayerPin qkv = g.matmul(p + "attn_qkv", hp.nEmbd, hp.nEmbd + 2 * kvWidth, h);
    LayerPin a = g.attention(p + "attn", i, {qkv});
    LayerPin o = g.matmul(p + "attn_output", hp.nEmbd, hp.nEmbd, a);
    x = g.residual(p + "attn_residual", x, o);

    h = g.layerNorm(p + "ffn_norm", x);
    LayerPin up = g.matmul(p + "ffn_up", hp.nEmbd, hp.nFF, h);
    // GELU as llama.cpp's CPU backend computes it (the exact tanh formula is 2e-4 off in p)
    LayerPin m = g.elementwise(p + "ffn_gelu", "gelu_tanh_f16", {up});
    LayerPin d = g.matmul(p + "ffn_down", hp.nFF, hp.nEmbd, m);
    return g.residual(p + "ffn_residual", x, d);
}

}}} // namespace cv::dnn::llm
