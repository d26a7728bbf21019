// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* gptneox (Pythia, GPT-NeoX-20B) as llama.cpp builds it (src/models/gptneox.cpp), and what the
   partial-rotary LayerNorm family (gptneox, phi2, stablelm) shares: the keys their hooks read
   and refuse, the q|k|v projection of llama.cpp's build_qkv. Their rows rotate NEOX pairs over
   rope.dimension_count dimensions of each head (Pythia: 25% of them), leaving the rest as they
   are, as ggml_rope_ext does with n_rot < head size. */

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

/* The keys of the family (llama.cpp's load_arch_hparams of gptneox, phi2 and stablelm): the
   LayerNorm epsilon attention.layer_norm_epsilon, required there. Q is n_embd wide (their
   attn_qkv / attn_q and attn_output are created with n_embd rows / columns), so head_count x
   head size must be embedding_length. Keys that change other architectures' results and that
   these graphs do not apply are refused by name; rotary scaling (linear, YaRN) and
   rope.scaling.attn_factor apply as for every architecture (ggml_rope_ext's freq_scale,
   ext_factor, attn_factor). */
void readLayerNormFamilyHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    const std::string epsKey = "attention.layer_norm_epsilon";
    if (!r.has(epsKey))
        r.fail("metadata key '" + r.key(epsKey) + "' is missing");
    h.eps = (float)r.file().getNumber(r.key(epsKey));
    if (!(h.eps >= 0.f && h.eps < 1.f))
        r.fail(format("layer_norm_epsilon %g is out of range", h.eps));
    if (h.nHead * h.headDim != h.nEmbd)
        r.fail(format("head_count %d x head size %d != embedding_length %d (%s's Q is n_embd wide)",
                      h.nHead, h.headDim, h.nEmbd, h.arch.c_str()));
    for (const char* key : {"attention.scale", "logit_scale", "embedding_scale", "residual_scale",
                            "attention.clamp_kqv", "attn_logit_softcapping", "final_logit_softcapping",
                            "attention.sliding_window"})
        if (r.has(key))
            r.fail("metadata key '" + r.key(key) + "' is not supported for " + h.arch);
}

/* gptneox also reads use_parallel_residual, required there (ml.get_key without a default):
   true for Pythia and GPT-NeoX-20B (attention and FFN on the same input), false for a few
   fine-tunes (sequential, as llama). */
void readGPTNeoXHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readLayerNormFamilyHyperParameters(r, h);
    const std::string key = "use_parallel_residual";
    if (!r.has(key))
        r.fail("metadata key '" + r.key(key) + "' is missing");
    h.parallelResidual = r.file().getBool(r.key(key));
}

/* q, k and v of the normed input h as llama.cpp's build_qkv makes them: one attn_qkv
   projection (rows q, then k, then v: the converter turns GPT-NeoX's per-head interleaved
   query_key_value into these three blocks) with its optional bias, into LLMAttention's packed
   input; or attn_q, attn_k, attn_v with optional biases (llama.cpp's create_tensor_qkv). */
std::vector<LayerPin> layerNormFamilyQKV(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const int qWidth = hp.nHead * hp.headDim, kvWidth = hp.nKV * hp.headDim;
    if (g.hasTensor(p + "attn_qkv.weight"))
        return {g.matmul(p + "attn_qkv", hp.nEmbd, qWidth + 2 * kvWidth, h)};
    return g.matmuls(p + "attn_qkv", {p + "attn_q", p + "attn_k", p + "attn_v"}, {qWidth, kvWidth, kvWidth},
                     hp.nEmbd, h);
}

// llama.cpp's LLM_FFN_GELU / LLM_FFN_SEQ with biases: down(gelu(up(h))), GELU as its CPU backend
// computes it (ggml_gelu: half-precision table, our gelu_tanh_f16).
LayerPin geluFeedForward(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    LayerPin up = g.matmul(p + "ffn_up", hp.nEmbd, hp.nFF, h);
    LayerPin m = g.elementwise(p + "ffn_gelu", "gelu_tanh_f16", {up});
    return g.matmul(p + "ffn_down", hp.nFF, hp.nEmbd, m);
}

/* gptneox (llama.cpp's src/models/gptneox.cpp): every projection with its bias (required there),
   fused attn_qkv only;
     a = attn_output(attention(rope(attn_qkv(layer_norm_1(x)))))
     use_parallel_residual:  x = (ffn(layer_norm_2(x)) + x) + a
     otherwise:              y = a + x;  x = ffn(layer_norm_2(y)) + y
   (the additions in llama.cpp's order). */
LayerPin gptNeoXBlock(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);
    for (const char* b : {"attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"})
        g.tensor(p + b);  // present (matmul reads it)
    const int kvWidth = hp.nKV * hp.headDim;

    LayerPin h = g.layerNorm(p + "attn_norm", x);
    LayerPin qkv = g.matmul(p + "attn_qkv", hp.nEmbd, hp.nEmbd + 2 * kvWidth, h);
    LayerPin a = g.matmul(p + "attn_output", hp.nEmbd, hp.nEmbd, g.attention(p + "attn", i, {qkv}));
    if (hp.parallelResidual)
    {
        LayerPin f = geluFeedForward(g, p, g.layerNorm(p + "ffn_norm", x));
        return g.residual(p + "attn_residual", g.residual(p + "ffn_residual", f, x), a);
    }
    x = g.residual(p + "attn_residual", a, x);
    LayerPin f = geluFeedForward(g, p, g.layerNorm(p + "ffn_norm", x));
    return g.residual(p + "ffn_residual", f, x);
}

}}} // namespace cv::dnn::llm
