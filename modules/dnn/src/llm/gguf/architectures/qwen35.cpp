// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

int ssmSize(const GGUFMetadataReader& r, const char* key)
{
    const int v = r.hparam(key);
    if (v > (1 << 20))
        r.fail(format("metadata '%s' = %d is out of range", r.key(key).c_str(), v));
    return v;
}

} // namespace

// The ssm.* sizes of the recurrent architectures (qwen35, granitehybrid), each positive and bounded.
void readSSMSizes(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    h.shortConvKernel = ssmSize(r, "ssm.conv_kernel");
    if (h.shortConvKernel < 2)
        r.fail(format("metadata '%s' = %d must be at least 2", r.key("ssm.conv_kernel").c_str(), h.shortConvKernel));
    h.ssmInner = ssmSize(r, "ssm.inner_size");
    h.ssmState = ssmSize(r, "ssm.state_size");
    h.ssmDtRank = ssmSize(r, "ssm.time_step_rank");
    h.ssmGroups = ssmSize(r, "ssm.group_count");
}

/* qwen35 (Qwen3.5; llama.cpp's src/models/qwen35.cpp): the gated delta net's sizes
   (ssm.conv_kernel, ssm.state_size = the key and value head size, ssm.time_step_rank = value
   heads, ssm.group_count = key heads, ssm.inner_size = value heads x head size), which layers
   are recurrent (attention.recurrent_layers, else every layer but each
   full_attention_interval-th, default 4), rope.dimension_sections (interleaved M-RoPE: on
   text every section turns by the token's position, which is NEOX rotary over
   rope.dimension_count dimensions). Multi-token-prediction layers are refused. */
void readQwen35HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    const GGUFModelFile& f = r.file();
    readSSMSizes(r, h);
    if (h.ssmInner != h.ssmState * h.ssmDtRank)
        r.fail(format("ssm.inner_size %d != ssm.state_size %d x ssm.time_step_rank %d", h.ssmInner, h.ssmState,
                      h.ssmDtRank));
    if (h.ssmDtRank % h.ssmGroups != 0)
        r.fail(format("ssm.time_step_rank %d (value heads) is not a multiple of ssm.group_count %d (key heads)",
                      h.ssmDtRank, h.ssmGroups));
    if (h.nExpert > 0)  // qwen35moe's shared expert: default feed_forward_length, as llama.cpp
        h.nFFShared = r.hparam("expert_shared_feed_forward_length", h.nFF);
    if (r.has("nextn_predict_layers") && f.getInt(r.key("nextn_predict_layers")) > 0)
        r.fail("metadata key '" + r.key("nextn_predict_layers") + "' (multi-token-prediction layers) is not supported");
    h.recurrent.assign(h.nLayer, false);
    if (r.has("attention.recurrent_layers"))
    {
        const std::vector<double> layers = f.getNumberArray(r.key("attention.recurrent_layers"));
        if ((int)layers.size() < h.nLayer)
            r.fail(format("metadata '%s' has %zu values for %d layers", r.key("attention.recurrent_layers").c_str(),
                          layers.size(), h.nLayer));
        for (int i = 0; i < h.nLayer; i++)
            h.recurrent[i] = layers[i] != 0;
    }
    else
    {
        const int interval = r.hparam("full_attention_interval", 4);
        for (int i = 0; i < h.nLayer; i++)
            h.recurrent[i] = (i + 1) % interval != 0;
    }
    bool anyAttention = false;
    for (int i = 0; i < h.nLayer; i++)
        anyAttention |= !h.recurrent[i];
    if (!anyAttention)
        r.fail("every layer is recurrent: a model without attention layers is not supported");
    if (r.has("rope.dimension_sections"))
    {
        // Interleaved M-RoPE gives rotated pair i the position of section i % 3 while i is
        // below 3 x that section's size, else the fourth (0 for text): all pairs must fall in
        // the first three for it to be NEOX rotary on text.
        const std::vector<double> s = f.getNumberArray(r.key("rope.dimension_sections"));
        if (s.size() < 3)
            r.fail("metadata '" + r.key("rope.dimension_sections") + "' has fewer than 3 values");
        for (int i = 0; i < h.ropeDim / 2; i++)
            if (!(i < 3 * s[i % 3]))
                r.fail(format("rope.dimension_sections leaves rotated pair %d of %d to the fourth section, which "
                              "is not supported", i, h.ropeDim / 2));
    }
}

namespace {

/* qwen35moe's feed-forward (build_layer_ffn): the routed experts (softmax over all, top k,
   weights normalized) plus the shared expert, a SwiGLU of ffn_{gate,up,down}_shexp times
   sigmoid(ffn_gate_inp_shexp . h), one value per token. */
LayerPin qwen35MoeFeedForward(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const int d = hp.nEmbd, ff = hp.nFFShared;
    const LayerPin routed = g.expertFeedForward(p, h);
    std::vector<LLMMatMulWeight> weights;
    for (const char* name : {"ffn_gate_shexp", "ffn_up_shexp"})
    {
        const std::string w = p + name + ".weight";
        weights.push_back(LLMMatMulWeight{(int)g.tensor(w).type, g.weight(w, d, ff), Mat(), w, 0});
    }
    // The gate's weight is a vector of n_embd: a one-row float32 weight.
    const Mat gateRow = g.vectorF32(p + "ffn_gate_inp_shexp.weight", d);
    weights.push_back(LLMMatMulWeight{(int)GGML_F32, Mat(1, d * (int)sizeof(float), CV_8U, (void*)gateRow.data).clone(), Mat()});
    const std::vector<LayerPin> proj = g.projections(p + "ffn_shexp_in", weights, d, h);
    const LayerPin act = g.elementwise(p + "ffn_shexp_swiglu", "swiglu", {proj[0], proj[1]});
    const LayerPin shared = g.matmul(p + "ffn_down_shexp", ff, d, act);
    const LayerPin gate = g.elementwise(p + "ffn_shexp_gate_sigmoid", "sigmoid", {proj[2]});
    const LayerPin gated = g.elementwise(p + "ffn_shexp_gated", "mul", {shared, gate});
    return g.elementwise(p + "ffn_moe_shexp", "add", {routed, gated});
}

} // namespace

/* Qwen3.5's block (build_layer_attn / build_layer_attn_linear):
     x += op(attn_norm(x)); x += ffn(post_attention_norm(x))
   Full attention: attn_q gives each head's query then its gate (rows interleaved per head);
   per-head Q/K norms, rotary, attention, times sigmoid(gate), attn_output.
   Linear attention: attn_qkv -> q | k | v (rows in that order), attn_gate -> z, ssm_beta -> b,
   ssm_alpha -> a; q | k | v through the causal convolution ssm_conv1d and SiLU; the gated delta
   net (LLMGatedDeltaNet) -> o; RMSNorm of each head of o with ssm_norm times silu(z); ssm_out.
   The feed-forward: SwiGLU (qwen35), or routed and shared experts (qwen35moe). */
LayerPin qwen35Block(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);
    const int d = hp.nEmbd;

    LayerPin h = g.rmsNorm(p + "attn_norm", x);
    LayerPin o;
    if (hp.isRecurrent(i))
    {
        const int keyWidth = hp.ssmGroups * hp.ssmState, valueWidth = hp.ssmDtRank * hp.ssmState;
        std::vector<LLMMatMulWeight> weights = g.rowParts(p + "attn_qkv.weight", d, {keyWidth, keyWidth, valueWidth});
        const std::pair<const char*, int> others[3] = {{"attn_gate", valueWidth}, {"ssm_beta", hp.ssmDtRank},
                                                       {"ssm_alpha", hp.ssmDtRank}};
        for (const auto& w : others)
        {
            const std::string name = p + w.first + ".weight";
            weights.push_back(LLMMatMulWeight{(int)g.tensor(name).type, g.weight(name, d, w.second), Mat(), name, 0});
        }
        const std::vector<LayerPin> proj = g.projections(p + "linear_attn_in", weights, d, h);
        const std::vector<LayerPin> conv = g.shortConvolution(p + "ssm_conv1d", hp.shortConvKernel,
                                                              {keyWidth, keyWidth, valueWidth},
                                                              {proj[0], proj[1], proj[2]}, true);
        LayerParams lp = GGUFGraphBuilder::params(p + "gated_delta_net", "LLMGatedDeltaNet");
        lp.set("key_heads", hp.ssmGroups);
        lp.set("value_heads", hp.ssmDtRank);
        lp.set("key_dim", hp.ssmState);
        lp.set("value_dim", hp.ssmState);
        lp.set("epsilon", hp.eps);
        lp.blobs.push_back(g.vectorF32(p + "ssm_dt.bias", hp.ssmDtRank));
        lp.blobs.push_back(g.vectorF32(p + "ssm_a", hp.ssmDtRank));
        const LayerPin core = g.add(lp, {conv[0], conv[1], conv[2], proj[5], proj[4]});
        const LayerPin normed = g.headNorm(p + "ssm_norm", core, hp.ssmState);
        const LayerPin gated = g.elementwise(p + "ssm_gated", "swiglu", {proj[3], normed});
        o = g.matmul(p + "ssm_out", valueWidth, d, gated);
    }
    else
    {
        // attn_q's rows: per head, head_dim query rows then head_dim gate rows; copied apart
        // (whole rows: any type) so that each is a weight of its own.
        const int hd = hp.headDim, qWidth = hp.nHead * hd, kvWidth = hp.nKV * hd;
        const std::string qName = p + "attn_q.weight";
        const Mat qg = g.weight(qName, d, 2 * qWidth);
        Mat q(qWidth, qg.cols, qg.type()), gate(qWidth, qg.cols, qg.type());
        for (int head = 0; head < hp.nHead; head++)
        {
            qg.rowRange(2 * head * hd, (2 * head + 1) * hd).copyTo(q.rowRange(head * hd, (head + 1) * hd));
            qg.rowRange((2 * head + 1) * hd, (2 * head + 2) * hd).copyTo(gate.rowRange(head * hd, (head + 1) * hd));
        }
        const int qType = (int)g.tensor(qName).type;
        std::vector<LLMMatMulWeight> weights = {LLMMatMulWeight{qType, q, Mat()}, LLMMatMulWeight{qType, gate, Mat()}};
        for (const char* name : {"attn_k", "attn_v"})
        {
            const std::string w = p + name + ".weight";
            weights.push_back(LLMMatMulWeight{(int)g.tensor(w).type, g.weight(w, d, kvWidth), Mat(), w, 0});
        }
        const std::vector<LayerPin> proj = g.projections(p + "attn_qgkv", weights, d, h);
        const LayerPin qn = g.headNorm(p + "attn_q_norm", proj[0]);
        const LayerPin kn = g.headNorm(p + "attn_k_norm", proj[2]);
        const LayerPin a = g.attention(p + "attn", i, {qn, kn, proj[3]});
        const LayerPin sig = g.elementwise(p + "attn_gate_sigmoid", "sigmoid", {proj[1]});
        const LayerPin gated = g.elementwise(p + "attn_gated", "mul", {a, sig});
        o = g.matmul(p + "attn_output", qWidth, d, gated);
    }
    x = g.residual(p + "attn_residual", x, o);

    h = g.rmsNorm(p + "post_attention_norm", x);
    const LayerPin f = hp.nExpert > 0 ? qwen35MoeFeedForward(g, p, h) : g.gatedFeedForward(p, h);
    return g.residual(p + "ffn_residual", x, f);
}

}}} // namespace cv::dnn::llm
