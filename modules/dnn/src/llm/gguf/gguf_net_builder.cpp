// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Builds a cv::dnn::Net for a GGUF language model out of ordinary dnn layers, as llama.cpp's
// src/models/<arch>.cpp builds the graph: token embedding, then per block (block())
//   x += o_proj(attention(rope(q_proj(norm(x))), rope(k_proj(..)), v_proj(..)))
//   x += down(act(gate(norm(x))) * up(norm(x)))
// with what kArchitectures says of each architecture: Q/K norms per head (qwen3, gemma3) or over
// the whole projection (olmo2), norms after attention and FFN (gemma2/3, olmo2; olmo2 has none
// before), GELU instead of SiLU (gemma), sliding-window layers (gemma2/3, olmo2 when the file
// has a window); gemma also scales the embeddings and soft-caps scores and logits. phi3 (fused
// q|k|v and gate|up, LongRoPE) and gpt2 (learned positions, LayerNorm with bias, no rotary) have
// blocks of their own. Then the final norm and the output projection (tied to the embedding when
// output.weight is absent). Weights are wrapped from the mapping, not copied, except small norm
// vectors.
// granite, smollm3 and mistral3 are llama's block with what their metadata adds: granite's
// embedding, residual, attention and logit scales (readGraniteHyperParameters), smollm3's layers
// without rotary (ropeOnLayer), mistral3's attention temperature (readMistral3HyperParameters).
// YaRN rope scaling (any rotary architecture) goes into each layer's per-pair frequency factors
// and rotary magnitude (setRotaryScaling).

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
#include "gguf_net_builder.hpp"
#include "../net/net_assembly.hpp"
#include "../net/llm_net_state.hpp"
#include "../attention/rotary_embedding.hpp"

#include <cmath>
#include <set>


namespace cv {
namespace dnn {
namespace llm {

namespace {

// What sets an architecture's graph apart, as llama.cpp's src/models/<arch>.cpp builds it.
// Q/K/V biases are used where the file has them (qwen2 always does).
enum class QKNorm
{
    None,
    PerHead,  // RMSNorm of every Q and K head before rotary (blk.N.attn_q_norm / attn_k_norm, head_dim each)
    Whole     // RMSNorm of the whole Q and K projections (olmo2: n_head * head_dim and n_head_kv * head_dim)
};

struct ArchInfo
{
    const char* name;
    bool neoxRope;  // rotary pairs (i, i + rope_dim/2) instead of (2i, 2i+1)
    QKNorm qkNorm;
    bool preNorms;  // attn_norm / ffn_norm on a block's inputs (olmo2 has none)
    bool postNorms; // post_attention_norm / post_ffw_norm on the attention and FFN outputs
    bool gelu;      // gated FFN with GELU (tanh) instead of SiLU
    int swaPeriod;  // sliding-window pattern when the file names none: of every swaPeriod layers
                    // the last is global (llama.cpp's set_swa_pattern); 0: no sliding window
};

const ArchInfo kArchitectures[] = {
    // name     neox   qkNorm           pre    post   gelu   swaPeriod
    {"llama",   false, QKNorm::None,    true,  false, false, 0},  // Llama 1/2/3, Mistral, TinyLlama, SmolLM (Q/K rows permuted by the converter)
    {"qwen2",   true,  QKNorm::None,    true,  false, false, 0},
    {"qwen3",   true,  QKNorm::PerHead, true,  false, false, 0},  // head size from attention.key_length (Qwen3-0.6B: 16 x 128 > n_embd 1024)
    {"gpt2",    false, QKNorm::None,    true,  false, false, 0},  // no rotary, LayerNorm, plain GELU FFN: gpt2Block
    {"phi3",    true,  QKNorm::None,    true,  false, false, 0},  // Phi-3 / 3.5 / 4-mini: its own block, phi3Block()
    {"gemma2",  true,  QKNorm::None,    true,  true,  true,  2},  // + embedding scale, soft-capping: readGemmaHyperParameters
    {"gemma3",  true,  QKNorm::PerHead, true,  true,  true,  6},
    {"olmo2",   true,  QKNorm::Whole,   false, true,  false, 4},  // OLMo 2 (OLMo 3 adds sliding windows)
    {"granite", false, QKNorm::None,    true,  false, false, 0},  // Granite 3.x: scales, readGraniteHyperParameters
    {"smollm3", false, QKNorm::None,    true,  false, false, 0},  // no rotary on every fourth layer: ropeOnLayer
    {"mistral3", false, QKNorm::None,   true,  false, false, 0},  // Ministral 3 / Mistral Small 3.x: temperature
};

std::string supportedArchitectures()
{
    std::string s;
    for (const ArchInfo& a : kArchitectures)
        s += (s.empty() ? "" : ", ") + std::string(a.name);
    return s;
}

std::string supportedTypes()
{
    std::string s;
    for (uint32_t t = 0; t < 64; t++)
        if (ggmlTypeTraits(t).dequantizable)
            s += (s.empty() ? "" : ", ") + ggmlTypeName(t);
    return s;
}

class NetBuilder
{
public:
    NetBuilder(const GGUFModelFile& file, const LoadOptions& options)
        : f_(file), allLogits_(options.allLogits), integerDot_(options.integerDot),
          contextLength_(options.contextLength)
    {
    }

    Net build()
    {
        readHyperParameters();
        net_.setInputsNames({"input_ids"});
        const Mat embd = weight("token_embd.weight", nEmbd_, -1);
        vocab_ = embd.rows;

        LayerParams lp = params("token_embd", "LLMTokenEmbedding");
        lp.set("ggml_type", (int)tensor("token_embd.weight").type);
        lp.set("embedding_length", nEmbd_);
        lp.set("vocab_size", vocab_);
        lp.blobs.push_back(embd);
        Pin x = add(lp, {Pin{0, 0}});
        if (gpt2_)
            x = positionEmbedding(x);
        if (embeddingScale_ != 1.f)
            x = scaleBy("token_embd_scale", embeddingScale_, x);

        if (!gpt2_)
            ropeFactors_ = readRopeFactors();
        for (int i = 0; i < nLayer_; i++)
            x = gpt2_ ? gpt2Block(i, x) : arch_ == "phi3" ? phi3Block(i, x) : block(i, x);

        lp = params("logit_rows", "LLMLogitRows");
        lp.set("all_logits", allLogits_);
        const int logitRows = add(lp, {x}).layer;
        x = Pin{logitRows, 0};
        // (granite's logits / logit_scale: folded into the final norm's weights; the output
        // projection is linear, and on 8-bit activations their rounding scales with them)
        x = gpt2_ ? layerNorm("output_norm", x)
                  : rmsNorm("output_norm", "output_norm.weight", x, -1, logitScale_ != 0.f ? 1.f / logitScale_ : 1.f);
        // (gemma2's output always shares token_embd: an output.weight is refused as unused)
        const bool tied = !f_.findTensor("output.weight") || arch_ == "gemma2";
        lp = params("output", "LLMMatMul");
        const std::string outName = tied ? "token_embd.weight" : "output.weight";
        lp.set("ggml_type", (int)tensor(outName).type);
        lp.set("in_features", nEmbd_);
        lp.set("out_features", vocab_);
        lp.set("integer_dot", integerDot_);
        lp.blobs.push_back(tied ? embd : weight(outName, nEmbd_, vocab_));
        x = add(lp, {x});
        if (finalSoftCap_ > 0.f)
        {
            lp = params("output_softcap", "LLMElementwise");
            lp.set("operation", "softcap");
            lp.set("cap", finalSoftCap_);
            add(lp, {x});
        }

        // Like llama.cpp, refuse tensors the graph does not use: they belong to a variant of the
        // architecture (Q/K norms in a llama file, a fused attn_qkv, ...) that would
        // otherwise be computed without them.
        for (const GGUFTensor& t : f_.tensors())
            if (!used_.count(t.name))
                fail("tensor '" + t.name + "' is not used by architecture '" + arch_ + "' as implemented here");

        installLLMState(net_, attentionIds_, logitRows, f_.path());
        if (positionLayer_ >= 0)
            net_.getLayer(positionLayer_).dynamicCast<LLMPositionEmbeddingLayer>()->attachState(LLMNetState::of(net_));
        return net_;
    }

private:
    using Pin = LayerPin;

    [[noreturn]] void fail(const std::string& msg) const
    {
        CV_Error(Error::StsParseError, format("GGUF '%s': %s", f_.path().c_str(), msg.c_str()));
    }

    // A positive integer hyper-parameter `<arch>.<key>`.
    int hparam(const std::string& key, int def = -1) const
    {
        const std::string full = arch_ + "." + key;
        if (!f_.hasMetadata(full))
        {
            if (def < 0)
                fail("metadata key '" + full + "' is missing");
            return def;
        }
        const int64 v = f_.getInt(full);
        if (v <= 0 || v > INT_MAX)
            fail(format("metadata '%s' = %lld is out of range", full.c_str(), (long long)v));
        return (int)v;
    }

    float hparamFloat(const std::string& key, float def) const
    {
        const std::string full = arch_ + "." + key;
        return f_.hasMetadata(full) ? (float)f_.getNumber(full) : def;
    }

    void readHyperParameters()
    {
        arch_ = f_.hasMetadata("general.architecture") ? f_.getString("general.architecture") : std::string();
        const ArchInfo* info = nullptr;
        for (const ArchInfo& a : kArchitectures)
            if (arch_ == a.name)
                info = &a;
        if (!info)
            fail("architecture '" + arch_ + "' is not supported (supported: " + supportedArchitectures() + ")");
        info_ = info;
        neox_ = info->neoxRope;
        if (f_.hasMetadata(arch_ + ".expert_count") && f_.getInt(arch_ + ".expert_count") > 0)
            fail("mixture-of-experts models are not supported");

        nEmbd_ = hparam("embedding_length");
        nLayer_ = hparam("block_count");
        nFF_ = hparam("feed_forward_length");
        nHead_ = hparam("attention.head_count");
        nKV_ = hparam("attention.head_count_kv", nHead_);
        // The context in use: the file's training context unless the caller chose another
        // (llama.cpp's n_ctx; more than the training context is allowed, as there).
        nCtxTrain_ = hparam("context_length");
        nCtx_ = contextLength_ > 0 ? contextLength_ : nCtxTrain_;
        if (nHead_ % nKV_ != 0)
            fail(format("head_count %d is not a multiple of head_count_kv %d", nHead_, nKV_));
        headDim_ = hparam("attention.key_length", nEmbd_ / nHead_);
        if (hparam("attention.value_length", headDim_) != headDim_)
            fail("attention.value_length != attention.key_length is not supported");
        ropeDim_ = hparam("rope.dimension_count", headDim_);
        if (ropeDim_ > headDim_ || ropeDim_ % 2 != 0)
            fail(format("rope.dimension_count %d must be even and at most the head size %d", ropeDim_, headDim_));
        if (nLayer_ > 4096)
            fail(format("block_count %d is implausible", nLayer_));
        eps_ = hparamFloat("attention.layer_norm_rms_epsilon", 1e-5f);
        if (!(eps_ >= 0.f && eps_ < 1.f))
            fail(format("layer_norm_rms_epsilon %g is out of range", eps_));
        ropeBase_ = hparamFloat("rope.freq_base", 10000.f);
        if (!(ropeBase_ > 1.f))
            fail(format("rope.freq_base %g is out of range", ropeBase_));

        // Linear scaling divides positions by the factor; Llama-3 scaling comes as per-pair
        // frequency factors in rope_freqs.weight. Other schemes would give wrong results.
        const std::string scalingKey = arch_ + ".rope.scaling.type";
        std::string scaling = f_.hasMetadata(scalingKey) ? f_.getString(scalingKey) : std::string("none");
        float factor = hparamFloat("rope.scaling.factor", hparamFloat("rope.scale_linear", 1.f));
        if (scaling == "none" && factor != 1.f && factor != 0.f && !f_.hasMetadata(scalingKey))
            scaling = "linear";
        if (scaling == "linear")
        {
            if (!(factor > 0.f))
                fail(format("rope scaling factor %g is out of range", factor));
            ropeFreqScale_ = 1.f / factor;
        }
        else if (scaling == "yarn")
            readYarnHyperParameters(factor);
        else if (scaling != "none" && scaling != "llama3")
            fail("rope scaling type '" + scaling + "' is not supported (none, linear, llama3, yarn are)");
        // llama.cpp multiplies cos and sin by rope.scaling.attn_factor in every architecture
        // (llama_context's yarn_attn_factor; with YaRN's magnitude: setRotaryScaling).
        ropeAttnFactor_ = hparamFloat("rope.scaling.attn_factor", 1.f);
        if (!(ropeAttnFactor_ > 0.f && ropeAttnFactor_ < 1e3f))
            fail(format("metadata '%s.rope.scaling.attn_factor' = %g is out of range", arch_.c_str(), ropeAttnFactor_));

        // Keys llama.cpp reads for every architecture that would change the result and that
        // are not implemented here.
        const std::string causalKey = arch_ + ".attention.causal";
        if (f_.hasMetadata(causalKey) && !f_.getBool(causalKey))
            fail("metadata key '" + causalKey + "' = false (bidirectional attention) is not supported");
        gpt2_ = arch_ == "gpt2";
        if (gpt2_)
            readGPT2HyperParameters();
        if (arch_ == "phi3")
            readPhi3HyperParameters();
        if (info->swaPeriod > 0)
            readSlidingWindows(info->swaPeriod);
        if (arch_ == "gemma2" || arch_ == "gemma3")
            readGemmaHyperParameters();
        if (arch_ == "granite")
            readGraniteHyperParameters();
        if (arch_ == "smollm3")
            noRopeLayerStep_ = 4;  // llama.cpp's smollm3.cpp sets n_no_rope_layer_step = 4 (no key)
        if (arch_ == "mistral3")
            readMistral3HyperParameters();
        if ((arch_ == "granite" || arch_ == "smollm3" || arch_ == "mistral3") && ropeDim_ != headDim_)
            fail(format("rope.dimension_count %d != head size %d (llama.cpp's %s graph requires them equal)",
                        ropeDim_, headDim_, arch_.c_str()));
    }

    // YaRN as llama.cpp runs it (llama-context.cpp, ggml's rope_yarn): ext_factor 1, frequency
    // scale 1/factor (factor 0 or absent: 1), the ramp between the pairs that turn beta_fast and
    // beta_slow times over original_context_length (default: the training context_length),
    // beta_fast 32 and beta_slow 1 unless the architecture reads its own (mistral3). llama.cpp
    // reads the rope.scaling.yarn_* keys only for some architectures (of ours, mistral3's
    // beta_fast, beta_slow, yarn_log_multiplier); elsewhere they are ignored here too, as there.
    void readYarnHyperParameters(float factor)
    {
        if (!(factor >= 0.f && factor < 1e6f))
            fail(format("rope scaling factor %g is out of range", factor));
        ropeFreqScale_ = factor == 0.f ? 1.f : 1.f / factor;
        yarn_.extFactor = 1.f;
        yarn_.originalContext = hparam("rope.scaling.original_context_length", nCtxTrain_);
    }

    // granite (llama.cpp's src/models/granite.cpp, llama-graph.cpp's build_inp_embd): logit_scale
    // required (logits are divided by it); embedding_scale, residual_scale (both branches'
    // outputs before their residual add) and attention.scale (instead of 1/sqrt(head size))
    // optional, 0 or absent meaning "not applied"; rope.scaling.finetuned (default true) turns
    // the rotary of every layer on or off. deepstack_mapping (Granite Vision) is refused.
    void readGraniteHyperParameters()
    {
        const std::string logitKey = arch_ + ".logit_scale";
        if (!f_.hasMetadata(logitKey))
            fail("metadata key '" + logitKey + "' is missing");
        logitScale_ = (float)f_.getNumber(logitKey);
        if (!(std::isfinite(logitScale_) && logitScale_ != 0.f))
            fail(format("metadata '%s' = %g is out of range", logitKey.c_str(), logitScale_));
        const float embeddingScale = finiteHparam("embedding_scale");
        if (embeddingScale != 0.f)
            embeddingScale_ = embeddingScale;
        residualScale_ = finiteHparam("residual_scale");
        attentionScale_ = finiteHparam("attention.scale");
        if (attentionScale_ < 0.f)
            fail(format("metadata '%s.attention.scale' = %g is out of range", arch_.c_str(), attentionScale_));
        const std::string finetunedKey = arch_ + ".rope.scaling.finetuned";
        ropeEnabled_ = !f_.hasMetadata(finetunedKey) || f_.getBool(finetunedKey);
        if (f_.hasMetadata(arch_ + ".deepstack_mapping"))
            fail("metadata key '" + arch_ + ".deepstack_mapping' (Granite Vision's deepstack inputs) is not supported");
    }

    // mistral3 (llama.cpp's src/models/mistral3.cpp): yarn_beta_fast / yarn_beta_slow /
    // yarn_log_multiplier for YaRN; attention.temperature_scale: each query times
    // 1 + scale * ln(1 + floor(pos / original_context_length)) after rotary (Llama 4 scaling).
    void readMistral3HyperParameters()
    {
        yarn_.betaFast = hparamFloat("rope.scaling.yarn_beta_fast", yarn_.betaFast);
        yarn_.betaSlow = hparamFloat("rope.scaling.yarn_beta_slow", yarn_.betaSlow);
        if (!(yarn_.betaFast > 0.f && yarn_.betaFast < 1e6f && yarn_.betaSlow > 0.f && yarn_.betaSlow < 1e6f))
            fail(format("rope.scaling.yarn_beta_fast %g / yarn_beta_slow %g are out of range", yarn_.betaFast, yarn_.betaSlow));
        yarnLogMultiplier_ = finiteHparam("rope.scaling.yarn_log_multiplier");
        temperatureScale_ = finiteHparam("attention.temperature_scale");
        if (temperatureScale_ != 0.f)
            temperatureLength_ = hparam("rope.scaling.original_context_length", nCtxTrain_);
    }

    // A float `<arch>.<key>` that must be finite; 0 when absent.
    float finiteHparam(const std::string& key) const
    {
        const float v = hparamFloat(key, 0.f);
        if (!std::isfinite(v))
            fail(format("metadata '%s.%s' = %g is out of range", arch_.c_str(), key.c_str(), v));
        return v;
    }

    /* Sliding-window attention as llama.cpp reads it (src/models/gemma2.cpp, gemma3.cpp,
       olmo2.cpp): attention.sliding_window positions (gemma2: 4096 when absent; gemma3 and
       olmo2: no sliding window when absent), on the layers of attention.sliding_window_pattern
       (default: the architecture's period; of every period layers the last is global, 0: all
       local), with rope.freq_base_swa as the rotary base of the local layers (default: gemma3
       10000, others the global base) and their own frequency scale (gemma2 the global one;
       gemma3 and olmo2 1: linear scaling or YaRN of the global layers does not apply). */
    void readSlidingWindows(int defaultPeriod)
    {
        const std::string windowKey = arch_ + ".attention.sliding_window";
        const bool gemma2 = arch_ == "gemma2";
        if (!f_.hasMetadata(windowKey) && !gemma2)
            return;
        const int64 window = f_.hasMetadata(windowKey) ? f_.getInt(windowKey) : 4096;
        if (window == 0 && !gemma2)
            return;
        if (window <= 0 || window > INT_MAX)
            fail(format("metadata '%s' = %lld is out of range", windowKey.c_str(), (long long)window));
        int period = defaultPeriod;
        const std::string patternKey = arch_ + ".attention.sliding_window_pattern";
        if (f_.hasMetadata(patternKey))
        {
            if (f_.value(patternKey).type == GGUF_ARRAY)
                fail("metadata key '" + patternKey + "' as a per-layer array is not supported (an integer period is)");
            const int64 v = f_.getInt(patternKey);
            if (v < 0 || v > nLayer_)
                fail(format("metadata '%s' = %lld is out of range", patternKey.c_str(), (long long)v));
            period = (int)v;
        }
        slidingWindow_.assign(nLayer_, 0);
        for (int i = 0; i < nLayer_; i++)
            if (period == 0 || i % period < period - 1)
                slidingWindow_[i] = (int)window;
        ropeBaseLocal_ = hparamFloat("rope.freq_base_swa", arch_ == "gemma3" ? 10000.f : ropeBase_);
        if (!(ropeBaseLocal_ > 1.f))
            fail(format("rope.freq_base_swa %g is out of range", ropeBaseLocal_));
        ropeFreqScaleLocal_ = gemma2 ? ropeFreqScale_ : 1.f;
    }

    /* gemma2 / gemma3 (llama.cpp's src/models/gemma2.cpp, gemma3.cpp): token embeddings times
       sqrt(n_embd); queries scaled by 1/sqrt(head size), or 1/sqrt(n_embd / n_head) for the
       27B models (the block counts 46 and 62, as llama.cpp tells them); gemma2 soft-caps the
       attention scores (attn_logit_softcapping, default 50) and the logits
       (final_logit_softcapping, default 30); gemma3 only the logits, when the file says so. */
    void readGemmaHyperParameters()
    {
        const bool gemma2 = arch_ == "gemma2";
        embeddingScale_ = std::sqrt((float)nEmbd_);
        const bool is27B = nLayer_ == (gemma2 ? 46 : 62);
        attentionScale_ = 1.f / std::sqrt(is27B ? (float)(nEmbd_ / nHead_) : (float)headDim_);
        if (gemma2)
            attnSoftCap_ = hparamFloat("attn_logit_softcapping", 50.f);
        else if (f_.hasMetadata(arch_ + ".attn_logit_softcapping"))
            fail("metadata key '" + arch_ + ".attn_logit_softcapping' is not supported for gemma3 (llama.cpp does not apply it)");
        finalSoftCap_ = hparamFloat("final_logit_softcapping", gemma2 ? 30.f : 0.f);
        if (!(attnSoftCap_ >= 0.f && attnSoftCap_ < 1e6f) || !(finalSoftCap_ >= 0.f && finalSoftCap_ < 1e6f))
            fail(format("soft-capping values %g / %g are out of range", attnSoftCap_, finalSoftCap_));
    }

    // gpt2 as llama.cpp's src/models/gpt2.cpp builds it: LayerNorm epsilon from
    // attention.layer_norm_epsilon (required there), q width n_embd, no rotary.
    void readGPT2HyperParameters()
    {
        const std::string epsKey = arch_ + ".attention.layer_norm_epsilon";
        if (!f_.hasMetadata(epsKey))
            fail("metadata key '" + epsKey + "' is missing");
        eps_ = (float)f_.getNumber(epsKey);
        if (!(eps_ >= 0.f && eps_ < 1.f))
            fail(format("layer_norm_epsilon %g is out of range", eps_));
        if (nHead_ * headDim_ != nEmbd_)
            fail(format("head_count %d x head size %d != embedding_length %d (gpt2's Q is n_embd wide)",
                        nHead_, headDim_, nEmbd_));
        // Keys that change other architectures' results and that this graph does not apply.
        for (const char* key : {"rope.scaling.type", "rope.scaling.factor", "attention.scale", "logit_scale",
                                "embedding_scale", "residual_scale", "attention.clamp_kqv", "rope.scaling.attn_factor",
                                "attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window"})
            if (f_.hasMetadata(arch_ + "." + key))
                fail("metadata key '" + arch_ + "." + key + "' is not supported for gpt2");
    }

    // phi3 as llama.cpp reads it (src/models/phi3.cpp, llama-context.cpp, llama-model.cpp):
    // - rope.scaling.attn_factor multiplies cos and sin (ggml_rope_ext's attn_factor; llama.cpp
    //   applies it whichever factors are chosen);
    // - LongRoPE: rope_factors_long.weight when the context in use exceeds
    //   rope.scaling.original_context_length (default: context_length), else
    //   rope_factors_short.weight (get_rope_factors: n_ctx_seq > n_ctx_orig_yarn). A Net's
    //   context is the file's context_length, so this is llama.cpp's choice at its default
    //   n_ctx (the training context).
    // - attention.sliding_window: read and ignored, as llama.cpp does for phi3 ("Phi SWA is
    //   currently disabled", llama.cpp PR 13676): every layer attends to the whole context.
    void readPhi3HyperParameters()
    {
        const int nCtxOrig = hparam("rope.scaling.original_context_length", nCtxTrain_);
        phi3LongRope_ = nCtx_ > nCtxOrig;
    }

    const GGUFTensor& tensor(const std::string& name) const
    {
        const GGUFTensor* t = f_.findTensor(name);
        if (!t)
            fail("tensor '" + name + "' is missing");
        used_.insert(name);
        return *t;
    }

    // A matrix with rows of `cols` elements (ggml ne[0]) and `rows` rows (ne[1]; -1: any),
    // wrapped from the mapping in its stored type.
    Mat weight(const std::string& name, int cols, int rows) const
    {
        const GGUFTensor& t = tensor(name);
        if (t.nDims > 2 || t.ne[0] != cols || (rows >= 0 && t.ne[1] != rows))
            fail(format("tensor '%s' has shape [%lld, %lld], expected [%d, %d]", name.c_str(),
                        (long long)t.ne[0], (long long)t.ne[1], cols, rows));
        if (!ggmlTypeTraits(t.type).dequantizable)
            fail("tensor '" + name + "' has type " + ggmlTypeName(t.type) +
                 ", which is not supported (supported: " + supportedTypes() + ")");
        return wrapMappedBytes(f_.mapping(), t.data, t.rowCount(), (int64)t.rowBytes());
    }

    // A 1-D tensor of n elements as a float32 row (a copy; these are small).
    Mat vectorF32(const std::string& name, int n) const
    {
        const GGUFTensor& t = tensor(name);
        if (t.nDims != 1 || t.ne[0] != n)
            fail(format("tensor '%s' has %lld elements in %d dims, expected a vector of %d",
                        name.c_str(), (long long)t.ne[0], t.nDims, n));
        if (!ggmlTypeTraits(t.type).dequantizable)
            fail("tensor '" + name + "' has type " + ggmlTypeName(t.type) + ", which is not supported");
        Mat v(1, n, CV_32F);
        dequantizeRow(t.type, t.data, v.ptr<float>(), n);
        return v;
    }

    LayerParams params(const std::string& name, const std::string& type) const
    {
        LayerParams lp;
        lp.name = name;
        lp.type = type;
        return lp;
    }

    Pin add(LayerParams& lp, const std::vector<Pin>& inputs)
    {
        return addConnectedLayer(net_, lp, inputs);
    }

    //! RMSNorm of `size` features (default: n_embd), its weights times `weightScale`.
    Pin rmsNorm(const std::string& name, const std::string& tensorName, Pin x, int size = -1, float weightScale = 1.f)
    {
        LayerParams lp = params(name, "RMSNorm");
        lp.set("epsilon", eps_);
        Mat w = vectorF32(tensorName, size < 0 ? nEmbd_ : size);
        if (weightScale != 1.f)
            w *= weightScale;
        lp.blobs.push_back(w);
        return add(lp, {x});
    }

    Pin scaleBy(const std::string& name, float factor, Pin x)
    {
        LayerParams lp = params(name, "LLMElementwise");
        lp.set("operation", "mul");
        lp.blobs.push_back(Mat(1, 1, CV_32F, Scalar(factor)));
        return add(lp, {x});
    }

    // RMSNorm of each `headDim_` group of a tokens x (heads * headDim_) projection.
    Pin headNorm(const std::string& name, Pin x)
    {
        LayerParams lp = params(name, "RMSNorm");
        lp.set("epsilon", eps_);
        lp.set("group_size", headDim_);
        lp.blobs.push_back(vectorF32(name + ".weight", headDim_));
        return add(lp, {x});
    }

    // LayerNorm with bias (gpt2): <name>.weight and <name>.bias.
    Pin layerNorm(const std::string& name, Pin x)
    {
        LayerParams lp = params(name, "LLMLayerNorm");
        lp.set("epsilon", eps_);
        lp.blobs.push_back(vectorF32(name + ".weight", nEmbd_));
        lp.blobs.push_back(vectorF32(name + ".bias", nEmbd_));
        return add(lp, {x});
    }

    // gpt2's learned positions (one row per position of the training context) added to x.
    Pin positionEmbedding(Pin x)
    {
        LayerParams lp = params("position_embd", "LLMPositionEmbedding");
        lp.set("ggml_type", (int)tensor("position_embd.weight").type);
        lp.set("embedding_length", nEmbd_);
        if (nCtx_ > nCtxTrain_)
            fail(format("a context of %d tokens: gpt2's learned positions cover %d", nCtx_, nCtxTrain_));
        lp.set("max_positions", nCtxTrain_);
        lp.blobs.push_back(weight("position_embd.weight", nEmbd_, nCtxTrain_));
        Pin p = add(lp, {x});
        positionLayer_ = p.layer;
        return p;
    }

    Pin matmul(const std::string& name, const std::string& prefix, int in, int out, Pin x)
    {
        const std::string w = prefix + ".weight", b = prefix + ".bias";
        const Mat bias = f_.findTensor(b) ? vectorF32(b, out) : Mat();
        return matmulRows(name, tensor(w).type, weight(w, in, out), in, out, bias, x);
    }

    //! x W^T (+ bias) with `rows` (out of them, mapped from the file) of a weight of type `type`.
    Pin matmulRows(const std::string& name, GGMLType type, const Mat& rows, int in, int out, const Mat& bias, Pin x)
    {
        LayerParams lp = params(name, "LLMMatMul");
        lp.set("ggml_type", (int)type);
        lp.set("in_features", in);
        lp.set("out_features", out);
        lp.set("integer_dot", integerDot_);
        lp.blobs.push_back(rows);
        if (!bias.empty())
            lp.blobs.push_back(bias);
        return add(lp, {x});
    }

    Pin elementwise(const std::string& name, const char* operation, const std::vector<Pin>& inputs)
    {
        LayerParams lp = params(name, "LLMElementwise");
        lp.set("operation", operation);
        return add(lp, inputs);
    }

    Pin residual(const std::string& name, Pin a, Pin b)
    {
        return elementwise(name, "add", {a, b});
    }

    /** Block `layer`'s attention over `inputs` (q, k, v, or one packed q|k|v), with the
        architecture's rotary embedding (none for gpt2) and the layer's sliding window; it
        becomes the next KV-cache layer. */
    Pin attention(const std::string& name, int layer, const std::vector<Pin>& inputs)
    {
        LayerParams lp = params(name, "LLMAttention");
        lp.set("num_heads", nHead_);
        lp.set("num_kv_heads", nKV_);
        lp.set("head_dim", headDim_);
        lp.set("max_context", nCtx_);
        if (attentionScale_ > 0.f)
            lp.set("scale", attentionScale_);
        if (attnSoftCap_ > 0.f)
            lp.set("logit_softcap", attnSoftCap_);
        if (temperatureScale_ != 0.f)
        {
            lp.set("attn_temperature_scale", temperatureScale_);
            lp.set("attn_temperature_length", temperatureLength_);
        }
        const bool local = !slidingWindow_.empty() && slidingWindow_[layer] > 0;
        if (local)
            lp.set("sliding_window", slidingWindow_[layer]);
        if (gpt2_ || !ropeOnLayer(layer))
        {
            lp.set("rope_mode", "none");
        }
        else
        {
            lp.set("rope_dim", ropeDim_);
            lp.set("rope_base", local ? ropeBaseLocal_ : ropeBase_);
            lp.set("rope_neox", neox_);
            setRotaryScaling(lp, local ? ropeBaseLocal_ : ropeBase_, local ? ropeFreqScaleLocal_ : ropeFreqScale_);
        }
        Pin a = add(lp, inputs);
        attentionIds_.push_back(a.layer);
        return a;
    }

    //! Whether layer i rotates q and k (llama.cpp's has_rope / smollm3's n_no_rope_layer_step).
    bool ropeOnLayer(int i) const
    {
        return ropeEnabled_ && (noRopeLayerStep_ == 0 || (i + 1) % noRopeLayerStep_ != 0);
    }

    /** A rotary layer's frequency scale, magnitude (rope.scaling.attn_factor) and per-pair factors
        (readRopeFactors), for its base and frequency scale; with YaRN its angles are folded into
        the factors (divided by yarnAngleFactors, frequency scale 1) and its magnitude into
        rope_attn_factor (yarnMagnitude), as llama.cpp computes them for that layer. */
    void setRotaryScaling(LayerParams& lp, float base, float freqScale) const
    {
        Mat factors = ropeFactors_;
        lp.set("rope_attn_factor", yarnMagnitude(ropeFreqScale_, freqScale, yarn_, ropeAttnFactor_, yarnLogMultiplier_));
        if (yarn_.extFactor != 0.f)
        {
            const std::vector<float> m = yarnAngleFactors(ropeDim_, base, freqScale, yarn_);
            factors = Mat(1, (int)m.size(), CV_32F);
            for (int i = 0; i < factors.cols; i++)
                factors.at<float>(i) = (ropeFactors_.empty() ? 1.f : ropeFactors_.at<float>(i)) / m[i];
            freqScale = 1.f;
        }
        lp.set("rope_freq_scale", freqScale);
        if (!factors.empty())
            lp.blobs.push_back(factors);
    }

    /** Per-pair rotary frequency factors, read once: rope_freqs.weight (Llama 3) where present,
        else phi3's LongRoPE factors for the context in use (llama.cpp's get_rope_factors; both
        LongRoPE tensors are read, and so checked, whichever is used). Empty: none. */
    Mat readRopeFactors() const
    {
        const int pairs = ropeDim_ / 2;
        Mat chosen;
        if (arch_ == "smollm3")
            return chosen;  // llama.cpp's smollm3 graph takes no factors (a rope_freqs tensor is refused)
        if (arch_ == "phi3")
        {
            Mat longF, shortF;
            if (f_.findTensor("rope_factors_long.weight"))
                longF = vectorF32("rope_factors_long.weight", pairs);
            if (f_.findTensor("rope_factors_short.weight"))
                shortF = vectorF32("rope_factors_short.weight", pairs);
            chosen = phi3LongRope_ ? longF : shortF;
        }
        if (f_.findTensor("rope_freqs.weight"))
            chosen = vectorF32("rope_freqs.weight", pairs);
        return chosen;
    }

    /* The block of llama, qwen2/3, gemma2/3 and olmo2, what ArchInfo says of each:
         x += post_norm(o_proj(attention(rope(q_norm(q_proj(norm(x)))), rope(k_norm(..)), v_proj(..))))
         x += post_norm(down(act(gate(norm(x))) * up(norm(x))))
       where norm is absent for olmo2, post_norm only in gemma2/3 and olmo2, q_norm/k_norm per
       head (qwen3, gemma3) or over the whole projection (olmo2), act SiLU or GELU (gemma). */
    Pin block(int i, Pin x)
    {
        const std::string p = format("blk.%d.", i);
        const int qWidth = nHead_ * headDim_, kvWidth = nKV_ * headDim_;

        Pin h = info_->preNorms ? rmsNorm(p + "attn_norm", p + "attn_norm.weight", x) : x;
        Pin q = matmul(p + "attn_q", p + "attn_q", nEmbd_, qWidth, h);
        Pin k = matmul(p + "attn_k", p + "attn_k", nEmbd_, kvWidth, h);
        Pin v = matmul(p + "attn_v", p + "attn_v", nEmbd_, kvWidth, h);
        if (info_->qkNorm == QKNorm::PerHead)
        {
            q = headNorm(p + "attn_q_norm", q);
            k = headNorm(p + "attn_k_norm", k);
        }
        else if (info_->qkNorm == QKNorm::Whole)
        {
            q = rmsNorm(p + "attn_q_norm", p + "attn_q_norm.weight", q, qWidth);
            k = rmsNorm(p + "attn_k_norm", p + "attn_k_norm.weight", k, kvWidth);
        }

        Pin a = attention(p + "attn", i, {q, k, v});
        Pin o = matmul(p + "attn_output", p + "attn_output", qWidth, nEmbd_, a);
        if (info_->postNorms)
            o = rmsNorm(p + "post_attention_norm", p + "post_attention_norm.weight", o);
        if (residualScale_ != 0.f)  // granite
            o = scaleBy(p + "attn_residual_scale", residualScale_, o);
        x = residual(p + "attn_residual", x, o);

        h = info_->preNorms ? rmsNorm(p + "ffn_norm", p + "ffn_norm.weight", x) : x;
        Pin gate = matmul(p + "ffn_gate", p + "ffn_gate", nEmbd_, nFF_, h);
        Pin up = matmul(p + "ffn_up", p + "ffn_up", nEmbd_, nFF_, h);
        // GELU as llama.cpp's CPU backend computes it (ggml_geglu: half-precision table)
        Pin m = info_->gelu ? elementwise(p + "ffn_geglu", "geglu_f16", {gate, up})
                            : elementwise(p + "ffn_swiglu", "swiglu", {gate, up});
        Pin d = matmul(p + "ffn_down", p + "ffn_down", nFF_, nEmbd_, m);
        if (info_->postNorms)
            d = rmsNorm(p + "post_ffw_norm", p + "post_ffw_norm.weight", d);
        if (residualScale_ != 0.f)
            d = scaleBy(p + "ffn_residual_scale", residualScale_, d);
        return residual(p + "ffn_residual", x, d);
    }

    // phi3 (llama.cpp's src/models/phi3.cpp): q|k|v from one attn_qkv projection (rows q, then
    // k, then v; separate attn_q/k/v also accepted) into LLMAttention's packed input; NEOX rotary
    // over rope.dimension_count dimensions with the LongRoPE factors and attn_factor
    // (readPhi3HyperParameters); ffn_up holds 2 x feed_forward_length rows, gate first:
    // ffn = down(silu(x W_up[0:n_ff]^T) * (x W_up[n_ff:2 n_ff]^T)) (llama.cpp's LLM_FFN_SWIGLU on
    // the whole up projection: ggml_swiglu applies silu to the first half). The two halves are
    // two matmuls over the mapped rows, no copy.
    Pin phi3Block(int i, Pin x)
    {
        const std::string p = format("blk.%d.", i);
        const int qWidth = nHead_ * headDim_, kvWidth = nKV_ * headDim_;

        Pin h = rmsNorm(p + "attn_norm", p + "attn_norm.weight", x);
        std::vector<Pin> qkv;
        if (f_.findTensor(p + "attn_qkv.weight"))
            qkv.push_back(matmul(p + "attn_qkv", p + "attn_qkv", nEmbd_, qWidth + 2 * kvWidth, h));
        else
            qkv = {matmul(p + "attn_q", p + "attn_q", nEmbd_, qWidth, h),
                   matmul(p + "attn_k", p + "attn_k", nEmbd_, kvWidth, h),
                   matmul(p + "attn_v", p + "attn_v", nEmbd_, kvWidth, h)};

        Pin a = attention(p + "attn", i, qkv);
        Pin o = matmul(p + "attn_output", p + "attn_output", qWidth, nEmbd_, a);
        x = residual(p + "attn_residual", x, o);

        h = rmsNorm(p + "ffn_norm", p + "ffn_norm.weight", x);
        const std::string up = p + "ffn_up.weight";
        const Mat upGate = weight(up, nEmbd_, 2 * nFF_);
        const GGMLType type = tensor(up).type;
        Pin gate = matmulRows(p + "ffn_up_gate_half", type, upGate.rowRange(0, nFF_), nEmbd_, nFF_, Mat(), h);
        Pin upHalf = matmulRows(p + "ffn_up_up_half", type, upGate.rowRange(nFF_, 2 * nFF_), nEmbd_, nFF_, Mat(), h);
        Pin m = elementwise(p + "ffn_swiglu", "swiglu", {gate, upHalf});
        Pin d = matmul(p + "ffn_down", p + "ffn_down", nFF_, nEmbd_, m);
        return residual(p + "ffn_residual", x, d);
    }

    // gpt2 (llama.cpp's src/models/gpt2.cpp): every projection with its bias (required),
    //   x += attn_output(attention(attn_qkv(layer_norm(x))))   (no rotary)
    //   x += ffn_down(gelu_tanh(ffn_up(layer_norm(x))))
    Pin gpt2Block(int i, Pin x)
    {
        const std::string p = format("blk.%d.", i);
        const int kvWidth = nKV_ * headDim_;
        for (const char* b : {"attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"})
            tensor(p + b);  // present (matmul reads it)

        Pin h = layerNorm(p + "attn_norm", x);
        Pin qkv = matmul(p + "attn_qkv", p + "attn_qkv", nEmbd_, nEmbd_ + 2 * kvWidth, h);
        Pin a = attention(p + "attn", i, {qkv});
        Pin o = matmul(p + "attn_output", p + "attn_output", nEmbd_, nEmbd_, a);
        x = residual(p + "attn_residual", x, o);

        h = layerNorm(p + "ffn_norm", x);
        Pin up = matmul(p + "ffn_up", p + "ffn_up", nEmbd_, nFF_, h);
        // GELU as llama.cpp's CPU backend computes it (the exact tanh formula is 2e-4 off in p)
        Pin m = elementwise(p + "ffn_gelu", "gelu_tanh_f16", {up});
        Pin d = matmul(p + "ffn_down", p + "ffn_down", nFF_, nEmbd_, m);
        return residual(p + "ffn_residual", x, d);
    }

    const GGUFModelFile& f_;
    int positionLayer_ = -1;
    bool gpt2_ = false;
    bool allLogits_, integerDot_;
    int contextLength_;  // chosen by the caller (0: the file's)
    std::vector<int> attentionIds_;
    mutable std::set<std::string> used_;  // tensors the graph reads
    Net net_;
    std::string arch_;
    const ArchInfo* info_ = nullptr;
    bool neox_ = false;
    int nCtxTrain_ = 0;
    int nEmbd_ = 0, nLayer_ = 0, nFF_ = 0, nHead_ = 0, nKV_ = 0, nCtx_ = 0, headDim_ = 0, ropeDim_ = 0, vocab_ = 0;
    float eps_ = 1e-5f, ropeBase_ = 10000.f, ropeFreqScale_ = 1.f;
    float ropeAttnFactor_ = 1.f;  // rope.scaling.attn_factor (with YaRN's magnitude: setRotaryScaling)
    bool phi3LongRope_ = false;   // phi3: rope_factors_long (else _short)
    Mat ropeFactors_;             // per-pair frequency factors of every layer (readRopeFactors)
    std::vector<int> slidingWindow_;  // per layer, 0: global (readSlidingWindows; empty: none)
    float ropeBaseLocal_ = 10000.f, ropeFreqScaleLocal_ = 1.f;  // of the sliding-window layers
    float embeddingScale_ = 1.f;  // gemma: sqrt(n_embd)
    float attentionScale_ = 0.f;  // of the scores (0: 1/sqrt(head size))
    float attnSoftCap_ = 0.f, finalSoftCap_ = 0.f;  // gemma2 (final also gemma3): 0 = none
    YarnSettings yarn_;             // extFactor 0: no YaRN
    float yarnLogMultiplier_ = 0.f; // mistral3: rope.scaling.yarn_log_multiplier
    float residualScale_ = 0.f, logitScale_ = 0.f;  // granite: 0 = none
    bool ropeEnabled_ = true;       // granite: rope.scaling.finetuned
    int noRopeLayerStep_ = 0;       // smollm3: 4 (layers 3, 7, ... have no rotary); 0: every layer rotates
    float temperatureScale_ = 0.f;  // mistral3: attention.temperature_scale (0: none)
    int temperatureLength_ = 0;
};

} // namespace

Net buildNetFromGGUF(const GGUFModelFile& file, const LoadOptions& options)
{
    return NetBuilder(file, options).build();
}

}}} // namespace cv::dnn::llm

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

Net readNetFromGGUF(const String& path, bool allLogits, int contextLength)
{
    CV_TRACE_FUNCTION();
    llm::GGUFModelFile file(path);
    return llm::buildNetFromGGUF(file, llm::LoadOptions::fromEnvironment(allLogits, contextLength));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
