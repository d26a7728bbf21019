// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* gemma4: Gemma 4's dense text models as llama.cpp reads and runs them (src/models/gemma4.cpp,
   the KV-sharing rule of llama-model.cpp's create_memory).

   What it adds to gemma3:
   - local (sliding-window) and global layers of their own shapes: attention.sliding_window_pattern
     is one flag per layer; local layers have heads of attention.key_length_swa and rotate
     rope.dimension_count_swa of them with base rope.freq_base_swa (default 1e4, frequency
     scale 1); global layers have heads of attention.key_length, rope.freq_base and the
     frequency factors of rope_freqs.weight ("proportional" rotary: the converter gives the
     pairs that must not turn a factor of 1e30); head_count_kv and feed_forward_length may be
     per-layer arrays. The Net's KV cache has rows of the largest shape; smaller layers pad.
   - scores scaled by 1 (llama.cpp's f_attention_scale): Q and K are RMS-normalized per head with
     weights, V per head without; V is the raw K projection where a layer has no attn_v.
   - KV sharing (attention.shared_kv_layers = n): the last n layers compute no keys or values; a
     local one reads those of layer n_layer - n - 2, a global one those of n_layer - n - 1.
   - per-layer embeddings (embedding_length_per_layer_input = P > 0): for each token and layer a
     P-wide input, (rms_norm(per_layer_model_proj(x0) / sqrt(n_embd)) + per_layer_token_embd row
     * sqrt(P)) / sqrt(2), x0 the scaled token embedding; after each block's FFN the stream gets
     post_norm(proj(gelu(inp_gate(x)) * input)) added.
   - blk.N.layer_output_scale: the block's output times a scalar; the logits soft-capped at
     final_logit_softcapping, 30 when the key is absent (llama.cpp keeps its default here).
   Refused by name: mixtures of experts (expert_count; a router tensor in a dense file is an
   unused tensor), attn_logit_softcapping. Images (gemma4's vision projector) are refused by the
   vision loader, which does not know the projector. */

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"
#include "../../ggml/ggml_types.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// A key that is one number for every layer or an array of one per layer (llama.cpp's
// get_key_or_arr), each an integer in [lo, hi]; `def` when absent (def < lo: required).
std::vector<int> perLayerKey(const GGUFMetadataReader& r, int layers, const std::string& key, int def, int lo, int hi)
{
    const std::string full = r.key(key);
    const GGUFValue* v = r.file().find(full);
    if (!v)
    {
        if (def < lo)
            r.fail("metadata key '" + full + "' is missing");
        return std::vector<int>(layers, def);
    }
    std::vector<double> values;
    if (v->type == GGUF_ARRAY)
    {
        values = v->numbers;
        if ((int)values.size() != layers || values.size() != v->arraySize())
            r.fail(format("metadata '%s' must be one number or %d numbers (one per layer)", full.c_str(), layers));
    }
    else
    {
        const bool isFloat = v->type == GGUF_FLOAT32 || v->type == GGUF_FLOAT64;
        if (v->type == GGUF_STRING)
            r.fail("metadata '" + full + "' must be a number");
        values.assign(layers, isFloat ? v->f : (double)v->i);
    }
    std::vector<int> out;
    for (int i = 0; i < layers; i++)
    {
        if (!(values[i] >= lo && values[i] <= hi && values[i] == std::floor(values[i])))
            r.fail(format("metadata '%s' = %g (layer %d) is out of range [%d, %d]", full.c_str(), values[i], i, lo, hi));
        out.push_back((int)values[i]);
    }
    return out;
}

// Each layer's per-layer input (see the file's comment), from x0 the scaled token embedding:
// one LLMMatMul with an output per layer (the rows of per_layer_model_proj that layer reads) and,
// per layer, a lookup of its columns of per_layer_token_embd.
std::vector<LayerPin> perLayerInputs(GGUFGraphBuilder& g, LayerPin x0)
{
    const GGUFHyperParameters& hp = g.hp();
    const int n = hp.nEmbdPerLayer, layers = hp.nLayer;
    const std::string projName = "per_layer_model_proj.weight", tableName = "per_layer_token_embd.weight";
    const GGMLType projType = g.tensor(projName).type;
    const Mat proj = g.weight(projName, hp.nEmbd, n * layers);
    std::vector<LLMMatMulWeight> weights;
    for (int l = 0; l < layers; l++)
        weights.push_back(LLMMatMulWeight{(int)projType, proj.rowRange(l * n, (l + 1) * n), Mat(), projName, l * n});
    const std::vector<LayerPin> projected = g.projections("per_layer_model_proj", weights, hp.nEmbd, x0);

    const GGMLType tableType = g.tensor(tableName).type;
    const Mat table = g.weight(tableName, n * layers, (int)g.tensor("token_embd.weight").ne[1]);
    if (n % ggmlTypeTraits(tableType).blockSize != 0)
        CV_Error(Error::StsParseError, format("gemma4: tensor '%s' of type %s: embedding_length_per_layer_input %d is not "
                                              "a multiple of its block size (each layer reads its own columns)",
                                              tableName.c_str(), ggmlTypeName(tableType).c_str(), n));
    const int segment = (int)ggmlRowBytes(tableType, n);
    const Mat normWeight = g.vectorF32("per_layer_proj_norm.weight", n);

    std::vector<LayerPin> inputs;
    for (int l = 0; l < layers; l++)
    {
        LayerPin p = g.scaleBy(format("per_layer_proj_scale.%d", l), 1.f / std::sqrt((float)hp.nEmbd), projected[l]);
        LayerParams lp = g.params(format("per_layer_proj_norm.%d", l), "RMSNorm");
        lp.set("epsilon", hp.eps);
        lp.blobs.push_back(normWeight);
        p = g.add(lp, {p});
        lp = g.params(format("per_layer_token_embd.%d", l), "LLMTokenEmbedding");
        lp.set("ggml_type", (int)tableType);
        lp.set("embedding_length", n);
        lp.set("vocab_size", table.rows);
        lp.set("token_scale", std::sqrt((float)n));
        lp.blobs.push_back(table.colRange(l * segment, (l + 1) * segment));  // (a view: rows keep their stride)
        const LayerPin rows = g.add(lp, {LayerPin{0, 0}});
        p = g.residual(format("per_layer_input.%d", l), p, rows);
        inputs.push_back(g.scaleBy(format("per_layer_input_scale.%d", l), 1.f / std::sqrt(2.f), p));
    }
    return inputs;
}

// RMSNorm of each head without weights (llama.cpp's ggml_rms_norm of V): weights of ones.
LayerPin plainHeadNorm(GGUFGraphBuilder& g, const std::string& name, LayerPin x, int headDim)
{
    LayerParams lp = g.params(name, "RMSNorm");
    lp.set("epsilon", g.hp().eps);
    lp.set("group_size", headDim);
    lp.blobs.push_back(Mat(Mat::ones(1, headDim, CV_32F)));
    return g.add(lp, {x});
}

// The attention sub-layer on normed input h of block `layer`.
LayerPin gemma4Attention(GGUFGraphBuilder& g, const std::string& p, int layer, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const GGUFHyperParameters::LayerShape s = hp.shapeOf(layer);
    const int qWidth = s.heads * s.headDim, kvWidth = s.kvHeads * s.headDim;
    std::vector<LayerPin> inputs;
    if (s.kvSource < 0)
    {
        const bool hasV = g.hasTensor(p + "attn_v.weight");
        std::vector<std::string> names = {p + "attn_q", p + "attn_k"};
        std::vector<int> outs = {qWidth, kvWidth};
        if (hasV)
        {
            names.push_back(p + "attn_v");
            outs.push_back(kvWidth);
        }
        const std::vector<LayerPin> qkv = g.matmuls(p + "attn_qkv", names, outs, hp.nEmbd, h);
        inputs = {g.headNorm(p + "attn_q_norm", qkv[0], s.headDim), g.headNorm(p + "attn_k_norm", qkv[1], s.headDim),
                  plainHeadNorm(g, p + "attn_v_norm", hasV ? qkv[2] : qkv[1], s.headDim)};
    }
    else
    {
        // Checkpoints keep the K / V weights of the sharing layers; llama.cpp loads and ignores them.
        for (const char* name : {"attn_k.weight", "attn_v.weight"})
            if (g.hasTensor(p + name))
                g.weight(p + name, hp.nEmbd, kvWidth);
        if (g.hasTensor(p + "attn_k_norm.weight"))
            g.vectorF32(p + "attn_k_norm.weight", s.headDim);
        inputs = {g.headNorm(p + "attn_q_norm", g.matmul(p + "attn_q", hp.nEmbd, qWidth, h), s.headDim)};
    }
    const LayerPin a = g.attention(p + "attn", layer, inputs);
    return g.matmul(p + "attn_output", qWidth, hp.nEmbd, a);
}

} // namespace

void readGemma4HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    const int layers = h.nLayer;
    h.embeddingScale = std::sqrt((float)h.nEmbd);
    h.attentionScale = 1.f;
    if (r.has("attn_logit_softcapping"))
        r.fail("metadata key '" + r.key("attn_logit_softcapping") + "' is not supported for gemma4 (llama.cpp does not apply it)");
    h.finalSoftCap = r.hparamFloat("final_logit_softcapping", 30.f);
    if (!(h.finalSoftCap >= 0.f && h.finalSoftCap < 1e6f))
        r.fail(format("final_logit_softcapping %g is out of range", h.finalSoftCap));

    // Local and global layers.
    const std::vector<int> local = perLayerKey(r, layers, "attention.sliding_window_pattern", -1, 0, 1);
    const int window = r.hparam("attention.sliding_window", -1);
    h.slidingWindow.assign(layers, 0);
    for (int i = 0; i < layers; i++)
        h.slidingWindow[i] = local[i] ? window : 0;
    h.ropeBaseLocal = r.hparamFloat("rope.freq_base_swa", 10000.f);
    if (!(h.ropeBaseLocal > 1.f))
        r.fail(format("rope.freq_base_swa %g is out of range", h.ropeBaseLocal));
    h.ropeFreqScaleLocal = 1.f;
    h.ropeFactorsOnLocalLayers = false;
    const int headLocal = r.hparam("attention.key_length_swa", h.headDim);
    if (r.hparam("attention.value_length_swa", headLocal) != headLocal)
        r.fail("attention.value_length_swa != attention.key_length_swa (llama.cpp's gemma4 requires them equal)");
    const int ropeLocal = r.hparam("rope.dimension_count_swa", h.ropeDim);
    if (ropeLocal > headLocal || ropeLocal % 2 != 0)
        r.fail(format("rope.dimension_count_swa %d must be even and at most the local head size %d", ropeLocal, headLocal));
    // rope_freqs.weight has one factor per pair of the global head (llama.cpp: n_embd_head / 2).
    if (h.ropeDim != h.headDim)
        r.fail(format("rope.dimension_count %d != key_length %d is not supported for gemma4", h.ropeDim, h.headDim));

    const std::vector<int> kvHeads = perLayerKey(r, layers, "attention.head_count_kv", h.nHead, 1, h.nHead);
    const std::vector<int> ff = perLayerKey(r, layers, "feed_forward_length", -1, 1, 1 << 24);
    const int sharedKV = perLayerKey(r, 1, "attention.shared_kv_layers", 0, 0, layers)[0];
    const int firstShared = layers - sharedKV;
    if (firstShared < 2)
        r.fail(format("attention.shared_kv_layers %d leaves fewer than 2 layers with keys and values of their own", sharedKV));
    h.layerShapes.clear();
    h.nKV = h.nFF = 0;  // (the largest layer's)
    for (int i = 0; i < layers; i++)
    {
        GGUFHyperParameters::LayerShape s;
        s.heads = h.nHead;
        s.kvHeads = kvHeads[i];
        s.headDim = local[i] ? headLocal : h.headDim;
        s.ropeDim = local[i] ? ropeLocal : h.ropeDim;
        s.ff = ff[i];
        s.kvSource = -1;
        if (i >= firstShared)
        {
            s.kvSource = firstShared - (local[i] ? 2 : 1);
            if (local[s.kvSource] != local[i])
                r.fail(format("layer %d shares the keys and values of layer %d, which is %s (llama.cpp's KV sharing "
                              "needs layer %d global and layer %d local)", i, s.kvSource, local[i] ? "global" : "local",
                              firstShared - 1, firstShared - 2));
        }
        if (s.heads % s.kvHeads != 0)
            r.fail(format("layer %d: head_count %d is not a multiple of its head_count_kv %d", i, s.heads, s.kvHeads));
        h.layerShapes.push_back(s);
        h.nKV = std::max(h.nKV, s.kvHeads);
        h.nFF = std::max(h.nFF, s.ff);
    }
    // The cache's KV heads (the largest count) must be a multiple of every layer's.
    for (const GGUFHyperParameters::LayerShape& s : h.layerShapes)
        if (h.nKV % s.kvHeads != 0 || s.heads % h.nKV != 0)
            r.fail(format("head_count_kv: layers of %d and %d KV heads (with %d query heads) are not supported together",
                          s.kvHeads, h.nKV, s.heads));

    const std::string perLayerKeyName = r.key("embedding_length_per_layer_input");
    if (!r.file().hasMetadata(perLayerKeyName))
        r.fail("metadata key '" + perLayerKeyName + "' is missing");
    h.nEmbdPerLayer = perLayerKey(r, 1, "embedding_length_per_layer_input", 0, 0, 1 << 16)[0];
}

// A gemma4 block (llama.cpp's src/models/gemma4.cpp, dense layers):
//   a = x + post_attention_norm(attention(attn_norm(x)))
//   y = a + post_ffw_norm(down(gelu(gate(ffn_norm(a))) * up(ffn_norm(a))))
//   y = y + post_norm(proj(gelu(inp_gate(y)) * per-layer input))   (with per-layer embeddings)
//   y = y * layer_output_scale                                      (where the file has it)
LayerPin gemma4Block(GGUFGraphBuilder& g, int layer, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", layer);
    if (layer == 0 && hp.nEmbdPerLayer > 0)
        g.layerInputs() = perLayerInputs(g, x);  // (x is the scaled token embedding here)

    LayerPin a = gemma4Attention(g, p, layer, g.rmsNorm(p + "attn_norm", x));
    a = g.residual(p + "attn_residual", g.rmsNorm(p + "post_attention_norm", a), x);

    const int ff = hp.shapeOf(layer).ff;
    const LayerPin h = g.rmsNorm(p + "ffn_norm", a);
    const std::vector<LayerPin> gateUp = g.matmuls(p + "ffn_gate_up", {p + "ffn_gate", p + "ffn_up"}, {ff, ff}, hp.nEmbd, h);
    LayerPin f = g.matmul(p + "ffn_down", ff, hp.nEmbd, g.elementwise(p + "ffn_geglu", "geglu_f16", gateUp));
    LayerPin y = g.residual(p + "ffn_residual", g.rmsNorm(p + "post_ffw_norm", f), a);

    if (hp.nEmbdPerLayer > 0)
    {
        LayerPin e = g.elementwise(p + "inp_gate_gelu", "gelu_tanh_f16", {g.matmul(p + "inp_gate", hp.nEmbd, hp.nEmbdPerLayer, y)});
        e = g.elementwise(p + "per_layer_mul", "mul", {e, g.layerInputs().at(layer)});
        e = g.rmsNorm(p + "post_norm", g.matmul(p + "proj", hp.nEmbdPerLayer, hp.nEmbd, e));
        y = g.residual(p + "per_layer_residual", y, e);
    }
    if (g.hasTensor(p + "layer_output_scale.weight"))
        y = g.scaleBy(p + "layer_output_scale", g.vectorF32(p + "layer_output_scale.weight", 1).at<float>(0), y);
    return y;
}

}}} // namespace cv::dnn::llm
