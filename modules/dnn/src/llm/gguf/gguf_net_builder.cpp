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
// embedding, residual, attention and logit scales, smollm3's layers without rotary, mistral3's
// attention temperature. What the metadata says is read in gguf_hyper_parameters.cpp.
// YaRN rope scaling (any rotary architecture) goes into each layer's per-pair frequency factors
// and rotary magnitude (setRotaryScaling).

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
#include "gguf_net_builder.hpp"
#include "gguf_hyper_parameters.hpp"
#include "../net/net_assembly.hpp"
#include "../net/llm_net_state.hpp"
#include "../attention/rotary_embedding.hpp"

#include <cmath>
#include <set>


namespace cv {
namespace dnn {
namespace llm {

namespace {

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
          hp_(readGGUFHyperParameters(file, options.contextLength))
    {
    }

    Net build()
    {
        net_.setInputsNames({"input_ids"});
        const Mat embd = weight("token_embd.weight", hp_.nEmbd, -1);
        vocab_ = embd.rows;

        LayerParams lp = params("token_embd", "LLMTokenEmbedding");
        lp.set("ggml_type", (int)tensor("token_embd.weight").type);
        lp.set("embedding_length", hp_.nEmbd);
        lp.set("vocab_size", vocab_);
        lp.blobs.push_back(embd);
        // gemma3 scales token rows only: embeddings fed in place of tokens (images) are not
        // (llama.cpp's gemma3 graph: ubatch.token ? sqrtf(n_embd) : 1).
        const bool tokenRowScale = hp_.arch == "gemma3" && hp_.embeddingScale != 1.f;
        if (tokenRowScale)
            lp.set("token_scale", hp_.embeddingScale);
        Pin x = add(lp, {Pin{0, 0}});
        if (hp_.gpt2())
            x = positionEmbedding(x);
        if (hp_.embeddingScale != 1.f && !tokenRowScale)
            x = scaleBy("token_embd_scale", hp_.embeddingScale, x);

        if (!hp_.gpt2())
            ropeFactors_ = readRopeFactors();
        for (int i = 0; i < hp_.nLayer; i++)
            x = hp_.gpt2() ? gpt2Block(i, x) : hp_.arch == "phi3" ? phi3Block(i, x) : block(i, x);

        lp = params("logit_rows", "LLMLogitRows");
        lp.set("all_logits", allLogits_);
        const int logitRows = add(lp, {x}).layer;
        x = Pin{logitRows, 0};
        // (granite's logits / logit_scale: folded into the final norm's weights; the output
        // projection is linear, and on 8-bit activations their rounding scales with them)
        x = hp_.gpt2() ? layerNorm("output_norm", x)
                  : rmsNorm("output_norm", "output_norm.weight", x, -1, hp_.logitScale != 0.f ? 1.f / hp_.logitScale : 1.f);
        // (gemma2's output always shares token_embd: an output.weight is refused as unused)
        const bool tied = !f_.findTensor("output.weight") || hp_.arch == "gemma2";
        lp = params("output", "LLMMatMul");
        const std::string outName = tied ? "token_embd.weight" : "output.weight";
        lp.set("ggml_type", (int)tensor(outName).type);
        lp.set("in_features", hp_.nEmbd);
        lp.set("out_features", vocab_);
        lp.set("integer_dot", integerDot_);
        lp.blobs.push_back(tied ? embd : weight(outName, hp_.nEmbd, vocab_));
        x = add(lp, {x});
        if (hp_.finalSoftCap > 0.f)
        {
            lp = params("output_softcap", "LLMElementwise");
            lp.set("operation", "softcap");
            lp.set("cap", hp_.finalSoftCap);
            add(lp, {x});
        }

        // Like llama.cpp, refuse tensors the graph does not use: they belong to a variant of the
        // architecture (Q/K norms in a llama file, a fused attn_qkv, ...) that would
        // otherwise be computed without them.
        for (const GGUFTensor& t : f_.tensors())
            if (!used_.count(t.name))
                fail("tensor '" + t.name + "' is not used by architecture '" + hp_.arch + "' as implemented here");

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
        lp.set("epsilon", hp_.eps);
        Mat w = vectorF32(tensorName, size < 0 ? hp_.nEmbd : size);
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

    // RMSNorm of each `hp_.headDim` group of a tokens x (heads * hp_.headDim) projection.
    Pin headNorm(const std::string& name, Pin x)
    {
        LayerParams lp = params(name, "RMSNorm");
        lp.set("epsilon", hp_.eps);
        lp.set("group_size", hp_.headDim);
        lp.blobs.push_back(vectorF32(name + ".weight", hp_.headDim));
        return add(lp, {x});
    }

    // LayerNorm with bias (gpt2): <name>.weight and <name>.bias.
    Pin layerNorm(const std::string& name, Pin x)
    {
        LayerParams lp = params(name, "LLMLayerNorm");
        lp.set("epsilon", hp_.eps);
        lp.blobs.push_back(vectorF32(name + ".weight", hp_.nEmbd));
        lp.blobs.push_back(vectorF32(name + ".bias", hp_.nEmbd));
        return add(lp, {x});
    }

    // gpt2's learned positions (one row per position of the training context) added to x.
    Pin positionEmbedding(Pin x)
    {
        LayerParams lp = params("position_embd", "LLMPositionEmbedding");
        lp.set("ggml_type", (int)tensor("position_embd.weight").type);
        lp.set("embedding_length", hp_.nEmbd);
        if (hp_.nCtx > hp_.nCtxTrain)
            fail(format("a context of %d tokens: gpt2's learned positions cover %d", hp_.nCtx, hp_.nCtxTrain));
        lp.set("max_positions", hp_.nCtxTrain);
        lp.blobs.push_back(weight("position_embd.weight", hp_.nEmbd, hp_.nCtxTrain));
        Pin p = add(lp, {x});
        positionLayer_ = p.layer;
        return p;
    }

    Pin matmul(const std::string& name, const std::string& prefix, int in, int out, Pin x)
    {
        return matmuls(name, {prefix}, {out}, in, x)[0];
    }

    //! The projections of x onto several weights (q, k, v; gate, up) as one LLMMatMul layer,
    //! which computes them in one parallel section: one output pin per weight.
    std::vector<Pin> projections(const std::string& name, const std::vector<LLMMatMulWeight>& weights, int in, Pin x)
    {
        LayerParams lp = params(name, "LLMMatMul");
        setLLMMatMulWeights(lp, weights);
        lp.set("in_features", in);
        lp.set("integer_dot", integerDot_);
        const Pin layer = add(lp, {x});
        std::vector<Pin> pins;
        for (size_t i = 0; i < weights.size(); i++)
            pins.push_back(Pin{layer.layer, (int)i});
        return pins;
    }

    //! The projections of x onto the weights named by `prefixes` (prefix.weight and an optional
    //! prefix.bias each, `outs` rows) as one layer named `name`.
    std::vector<Pin> matmuls(const std::string& name, const std::vector<std::string>& prefixes,
                             const std::vector<int>& outs, int in, Pin x)
    {
        std::vector<LLMMatMulWeight> weights;
        for (size_t i = 0; i < prefixes.size(); i++)
        {
            const std::string w = prefixes[i] + ".weight", b = prefixes[i] + ".bias";
            weights.push_back(LLMMatMulWeight{(int)tensor(w).type, weight(w, in, outs[i]),
                                         f_.findTensor(b) ? vectorF32(b, outs[i]) : Mat()});
        }
        return projections(name, weights, in, x);
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
        lp.set("num_heads", hp_.nHead);
        lp.set("num_kv_heads", hp_.nKV);
        lp.set("head_dim", hp_.headDim);
        lp.set("max_context", hp_.nCtx);
        if (hp_.attentionScale > 0.f)
            lp.set("scale", hp_.attentionScale);
        if (hp_.attnSoftCap > 0.f)
            lp.set("logit_softcap", hp_.attnSoftCap);
        if (hp_.temperatureScale != 0.f)
        {
            lp.set("attn_temperature_scale", hp_.temperatureScale);
            lp.set("attn_temperature_length", hp_.temperatureLength);
        }
        const bool local = hp_.windowOf(layer) > 0;
        if (local)
            lp.set("sliding_window", hp_.windowOf(layer));
        if (hp_.gpt2() || !hp_.ropeOnLayer(layer))
        {
            lp.set("rope_mode", "none");
        }
        else
        {
            lp.set("rope_dim", hp_.ropeDim);
            lp.set("rope_base", local ? hp_.ropeBaseLocal : hp_.ropeBase);
            lp.set("rope_neox", hp_.info->neoxRope);
            setRotaryScaling(lp, local ? hp_.ropeBaseLocal : hp_.ropeBase, local ? hp_.ropeFreqScaleLocal : hp_.ropeFreqScale);
        }
        Pin a = add(lp, inputs);
        attentionIds_.push_back(a.layer);
        return a;
    }

    /** A rotary layer's frequency scale, magnitude (rope.scaling.attn_factor) and per-pair factors
        (readRopeFactors), for its base and frequency scale; with YaRN its angles are folded into
        the factors (divided by yarnAngleFactors, frequency scale 1) and its magnitude into
        rope_attn_factor (yarnMagnitude), as llama.cpp computes them for that layer. */
    void setRotaryScaling(LayerParams& lp, float base, float freqScale) const
    {
        Mat factors = ropeFactors_;
        lp.set("rope_attn_factor", yarnMagnitude(hp_.ropeFreqScale, freqScale, hp_.yarn, hp_.ropeAttnFactor, hp_.yarnLogMultiplier));
        if (hp_.yarn.extFactor != 0.f)
        {
            const std::vector<float> m = yarnAngleFactors(hp_.ropeDim, base, freqScale, hp_.yarn);
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
        const int pairs = hp_.ropeDim / 2;
        Mat chosen;
        if (hp_.arch == "smollm3")
            return chosen;  // llama.cpp's smollm3 graph takes no factors (a rope_freqs tensor is refused)
        if (hp_.arch == "phi3")
        {
            Mat longF, shortF;
            if (f_.findTensor("rope_factors_long.weight"))
                longF = vectorF32("rope_factors_long.weight", pairs);
            if (f_.findTensor("rope_factors_short.weight"))
                shortF = vectorF32("rope_factors_short.weight", pairs);
            chosen = hp_.phi3LongRope ? longF : shortF;
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
        const int qWidth = hp_.nHead * hp_.headDim, kvWidth = hp_.nKV * hp_.headDim;

        Pin h = hp_.info->preNorms ? rmsNorm(p + "attn_norm", p + "attn_norm.weight", x) : x;
        const std::vector<Pin> qkv = matmuls(p + "attn_qkv", {p + "attn_q", p + "attn_k", p + "attn_v"},
                                             {qWidth, kvWidth, kvWidth}, hp_.nEmbd, h);
        Pin q = qkv[0], k = qkv[1], v = qkv[2];
        if (hp_.info->qkNorm == QKNorm::PerHead)
        {
            q = headNorm(p + "attn_q_norm", q);
            k = headNorm(p + "attn_k_norm", k);
        }
        else if (hp_.info->qkNorm == QKNorm::Whole)
        {
            q = rmsNorm(p + "attn_q_norm", p + "attn_q_norm.weight", q, qWidth);
            k = rmsNorm(p + "attn_k_norm", p + "attn_k_norm.weight", k, kvWidth);
        }

        Pin a = attention(p + "attn", i, {q, k, v});
        Pin o = matmul(p + "attn_output", p + "attn_output", qWidth, hp_.nEmbd, a);
        if (hp_.info->postNorms)
            o = rmsNorm(p + "post_attention_norm", p + "post_attention_norm.weight", o);
        if (hp_.residualScale != 0.f)  // granite
            o = scaleBy(p + "attn_residual_scale", hp_.residualScale, o);
        x = residual(p + "attn_residual", x, o);

        h = hp_.info->preNorms ? rmsNorm(p + "ffn_norm", p + "ffn_norm.weight", x) : x;
        const std::vector<Pin> gateUp = matmuls(p + "ffn_gate_up", {p + "ffn_gate", p + "ffn_up"}, {hp_.nFF, hp_.nFF},
                                                hp_.nEmbd, h);
        Pin gate = gateUp[0], up = gateUp[1];
        // GELU as llama.cpp's CPU backend computes it (ggml_geglu: half-precision table)
        Pin m = hp_.info->gelu ? elementwise(p + "ffn_geglu", "geglu_f16", {gate, up})
                            : elementwise(p + "ffn_swiglu", "swiglu", {gate, up});
        Pin d = matmul(p + "ffn_down", p + "ffn_down", hp_.nFF, hp_.nEmbd, m);
        if (hp_.info->postNorms)
            d = rmsNorm(p + "post_ffw_norm", p + "post_ffw_norm.weight", d);
        if (hp_.residualScale != 0.f)
            d = scaleBy(p + "ffn_residual_scale", hp_.residualScale, d);
        return residual(p + "ffn_residual", x, d);
    }

    // phi3 (llama.cpp's src/models/phi3.cpp): q|k|v from one attn_qkv projection (rows q, then
    // k, then v; separate attn_q/k/v also accepted) into LLMAttention's packed input; NEOX rotary
    // over rope.dimension_count dimensions with the LongRoPE factors and attn_factor
    // (readPhi3HyperParameters); ffn_up holds 2 x feed_forward_length rows, gate first:
    // ffn = down(silu(x W_up[0:n_ff]^T) * (x W_up[n_ff:2 n_ff]^T)) (llama.cpp's LLM_FFN_SWIGLU on
    // the whole up projection: ggml_swiglu applies silu to the first half). The two halves are
    // two weights of one matmul layer over the mapped rows, no copy.
    Pin phi3Block(int i, Pin x)
    {
        const std::string p = format("blk.%d.", i);
        const int qWidth = hp_.nHead * hp_.headDim, kvWidth = hp_.nKV * hp_.headDim;

        Pin h = rmsNorm(p + "attn_norm", p + "attn_norm.weight", x);
        std::vector<Pin> qkv;
        if (f_.findTensor(p + "attn_qkv.weight"))
            qkv.push_back(matmul(p + "attn_qkv", p + "attn_qkv", hp_.nEmbd, qWidth + 2 * kvWidth, h));
        else
            qkv = matmuls(p + "attn_qkv", {p + "attn_q", p + "attn_k", p + "attn_v"}, {qWidth, kvWidth, kvWidth},
                          hp_.nEmbd, h);

        Pin a = attention(p + "attn", i, qkv);
        Pin o = matmul(p + "attn_output", p + "attn_output", qWidth, hp_.nEmbd, a);
        x = residual(p + "attn_residual", x, o);

        h = rmsNorm(p + "ffn_norm", p + "ffn_norm.weight", x);
        const std::string up = p + "ffn_up.weight";
        const Mat upGate = weight(up, hp_.nEmbd, 2 * hp_.nFF);
        const GGMLType type = tensor(up).type;
        const std::vector<Pin> halves = projections(p + "ffn_up", {LLMMatMulWeight{(int)type, upGate.rowRange(0, hp_.nFF), Mat()},
                                                                   LLMMatMulWeight{(int)type, upGate.rowRange(hp_.nFF, 2 * hp_.nFF), Mat()}},
                                                    hp_.nEmbd, h);
        Pin m = elementwise(p + "ffn_swiglu", "swiglu", halves);
        Pin d = matmul(p + "ffn_down", p + "ffn_down", hp_.nFF, hp_.nEmbd, m);
        return residual(p + "ffn_residual", x, d);
    }

    // gpt2 (llama.cpp's src/models/gpt2.cpp): every projection with its bias (required),
    //   x += attn_output(attention(attn_qkv(layer_norm(x))))   (no rotary)
    //   x += ffn_down(gelu_tanh(ffn_up(layer_norm(x))))
    Pin gpt2Block(int i, Pin x)
    {
        const std::string p = format("blk.%d.", i);
        const int kvWidth = hp_.nKV * hp_.headDim;
        for (const char* b : {"attn_qkv.bias", "attn_output.bias", "ffn_up.bias", "ffn_down.bias"})
            tensor(p + b);  // present (matmul reads it)

        Pin h = layerNorm(p + "attn_norm", x);
        Pin qkv = matmul(p + "attn_qkv", p + "attn_qkv", hp_.nEmbd, hp_.nEmbd + 2 * kvWidth, h);
        Pin a = attention(p + "attn", i, {qkv});
        Pin o = matmul(p + "attn_output", p + "attn_output", hp_.nEmbd, hp_.nEmbd, a);
        x = residual(p + "attn_residual", x, o);

        h = layerNorm(p + "ffn_norm", x);
        Pin up = matmul(p + "ffn_up", p + "ffn_up", hp_.nEmbd, hp_.nFF, h);
        // GELU as llama.cpp's CPU backend computes it (the exact tanh formula is 2e-4 off in p)
        Pin m = elementwise(p + "ffn_gelu", "gelu_tanh_f16", {up});
        Pin d = matmul(p + "ffn_down", p + "ffn_down", hp_.nFF, hp_.nEmbd, m);
        return residual(p + "ffn_residual", x, d);
    }

    const GGUFModelFile& f_;
    int positionLayer_ = -1;
    bool allLogits_, integerDot_;
    const GGUFHyperParameters hp_;
    std::vector<int> attentionIds_;
    mutable std::set<std::string> used_;  // tensors the graph reads
    Net net_;
    int vocab_ = 0;
    Mat ropeFactors_;  // per-pair frequency factors of every layer (readRopeFactors)
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
