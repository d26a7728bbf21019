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

std::string supportedArchitectures()
{
    std::string s;
    for (const std::string& name : ggufArchitectureNames())
        s += (s.empty() ? "" : ", ") + name;
    return s;
}

// The keys every architecture reads, then its row's: sliding windows and its hook.
class HyperParameterReader
{
public:
    HyperParameterReader(const GGUFModelFile& file, int contextLength, GGUFHyperParameters& h)
        : f_(file), r_(file, h.arch), contextLength_(contextLength), h_(h)
    {
    }

    void read()
    {
        const GGUFArchitecture* architecture = findGGUFArchitecture(h_.arch);
        if (!architecture)
            fail("architecture '" + h_.arch + "' is not supported (supported: " + supportedArchitectures() + ")");
        h_.architecture = architecture;

        h_.nEmbd = hparam("embedding_length");
        h_.nLayer = hparam("block_count");
        // (a row with per-layer shapes reads feed_forward_length and head_count_kv in its hook)
        h_.nFF = architecture->perLayerShapes ? 0 : hparam("feed_forward_length");
        readExperts(architecture->experts);
        h_.nHead = hparam("attention.head_count");
        if (architecture->perLayerShapes)
            h_.nKV = h_.nHead;
        else
            readKVHeads(*architecture);
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
        if (architecture->slidingWindow.period > 0)
            readSlidingWindows(architecture->slidingWindow);
        if (architecture->readHyperParameters)
            architecture->readHyperParameters(r_, h_);
        if (architecture->ropeDimIsHeadDim && h_.ropeDim != h_.headDim)
            fail(format("rope.dimension_count %d != head size %d (llama.cpp's %s graph requires them equal)",
                        h_.ropeDim, h_.headDim, h_.arch.c_str()));
    }

    /* attention.head_count_kv: one value, or (hybrid architectures) one per layer, 0 on the
       recurrent layers (llama.cpp's n_head_kv(il) and is_recr); the attention layers must
       agree, as the Net's one KV cache holds them all. */
    void readKVHeads(const GGUFArchitecture& architecture)
    {
        const std::string key = h_.arch + ".attention.head_count_kv";
        const GGUFValue* v = f_.find(key);
        if (!v || v->type != GGUF_ARRAY)
        {
            h_.nKV = hparam("attention.head_count_kv", h_.nHead);
            return;
        }
        if (!architecture.recurrentLayers)
            fail("metadata '" + key + "' is an array (per-layer KV heads), which architecture '" + h_.arch +
                 "' does not have");
        const std::vector<double> heads = f_.getNumberArray(key);
        if ((int)heads.size() != h_.nLayer)
            fail(format("metadata '%s' has %zu values for %d layers", key.c_str(), heads.size(), h_.nLayer));
        h_.nKV = 0;
        h_.recurrent.assign(h_.nLayer, false);
        for (int i = 0; i < h_.nLayer; i++)
        {
            const double n = heads[i];
            if (!(n >= 0 && n <= 4096 && n == std::floor(n)))
                fail(format("metadata '%s'[%d] = %g is out of range", key.c_str(), i, n));
            if (n == 0)
                h_.recurrent[i] = true;
            else if (h_.nKV == 0)
                h_.nKV = (int)n;
            else if ((int)n != h_.nKV)
                fail(format("metadata '%s' gives layers %d and %d KV heads: attention layers with different KV "
                            "head counts are not supported", key.c_str(), h_.nKV, (int)n));
        }
        if (h_.nKV == 0)
            fail("metadata '" + key + "' is 0 on every layer: a model without attention layers is not supported");
    }

    /* Mixture-of-experts sizes as llama.cpp reads them (llama-model.cpp): expert_count (at most
       LLAMA_MAX_EXPERTS, 1024), expert_used_count (1 .. expert_count), the experts' size
       feed_forward_length (llama) or expert_feed_forward_length (default feed_forward_length /
       expert_used_count: qwen3moe's n_ff_exp). Keys of other MoE families (shared experts,
       expert groups, gating choices) are not read for these architectures, as there. */
    void readExperts(Experts experts)
    {
        const std::string countKey = h_.arch + ".expert_count";
        const int64 count = f_.hasMetadata(countKey) ? f_.getInt(countKey) : 0;
        if (count < 0 || count > 1024)
            fail(format("metadata '%s' = %lld is out of range (0 .. 1024)", countKey.c_str(), (long long)count));
        if (count == 0)
        {
            if (experts == Experts::Required)
                fail("metadata key '" + countKey + "' is missing or 0 (architecture '" + h_.arch + "' has experts)");
            return;
        }
        if (experts == Experts::None)
            fail(format("mixture-of-experts files of architecture '%s' are not supported (%s = %lld)", h_.arch.c_str(),
                        countKey.c_str(), (long long)count));
        h_.nExpert = (int)count;
        h_.nExpertUsed = hparam("expert_used_count");
        if (h_.nExpertUsed > h_.nExpert)
            fail(format("expert_used_count %d > expert_count %d", h_.nExpertUsed, h_.nExpert));
        h_.nFFExpert = experts == Experts::Optional ? h_.nFF : hparam("expert_feed_forward_length", h_.nFF / h_.nExpertUsed);
        if (h_.nFFExpert <= 0)
            fail("the experts' feed-forward size is 0");
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
        h_.ropeFreqScale = factor == 0.f ? 1.f : 1.f / factor;
        h_.yarn.extFactor = 1.f;
        h_.yarn.originalContext = hparam("rope.scaling.original_context_length", h_.nCtxTrain);
    }

    /* Sliding-window attention as llama.cpp reads it (src/models/gemma2.cpp, gemma3.cpp,
       olmo2.cpp): attention.sliding_window positions (when absent the row's default window:
       gemma2 4096, others none), on the layers of attention.sliding_window_pattern (default:
       the row's period; of every period layers the last is global, 0: all local), with
       rope.freq_base_swa as the rotary base of the local layers (default: the row's, gemma3
       10000, else the global base) and their own frequency scale (gemma2 the global one;
       gemma3 and olmo2 1: linear scaling or YaRN of the global layers does not apply). */
    void readSlidingWindows(const SlidingWindowDefaults& defaults)
    {
        const std::string windowKey = h_.arch + ".attention.sliding_window";
        if (!f_.hasMetadata(windowKey) && defaults.window == 0)
            return;
        const int64 window = f_.hasMetadata(windowKey) ? f_.getInt(windowKey) : defaults.window;
        if (window == 0 && defaults.window == 0)
            return;
        if (window <= 0 || window > INT_MAX)
            fail(format("metadata '%s' = %lld is out of range", windowKey.c_str(), (long long)window));
        int period = defaults.period;
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
        h_.ropeBaseLocal = hparamFloat("rope.freq_base_swa", defaults.localRopeBase > 0.f ? defaults.localRopeBase : h_.ropeBase);
        if (!(h_.ropeBaseLocal > 1.f))
            fail(format("rope.freq_base_swa %g is out of range", h_.ropeBaseLocal));
        h_.ropeFreqScaleLocal = defaults.localFreqScaleIsGlobal ? h_.ropeFreqScale : 1.f;
    }

private:
    int hparam(const std::string& key, int def = -1) const { return r_.hparam(key, def); }
    float hparamFloat(const std::string& key, float def) const { return r_.hparamFloat(key, def); }
    [[noreturn]] void fail(const std::string& msg) const { r_.fail(msg); }

    const GGUFModelFile& f_;
    const GGUFMetadataReader r_;
    int contextLength_;
    GGUFHyperParameters& h_;
};

} // namespace

int GGUFMetadataReader::hparam(const std::string& key, int def) const
{
    const std::string full = this->key(key);
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

float GGUFMetadataReader::hparamFloat(const std::string& key, float def) const
{
    const std::string full = this->key(key);
    return f_.hasMetadata(full) ? (float)f_.getNumber(full) : def;
}

float GGUFMetadataReader::finiteHparam(const std::string& key) const
{
    const float v = hparamFloat(key, 0.f);
    if (!std::isfinite(v))
        fail(format("metadata '%s' = %g is out of range", this->key(key).c_str(), v));
    return v;
}

void GGUFMetadataReader::fail(const std::string& msg) const
{
    CV_Error(Error::StsParseError, format("GGUF '%s': %s", f_.path().c_str(), msg.c_str()));
}

bool GGUFHyperParameters::ropeOnLayer(int i) const
{
    const int step = architecture->noRopeLayerStep;
    return architecture->rope != RopeType::None && ropeEnabled && (step == 0 || (i + 1) % step != 0);
}

GGUFHyperParameters readGGUFHyperParameters(const GGUFModelFile& file, int contextLength)
{
    GGUFHyperParameters h;
    h.arch = file.hasMetadata("general.architecture") ? file.getString("general.architecture") : std::string();
    HyperParameterReader(file, contextLength, h).read();
    return h;
}

}}} // namespace cv::dnn::llm
