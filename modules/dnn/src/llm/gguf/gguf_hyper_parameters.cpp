// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "gguf_hyper_parameters.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

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

class HyperParameterReader
{
public:
    HyperParameterReader(const GGUFModelFile& file, int contextLength, GGUFHyperParameters& h)
        : f_(file), contextLength_(contextLength), h_(h)
    {
    }

    // A positive integer hyper-parameter `<arch>.<key>`.
    int hparam(const std::string& key, int def = -1) const
    {
        const std::string full = h_.arch + "." + key;
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
        const std::string full = h_.arch + "." + key;
        return f_.hasMetadata(full) ? (float)f_.getNumber(full) : def;
    }

    void read()
    {
        h_.arch = f_.hasMetadata("general.architecture") ? f_.getString("general.architecture") : std::string();
        const ArchInfo* info = nullptr;
        for (const ArchInfo& a : kArchitectures)
            if (h_.arch == a.name)
                info = &a;
        if (!info)
            fail("architecture '" + h_.arch + "' is not supported (supported: " + supportedArchitectures() + ")");
        h_.info = info;
        h_.info = info;
        if (f_.hasMetadata(h_.arch + ".expert_count") && f_.getInt(h_.arch + ".expert_count") > 0)
            fail("mixture-of-experts models are not supported");

        h_.nEmbd = hparam("embedding_length");
        h_.nLayer = hparam("block_count");
        h_.nFF = hparam("feed_forward_length");
        h_.nHead = hparam("attention.head_count");
        h_.nKV = hparam("attention.head_count_kv", h_.nHead);
        // The context in use: the file's training context unless the caller chose another
        // (llama.cpp's n_ctx; more than the training context is allowed, as there).
        h_.nCtxTrain = hparam("context_length");
        h_.nCtx = contextLength_ > 0 ? contextLength_ : h_.nCtxTrain;
        if (h_.nHead % h_.nKV != 0)
            fail(format("head_count %d is not a multiple of head_count_kv %d", h_.nHead, h_.nKV));
        h_.headDim = hparam("attention.key_length", h_.nEmbd / h_.nHead);
        if (hparam("attention.value_length", h_.headDim) != h_.headDim)
            fail("attention.value_length != attention.key_length is not supported");
        h_.ropeDim = hparam("rope.dimension_count", h_.headDim);
        if (h_.ropeDim > h_.headDim || h_.ropeDim % 2 != 0)
            fail(format("rope.dimension_count %d must be even and at most the head size %d", h_.ropeDim, h_.headDim));
        if (h_.nLayer > 4096)
            fail(format("block_count %d is implausible", h_.nLayer));
        h_.eps = hparamFloat("attention.layer_norm_rms_epsilon", 1e-5f);
        if (!(h_.eps >= 0.f && h_.eps < 1.f))
            fail(format("layer_norm_rms_epsilon %g is out of range", h_.eps));
        h_.ropeBase = hparamFloat("rope.freq_base", 10000.f);
        if (!(h_.ropeBase > 1.f))
            fail(format("rope.freq_base %g is out of range", h_.ropeBase));

        // Linear scaling divides positions by the factor; Llama-3 scaling comes as per-pair
        // frequency factors in rope_freqs.weight. Other schemes would give wrong results.
        const std::string scalingKey = h_.arch + ".rope.scaling.type";
        std::string scaling = f_.hasMetadata(scalingKey) ? f_.getString(scalingKey) : std::string("none");
        float factor = hparamFloat("rope.scaling.factor", hparamFloat("rope.scale_linear", 1.f));
        if (scaling == "none" && factor != 1.f && factor != 0.f && !f_.hasMetadata(scalingKey))
            scaling = "linear";
        if (scaling == "linear")
        {
            if (!(factor > 0.f))
                fail(format("rope scaling factor %g is out of range", factor));
            h_.ropeFreqScale = 1.f / factor;
        }
        else if (scaling == "yarn")
            readYarnHyperParameters(factor);
        else if (scaling != "none" && scaling != "llama3")
            fail("rope scaling type '" + scaling + "' is not supported (none, linear, llama3, yarn are)");
        // llama.cpp multiplies cos and sin by rope.scaling.attn_factor in every architecture
        // (llama_context's yarn_attn_factor; with YaRN's magnitude: setRotaryScaling).
        h_.ropeAttnFactor = hparamFloat("rope.scaling.attn_factor", 1.f);
        if (!(h_.ropeAttnFactor > 0.f && h_.ropeAttnFactor < 1e3f))
            fail(format("metadata '%s.rope.scaling.attn_factor' = %g is out of range", h_.arch.c_str(), h_.ropeAttnFactor));

        // Keys llama.cpp reads for every architecture that would change the result and that
        // are not implemented here.
        const std::string causalKey = h_.arch + ".attention.causal";
        if (f_.hasMetadata(causalKey) && !f_.getBool(causalKey))
            fail("metadata key '" + causalKey + "' = false (bidirectional attention) is not supported");
        if (h_.gpt2())
            readGPT2HyperParameters();
        if (h_.arch == "phi3")
            readPhi3HyperParameters();
        if (info->swaPeriod > 0)
            readSlidingWindows(info->swaPeriod);
        if (h_.arch == "gemma2" || h_.arch == "gemma3")
            readGemmaHyperParameters();
        if (h_.arch == "granite")
            readGraniteHyperParameters();
        if (h_.arch == "smollm3")
            h_.noRopeLayerStep = 4;  // llama.cpp's smollm3.cpp sets n_no_rope_layer_step = 4 (no key)
        if (h_.arch == "mistral3")
            readMistral3HyperParameters();
        if ((h_.arch == "granite" || h_.arch == "smollm3" || h_.arch == "mistral3") && h_.ropeDim != h_.headDim)
            fail(format("rope.dimension_count %d != head size %d (llama.cpp's %s graph requires them equal)",
                        h_.ropeDim, h_.headDim, h_.arch.c_str()));
    }

    // YaRN as llama.cpp runs it (llama-context.cpp, ggml's rope_yarn): ext_factor 1, frequency
    // scale 1/factor (factor 0 or absent: 1), the ramp between the pairs that turn beta_fast and
    // beta_slow times over original_context_length (default: the training context_length),
    // beta_fast 32 and beta_slow 1 unless the architecture reads its own (mistral3). llama.cpp
    // reads the rope.scaling.h_.yarn* keys only for some architectures (of ours, mistral3's
    // beta_fast, beta_slow, yarn_log_multiplier); elsewhere they are ignored here too, as there.
    void readYarnHyperParameters(float factor)
    {
        if (!(factor >= 0.f && factor < 1e6f))
            fail(format("rope scaling factor %g is out of range", factor));
        h_.ropeFreqScale = factor == 0.f ? 1.f : 1.f / factor;
        h_.yarn.extFactor = 1.f;
        h_.yarn.originalContext = hparam("rope.scaling.original_context_length", h_.nCtxTrain);
    }

    // granite (llama.cpp's src/models/granite.cpp, llama-graph.cpp's build_inp_embd): logit_scale
    // required (logits are divided by it); embedding_scale, residual_scale (both branches'
    // outputs before their residual add) and attention.scale (instead of 1/sqrt(head size))
    // optional, 0 or absent meaning "not applied"; rope.scaling.finetuned (default true) turns
    // the rotary of every layer on or off. deepstack_mapping (Granite Vision) is refused.
    void readGraniteHyperParameters()
    {
        const std::string logitKey = h_.arch + ".logit_scale";
        if (!f_.hasMetadata(logitKey))
            fail("metadata key '" + logitKey + "' is missing");
        h_.logitScale = (float)f_.getNumber(logitKey);
        if (!(std::isfinite(h_.logitScale) && h_.logitScale != 0.f))
            fail(format("metadata '%s' = %g is out of range", logitKey.c_str(), h_.logitScale));
        const float embeddingScale = finiteHparam("embedding_scale");
        if (embeddingScale != 0.f)
            h_.embeddingScale = embeddingScale;
        h_.residualScale = finiteHparam("residual_scale");
        h_.attentionScale = finiteHparam("attention.scale");
        if (h_.attentionScale < 0.f)
            fail(format("metadata '%s.attention.scale' = %g is out of range", h_.arch.c_str(), h_.attentionScale));
        const std::string finetunedKey = h_.arch + ".rope.scaling.finetuned";
        h_.ropeEnabled = !f_.hasMetadata(finetunedKey) || f_.getBool(finetunedKey);
        if (f_.hasMetadata(h_.arch + ".deepstack_mapping"))
            fail("metadata key '" + h_.arch + ".deepstack_mapping' (Granite Vision's deepstack inputs) is not supported");
    }

    // mistral3 (llama.cpp's src/models/mistral3.cpp): yarn_beta_fast / yarn_beta_slow /
    // yarn_log_multiplier for YaRN; attention.temperature_scale: each query times
    // 1 + scale * ln(1 + floor(pos / original_context_length)) after rotary (Llama 4 scaling).
    void readMistral3HyperParameters()
    {
        h_.yarn.betaFast = hparamFloat("rope.scaling.yarn_beta_fast", h_.yarn.betaFast);
        h_.yarn.betaSlow = hparamFloat("rope.scaling.yarn_beta_slow", h_.yarn.betaSlow);
        if (!(h_.yarn.betaFast > 0.f && h_.yarn.betaFast < 1e6f && h_.yarn.betaSlow > 0.f && h_.yarn.betaSlow < 1e6f))
            fail(format("rope.scaling.yarn_beta_fast %g / yarn_beta_slow %g are out of range", h_.yarn.betaFast, h_.yarn.betaSlow));
        h_.yarnLogMultiplier = finiteHparam("rope.scaling.yarn_log_multiplier");
        h_.temperatureScale = finiteHparam("attention.temperature_scale");
        if (h_.temperatureScale != 0.f)
            h_.temperatureLength = hparam("rope.scaling.original_context_length", h_.nCtxTrain);
    }

    // A float `<arch>.<key>` that must be finite; 0 when absent.
    float finiteHparam(const std::string& key) const
    {
        const float v = hparamFloat(key, 0.f);
        if (!std::isfinite(v))
            fail(format("metadata '%s.%s' = %g is out of range", h_.arch.c_str(), key.c_str(), v));
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
        const std::string windowKey = h_.arch + ".attention.sliding_window";
        const bool gemma2 = h_.arch == "gemma2";
        if (!f_.hasMetadata(windowKey) && !gemma2)
            return;
        const int64 window = f_.hasMetadata(windowKey) ? f_.getInt(windowKey) : 4096;
        if (window == 0 && !gemma2)
            return;
        if (window <= 0 || window > INT_MAX)
            fail(format("metadata '%s' = %lld is out of range", windowKey.c_str(), (long long)window));
        int period = defaultPeriod;
        const std::string patternKey = h_.arch + ".attention.sliding_window_pattern";
        if (f_.hasMetadata(patternKey))
        {
            if (f_.value(patternKey).type == GGUF_ARRAY)
                fail("metadata key '" + patternKey + "' as a per-layer array is not supported (an integer period is)");
            const int64 v = f_.getInt(patternKey);
            if (v < 0 || v > h_.nLayer)
                fail(format("metadata '%s' = %lld is out of range", patternKey.c_str(), (long long)v));
            period = (int)v;
        }
        h_.slidingWindow.assign(h_.nLayer, 0);
        for (int i = 0; i < h_.nLayer; i++)
            if (period == 0 || i % period < period - 1)
                h_.slidingWindow[i] = (int)window;
        h_.ropeBaseLocal = hparamFloat("rope.freq_base_swa", h_.arch == "gemma3" ? 10000.f : h_.ropeBase);
        if (!(h_.ropeBaseLocal > 1.f))
            fail(format("rope.freq_base_swa %g is out of range", h_.ropeBaseLocal));
        h_.ropeFreqScaleLocal = gemma2 ? h_.ropeFreqScale : 1.f;
    }

    /* gemma2 / gemma3 (llama.cpp's src/models/gemma2.cpp, gemma3.cpp): token embeddings times
       sqrt(n_embd); queries scaled by 1/sqrt(head size), or 1/sqrt(n_embd / n_head) for the
       27B models (the block counts 46 and 62, as llama.cpp tells them); gemma2 soft-caps the
       attention scores (attn_logit_softcapping, default 50) and the logits
       (final_logit_softcapping, default 30); gemma3 only the logits, when the file says so. */
    void readGemmaHyperParameters()
    {
        const bool gemma2 = h_.arch == "gemma2";
        h_.embeddingScale = std::sqrt((float)h_.nEmbd);
        const bool is27B = h_.nLayer == (gemma2 ? 46 : 62);
        h_.attentionScale = 1.f / std::sqrt(is27B ? (float)(h_.nEmbd / h_.nHead) : (float)h_.headDim);
        if (gemma2)
            h_.attnSoftCap = hparamFloat("attn_logit_softcapping", 50.f);
        else if (f_.hasMetadata(h_.arch + ".attn_logit_softcapping"))
            fail("metadata key '" + h_.arch + ".attn_logit_softcapping' is not supported for gemma3 (llama.cpp does not apply it)");
        h_.finalSoftCap = hparamFloat("final_logit_softcapping", gemma2 ? 30.f : 0.f);
        if (!(h_.attnSoftCap >= 0.f && h_.attnSoftCap < 1e6f) || !(h_.finalSoftCap >= 0.f && h_.finalSoftCap < 1e6f))
            fail(format("soft-capping values %g / %g are out of range", h_.attnSoftCap, h_.finalSoftCap));
    }

    // gpt2 as llama.cpp's src/models/gpt2.cpp builds it: LayerNorm epsilon from
    // attention.layer_norm_epsilon (required there), q width n_embd, no rotary.
    void readGPT2HyperParameters()
    {
        const std::string epsKey = h_.arch + ".attention.layer_norm_epsilon";
        if (!f_.hasMetadata(epsKey))
            fail("metadata key '" + epsKey + "' is missing");
        h_.eps = (float)f_.getNumber(epsKey);
        if (!(h_.eps >= 0.f && h_.eps < 1.f))
            fail(format("layer_norm_epsilon %g is out of range", h_.eps));
        if (h_.nHead * h_.headDim != h_.nEmbd)
            fail(format("head_count %d x head size %d != embedding_length %d (gpt2's Q is n_embd wide)",
                        h_.nHead, h_.headDim, h_.nEmbd));
        // Keys that change other architectures' results and that this graph does not apply.
        for (const char* key : {"rope.scaling.type", "rope.scaling.factor", "attention.scale", "logit_scale",
                                "embedding_scale", "residual_scale", "attention.clamp_kqv", "rope.scaling.attn_factor",
                                "attn_logit_softcapping", "final_logit_softcapping", "attention.sliding_window"})
            if (f_.hasMetadata(h_.arch + "." + key))
                fail("metadata key '" + h_.arch + "." + key + "' is not supported for gpt2");
    }

    // phi3 as llama.cpp reads it (src/models/phi3.cpp, llama-context.cpp, llama-model.cpp):
    // - rope.scaling.attn_factor multiplies cos and sin (ggml_rope_ext's attn_factor; llama.cpp
    //   applies it whichever factors are chosen);
    // - LongRoPE: rope_factors_long.weight when the context in use exceeds
    //   rope.scaling.original_context_length (default: context_length), else
    //   rope_factors_short.weight (get_rope_factors: n_ctx_seq > n_ctx_orig_yarn), the context in
    //   use being the caller's choice (LoadOptions::contextLength) or the training context.
    // - attention.sliding_window: read and ignored, as llama.cpp does for phi3 ("Phi SWA is
    //   currently disabled", llama.cpp PR 13676): every layer attends to the whole context.
    void readPhi3HyperParameters()
    {
        const int nCtxOrig = hparam("rope.scaling.original_context_length", h_.nCtxTrain);
        h_.phi3LongRope = h_.nCtx > nCtxOrig;
    }

private:
    [[noreturn]] void fail(const std::string& msg) const
    {
        CV_Error(Error::StsParseError, format("GGUF '%s': %s", f_.path().c_str(), msg.c_str()));
    }

    const GGUFModelFile& f_;
    int contextLength_;
    GGUFHyperParameters& h_;
};

} // namespace

// Whether layer i rotates q and k (llama.cpp's has_rope / smollm3's n_no_rope_layer_step).
bool GGUFHyperParameters::ropeOnLayer(int i) const
{
    return ropeEnabled && (noRopeLayerStep == 0 || (i + 1) % noRopeLayerStep != 0);
}

GGUFHyperParameters readGGUFHyperParameters(const GGUFModelFile& file, int contextLength)
{
    GGUFHyperParameters h;
    HyperParameterReader(file, contextLength, h).read();
    return h;
}

}}} // namespace cv::dnn::llm
