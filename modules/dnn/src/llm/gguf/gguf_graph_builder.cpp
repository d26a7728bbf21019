// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "gguf_graph_builder.hpp"
#include "../net/llm_net_state.hpp"
#include "../attention/rotary_embedding.hpp"

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

} // namespace

LayerParams GGUFGraphBuilder::params(const std::string& name, const std::string& type)
{
    LayerParams lp;
    lp.name = name;
    lp.type = type;
    return lp;
}

GGUFGraphBuilder::GGUFGraphBuilder(const GGUFModelFile& file, const LoadOptions& options)
    : f_(file), integerDot_(options.integerDot), hp_(readGGUFHyperParameters(file, options.contextLength))
{
    net_.setInputsNames({"input_ids"});
    // The Net's one KV cache holds every layer's keys and values in rows of the largest layer's
    // shape; smaller layers (gemma4's local ones) pad their heads (LLMAttention's input_head_dim).
    for (int i = 0; i < hp_.nLayer; i++)
    {
        cacheKVHeads_ = std::max(cacheKVHeads_, hp_.shapeOf(i).kvHeads);
        cacheHeadDim_ = std::max(cacheHeadDim_, hp_.shapeOf(i).headDim);
    }
}

void GGUFGraphBuilder::fail(const std::string& msg) const
{
    CV_Error(Error::StsParseError, format("GGUF '%s': %s", f_.path().c_str(), msg.c_str()));
}

const GGUFTensor& GGUFGraphBuilder::tensor(const std::string& name) const
{
    const GGUFTensor* t = f_.findTensor(name);
    if (!t)
        fail("tensor '" + name + "' is missing");
    used_.insert(name);
    return *t;
}

Mat GGUFGraphBuilder::weight(const std::string& name, int cols, int rows) const
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

Mat GGUFGraphBuilder::vectorF32(const std::string& name, int n) const
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

Mat GGUFGraphBuilder::expertWeights(const std::string& name, int cols, int rows, int experts) const
{
    const GGUFTensor& t = tensor(name);
    if (t.nDims != 3 || t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != experts)
        fail(format("tensor '%s' has shape [%lld, %lld, %lld] in %d dims, expected [%d, %d, %d]", name.c_str(),
                    (long long)t.ne[0], (long long)t.ne[1], (long long)t.ne[2], t.nDims, cols, rows, experts));
    if (!ggmlTypeTraits(t.type).dequantizable)
        fail("tensor '" + name + "' has type " + ggmlTypeName(t.type) +
             ", which is not supported (supported: " + supportedTypes() + ")");
    return wrapMappedBytes(f_.mapping(), t.data, t.rowCount(), (int64)t.rowBytes());
}

Mat GGUFGraphBuilder::matrixF32(const std::string& name, int cols, int rows) const
{
    const GGUFTensor& t = tensor(name);
    if (t.nDims != 2 || t.ne[0] != cols || t.ne[1] != rows)
        fail(format("tensor '%s' has shape [%lld, %lld] in %d dims, expected [%d, %d]", name.c_str(),
                    (long long)t.ne[0], (long long)t.ne[1], t.nDims, cols, rows));
    if (!ggmlTypeTraits(t.type).dequantizable)
        fail("tensor '" + name + "' has type " + ggmlTypeName(t.type) + ", which is not supported");
    Mat m(rows, cols, CV_32F);
    for (int r = 0; r < rows; r++)
        dequantizeRow(t.type, t.data + (size_t)r * t.rowBytes(), m.ptr<float>(r), cols);
    return m;
}

LayerPin GGUFGraphBuilder::add(LayerParams& lp, const std::vector<Pin>& inputs)
{
    return addConnectedLayer(net_, lp, inputs);
}

LayerPin GGUFGraphBuilder::rmsNorm(const std::string& name, Pin x, int size, float weightScale)
{
    LayerParams lp = params(name, "RMSNorm");
    lp.set("epsilon", hp_.eps);
    Mat w = vectorF32(name + ".weight", size < 0 ? hp_.nEmbd : size);
    if (weightScale != 1.f)
        w *= weightScale;
    lp.blobs.push_back(w);
    return add(lp, {x});
}

LayerPin GGUFGraphBuilder::headNorm(const std::string& name, Pin x, int headDim)
{
    headDim = headDim < 0 ? hp_.headDim : headDim;
    LayerParams lp = params(name, "RMSNorm");
    lp.set("epsilon", hp_.eps);
    lp.set("group_size", headDim);
    lp.blobs.push_back(vectorF32(name + ".weight", headDim));
    return add(lp, {x});
}

LayerPin GGUFGraphBuilder::layerNorm(const std::string& name, Pin x)
{
    LayerParams lp = params(name, "LLMLayerNorm");
    lp.set("epsilon", hp_.eps);
    lp.blobs.push_back(vectorF32(name + ".weight", hp_.nEmbd));
    lp.blobs.push_back(vectorF32(name + ".bias", hp_.nEmbd));
    return add(lp, {x});
}

LayerPin GGUFGraphBuilder::scaleBy(const std::string& name, float factor, Pin x)
{
    LayerParams lp = params(name, "LLMElementwise");
    lp.set("operation", "mul");
    lp.blobs.push_back(Mat(1, 1, CV_32F, Scalar(factor)));
    return add(lp, {x});
}

LayerPin GGUFGraphBuilder::elementwise(const std::string& name, const char* operation, const std::vector<Pin>& inputs)
{
    LayerParams lp = params(name, "LLMElementwise");
    lp.set("operation", operation);
    return add(lp, inputs);
}

LayerPin GGUFGraphBuilder::residual(const std::string& name, Pin a, Pin b)
{
    return elementwise(name, "add", {a, b});
}

LayerPin GGUFGraphBuilder::matmul(const std::string& prefix, int in, int out, Pin x)
{
    return matmuls(prefix, {prefix}, {out}, in, x)[0];
}

std::vector<LayerPin> GGUFGraphBuilder::projections(const std::string& name, const std::vector<LLMMatMulWeight>& weights,
                                                    int in, Pin x)
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

std::vector<LLMMatMulWeight> GGUFGraphBuilder::rowParts(const std::string& tensor, int in,
                                                       const std::vector<int>& rows) const
{
    int total = 0;
    for (int r : rows)
        total += r;
    const Mat all = weight(tensor, in, total);
    const int type = (int)this->tensor(tensor).type;
    std::vector<LLMMatMulWeight> parts;
    int first = 0;
    for (int r : rows)
    {
        parts.push_back(LLMMatMulWeight{type, all.rowRange(first, first + r), Mat(), tensor, first});
        first += r;
    }
    return parts;
}

std::vector<LayerPin> GGUFGraphBuilder::matmuls(const std::string& name, const std::vector<std::string>& prefixes,
                                                const std::vector<int>& outs, int in, Pin x)
{
    std::vector<LLMMatMulWeight> weights;
    for (size_t i = 0; i < prefixes.size(); i++)
    {
        const std::string w = prefixes[i] + ".weight", b = prefixes[i] + ".bias";
        weights.push_back(LLMMatMulWeight{(int)tensor(w).type, weight(w, in, outs[i]),
                                          f_.findTensor(b) ? vectorF32(b, outs[i]) : Mat(), w});
    }
    return projections(name, weights, in, x);
}

LayerPin GGUFGraphBuilder::attention(const std::string& name, int layer, const std::vector<Pin>& inputs)
{
    const GGUFHyperParameters::LayerShape shape = hp_.shapeOf(layer);
    LayerParams lp = params(name, "LLMAttention");
    lp.set("num_heads", shape.heads);
    lp.set("num_kv_heads", cacheKVHeads_);
    lp.set("head_dim", cacheHeadDim_);
    if (shape.kvHeads != cacheKVHeads_)
        lp.set("input_kv_heads", shape.kvHeads);
    if (shape.headDim != cacheHeadDim_)
        lp.set("input_head_dim", shape.headDim);
    if (shape.kvSource >= 0)
        lp.set("kv_shared", true);
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
    if (arch().attentionSinks)
    {
        const Mat sinks = vectorF32(format("blk.%d.attn_sinks.weight", layer), shape.heads);
        lp.set("sinks", DictValue::arrayReal(sinks.ptr<float>(), shape.heads));
    }
    if (!hp_.ropeOnLayer(layer))
    {
        lp.set("rope_mode", "none");
    }
    else
    {
        lp.set("rope_dim", shape.ropeDim);
        lp.set("rope_base", local ? hp_.ropeBaseLocal : hp_.ropeBase);
        lp.set("rope_neox", arch().rope == RopeType::Neox);
        setRotaryScaling(lp, local ? hp_.ropeBaseLocal : hp_.ropeBase, local ? hp_.ropeFreqScaleLocal : hp_.ropeFreqScale,
                         shape.ropeDim, !local || hp_.ropeFactorsOnLocalLayers);
    }
    Pin a = add(lp, inputs);
    if (shape.kvSource >= 0)
    {
        sharedAttention_.push_back({a.layer, shape.kvSource});
        return a;
    }
    cacheLayerOfBlock_[layer] = (int)attentionIds_.size();
    attentionIds_.push_back(a.layer);
    return a;
}

std::vector<LayerPin> GGUFGraphBuilder::shortConvolution(const std::string& name, int kernel,
                                                         const std::vector<int>& channels,
                                                         const std::vector<Pin>& inputs, bool silu)
{
    CV_Assert(channels.size() == inputs.size());
    int total = 0;
    for (int c : channels)
        total += c;
    LayerParams lp = params(name, "LLMShortConv");
    lp.set("kernel_size", kernel);
    lp.set("input_channels", DictValue::arrayInt(channels.data(), (int)channels.size()));
    lp.set("silu", silu);
    lp.blobs.push_back(matrixF32(name + ".weight", kernel, total));
    if (f_.findTensor(name + ".bias"))
        lp.blobs.push_back(vectorF32(name + ".bias", total));
    const Pin layer = add(lp, inputs);
    std::vector<Pin> pins;
    for (size_t i = 0; i < inputs.size(); i++)
        pins.push_back(Pin{layer.layer, (int)i});
    return pins;
}

/* x -> o_proj(attention(rope(q_norm(q_proj(x))), rope(k_norm(k_proj(x))), v_proj(x))), with q_norm
   and k_norm per head (qwen3, gemma3) or over the whole projection (olmo2), or none. */
LayerPin GGUFGraphBuilder::selfAttention(const std::string& p, int layer, Pin h)
{
    const int qWidth = hp_.nHead * hp_.headDim, kvWidth = hp_.nKV * hp_.headDim;
    const std::vector<Pin> qkv = matmuls(p + "attn_qkv", {p + "attn_q", p + "attn_k", p + "attn_v"},
                                         {qWidth, kvWidth, kvWidth}, hp_.nEmbd, h);
    Pin q = qkv[0], k = qkv[1], v = qkv[2];
    if (arch().qkNorm == QKNorm::PerHead)
    {
        q = headNorm(p + "attn_q_norm", q);
        k = headNorm(p + "attn_k_norm", k);
    }
    else if (arch().qkNorm == QKNorm::Whole)
    {
        q = rmsNorm(p + "attn_q_norm", q, qWidth);
        k = rmsNorm(p + "attn_k_norm", k, kvWidth);
    }
    Pin a = attention(p + "attn", layer, {q, k, v});
    return matmul(p + "attn_output", qWidth, hp_.nEmbd, a);
}

LayerPin GGUFGraphBuilder::gatedFeedForward(const std::string& p, Pin h)
{
    const std::vector<Pin> gateUp = matmuls(p + "ffn_gate_up", {p + "ffn_gate", p + "ffn_up"}, {hp_.nFF, hp_.nFF},
                                            hp_.nEmbd, h);
    // GELU as llama.cpp's CPU backend computes it (ggml_geglu: half-precision table)
    Pin m = arch().geluFFN ? elementwise(p + "ffn_geglu", "geglu_f16", gateUp)
                           : elementwise(p + "ffn_swiglu", "swiglu", gateUp);
    return matmul(p + "ffn_down", hp_.nFF, hp_.nEmbd, m);
}

LayerPin GGUFGraphBuilder::expertFeedForward(const std::string& p, Pin h, const char* activation)
{
    const int n = hp_.nExpert, ff = hp_.nFFExpert;
    Pin logits = matmul(p + "ffn_gate_inp", hp_.nEmbd, n, h);
    LayerParams lp = params(p + "ffn_moe", "LLMExperts");
    lp.set("in_features", hp_.nEmbd);
    lp.set("expert_ff", ff);
    lp.set("num_experts", n);
    lp.set("experts_used", hp_.nExpertUsed);
    lp.set("gating", hp_.expertGating);
    lp.set("normalize_weights", hp_.expertWeightsNorm);
    lp.set("weights_scale", hp_.expertWeightsScale);
    lp.set("activation", activation);
    lp.set("integer_dot", integerDot_);
    const std::string names[3] = {p + "ffn_gate_exps", p + "ffn_up_exps", p + "ffn_down_exps"};
    const int ins[3] = {hp_.nEmbd, hp_.nEmbd, ff}, outs[3] = {ff, ff, hp_.nEmbd};
    int types[3];
    for (int j = 0; j < 3; j++)
    {
        types[j] = (int)tensor(names[j] + ".weight").type;
        lp.blobs.push_back(expertWeights(names[j] + ".weight", ins[j], outs[j], n));
    }
    lp.set("ggml_type", DictValue::arrayInt(types, 3));
    // Biases (gpt-oss) come for all three or none.
    const int biases = (int)hasTensor(names[0] + ".bias") + hasTensor(names[1] + ".bias") + hasTensor(names[2] + ".bias");
    if (biases != 0 && biases != 3)
        fail("tensor '" + p + "ffn_*_exps.bias': the experts' gate, up and down need all their biases or none");
    for (int j = 0; biases == 3 && j < 3; j++)
        lp.blobs.push_back(matrixF32(names[j] + ".bias", outs[j], n));
    return add(lp, {h, logits});
}

LayerPin GGUFGraphBuilder::feedForward(const std::string& p, Pin h)
{
    return hp_.nExpert > 0 ? expertFeedForward(p, h) : gatedFeedForward(p, h);
}

LayerPin GGUFGraphBuilder::positionEmbedding(Pin x)
{
    LayerParams lp = params("position_embd", "LLMPositionEmbedding");
    lp.set("ggml_type", (int)tensor("position_embd.weight").type);
    lp.set("embedding_length", hp_.nEmbd);
    if (hp_.nCtx > hp_.nCtxTrain)
        fail(format("a context of %d tokens: %s's learned positions cover %d", hp_.nCtx, hp_.arch.c_str(), hp_.nCtxTrain));
    lp.set("max_positions", hp_.nCtxTrain);
    lp.blobs.push_back(weight("position_embd.weight", hp_.nEmbd, hp_.nCtxTrain));
    Pin p = add(lp, {x});
    positionLayer_ = p.layer;
    return p;
}

/** A rotary layer's frequency scale, magnitude (rope.scaling.attn_factor) and per-pair factors
    (readRopeFactors), for its base and frequency scale; with YaRN its angles are folded into
    the factors (divided by yarnAngleFactors, frequency scale 1) and its magnitude into
    rope_attn_factor (yarnMagnitude), as llama.cpp computes them for that layer. */
void GGUFGraphBuilder::setRotaryScaling(LayerParams& lp, float base, float freqScale, int ropeDim, bool withFactors) const
{
    const Mat ropeFactors = withFactors ? ropeFactors_ : Mat();
    Mat factors = ropeFactors;
    lp.set("rope_attn_factor", yarnMagnitude(hp_.ropeFreqScale, freqScale, hp_.yarn, hp_.ropeAttnFactor, hp_.yarnLogMultiplier));
    if (hp_.yarn.extFactor != 0.f)
    {
        const std::vector<float> m = yarnAngleFactors(ropeDim, base, freqScale, hp_.yarn);
        factors = Mat(1, (int)m.size(), CV_32F);
        for (int i = 0; i < factors.cols; i++)
            factors.at<float>(i) = (ropeFactors.empty() ? 1.f : ropeFactors.at<float>(i)) / m[i];
        freqScale = 1.f;
    }
    lp.set("rope_freq_scale", freqScale);
    if (!factors.empty())
        lp.blobs.push_back(factors);
}

void GGUFGraphBuilder::loadRopeFactors()
{
    ropeFactors_ = readRopeFactors();
}

/** Per-pair rotary frequency factors as the row says (RopeFactors): rope_freqs.weight (Llama 3)
    where present, else LongRoPE's factors for the context in use (llama.cpp's get_rope_factors;
    both LongRoPE tensors are read, and so checked, whichever is used). Empty: none. */
Mat GGUFGraphBuilder::readRopeFactors() const
{
    const int pairs = hp_.ropeDim / 2;
    Mat chosen;
    if (arch().rope == RopeType::None || arch().ropeFactors == RopeFactors::None)
        return chosen;
    if (arch().ropeFactors == RopeFactors::LongRoPE)
    {
        Mat longF, shortF;
        if (f_.findTensor("rope_factors_long.weight"))
            longF = vectorF32("rope_factors_long.weight", pairs);
        if (f_.findTensor("rope_factors_short.weight"))
            shortF = vectorF32("rope_factors_short.weight", pairs);
        chosen = hp_.longRopeFactors ? longF : shortF;
    }
    if (f_.findTensor("rope_freqs.weight"))
        chosen = vectorF32("rope_freqs.weight", pairs);
    return chosen;
}

Net GGUFGraphBuilder::finish(int logitRowsLayer)
{
    // Like llama.cpp, refuse tensors the graph does not use: they belong to a variant of the
    // architecture (Q/K norms in a llama file, a fused attn_qkv, ...) that would
    // otherwise be computed without them.
    for (const GGUFTensor& t : f_.tensors())
        if (!used_.count(t.name))
            fail("tensor '" + t.name + "' is not used by architecture '" + hp_.arch + "' as implemented here");

    installLLMState(net_, attentionIds_, logitRowsLayer, f_.path());
    LLMNetState::of(net_)->setArchitecture(hp_.arch);  // (what LoRA adapters must name)
    // Attention layers that read another block's keys and values (gemma4's shared KV) are no
    // KV-cache layers of their own: each is given its source's cache layer.
    for (const std::pair<int, int>& shared : sharedAttention_)
    {
        const auto source = cacheLayerOfBlock_.find(shared.second);
        if (source == cacheLayerOfBlock_.end())
            fail(format("block %d's attention has no keys and values of its own for another layer to read", shared.second));
        net_.getLayer(shared.first).dynamicCast<KVCacheUser>()->attachState(LLMNetState::of(net_), source->second);
    }
    if (positionLayer_ >= 0)
        net_.getLayer(positionLayer_).dynamicCast<LLMPositionEmbeddingLayer>()->attachState(LLMNetState::of(net_));
    return net_;
}

}}} // namespace cv::dnn::llm
