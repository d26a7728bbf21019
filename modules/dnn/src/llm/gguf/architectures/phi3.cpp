// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// phi3 as llama.cpp reads it (src/models/phi3.cpp, llama-context.cpp, llama-model.cpp):
// - rope.scaling.attn_factor multiplies cos and sin (ggml_rope_ext's attn_factor; llama.cpp
//   applies it whichever factors are chosen);
// - LongRoPE: rope_factors_long.weight when the context in use exceeds
//   rope.scaling.original_context_length (default: context_length), else
//   rope_factors_short.weight (get_rope_factors: n_ctx_seq > n_ctx_orig_yarn), the context in
//   use being the caller's choice (LoadOptions::contextLength) or the training context.
// - attention.sliding_window: read and ignored, as llama.cpp does for phi3 ("Phi SWA is
//   currently disabled", llama.cpp PR 13676): every layer attends to the whole context.
void readPhi3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    const int nCtxOrig = r.hparam("rope.scaling.original_context_length", h.nCtxTrain);
    h.longRopeFactors = h.nCtx > nCtxOrig;
}

// phi3 (llama.cpp's src/models/phi3.cpp): q|k|v from one attn_qkv projection (rows q, then
// k, then v; separate attn_q/k/v also accepted) into LLMAttention's packed input; NEOX rotary
// over rope.dimension_count dimensions with the LongRoPE factors and attn_factor
// (readPhi3HyperParameters); ffn_up holds 2 x feed_forward_length rows, gate first:
// ffn = down(silu(x W_up[0:n_ff]^T) * (x W_up[n_ff:2 n_ff]^T)) (llama.cpp's LLM_FFN_SWIGLU on
// the whole up projection: ggml_swiglu applies silu to the first half). The two halves are
// two weights of one matmul layer over the mapped rows, no copy.
LayerPin phi3Block(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);
    const int qWidth = hp.nHead * hp.headDim, kvWidth = hp.nKV * hp.headDim;

    LayerPin h = g.rmsNorm(p + "attn_norm", x);
    std::vector<LayerPin> qkv;
    if (g.hasTensor(p + "attn_qkv.weight"))
        qkv.push_back(g.matmul(p + "attn_qkv", hp.nEmbd, qWidth + 2 * kvWidth, h));
    else
        qkv = g.matmuls(p + "attn_qkv", {p + "attn_q", p + "attn_k", p + "attn_v"}, {qWidth, kvWidth, kvWidth},
                        hp.nEmbd, h);

    LayerPin a = g.attention(p + "attn", i, qkv);
    LayerPin o = g.matmul(p + "attn_output", qWidth, hp.nEmbd, a);
    x = g.residual(p + "attn_residual", x, o);

    h = g.rmsNorm(p + "ffn_norm", x);
    const std::string up = p + "ffn_up.weight";
    const Mat upGate = g.weight(up, hp.nEmbd, 2 * hp.nFF);
    const int type = (int)g.tensor(up).type;
    const std::vector<LayerPin> halves = g.projections(p + "ffn_up", {LLMMatMulWeight{type, upGate.rowRange(0, hp.nFF), Mat(), up, 0},
                                                                      LLMMatMulWeight{type, upGate.rowRange(hp.nFF, 2 * hp.nFF), Mat(), up, hp.nFF}},
                                                       hp.nEmbd, h);
    LayerPin m = g.elementwise(p + "ffn_swiglu", "swiglu", halves);
    LayerPin d = g.matmul(p + "ffn_down", hp.nFF, hp.nEmbd, m);
    return g.residual(p + "ffn_residual", x, d);
}

}}} // namespace cv::dnn::llm
