// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: rotary embeddings and the attention operators (GroupQueryAttention,
// MultiHeadAttention, Attention) on the Net's paged KV cache.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

#include <set>

#include "../net/net_assembly.hpp"
#include "../net/llm_net_state.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

std::shared_ptr<RotaryTables> ONNXNetBuilder::rotaryTables(const NodeProto& n, int cosInput, int sinInput, bool interleaved)
{
    auto t = std::make_shared<RotaryTables>();
    const OnnxTensor& c = constantInput(n, cosInput);
    const OnnxTensor& s = constantInput(n, sinInput);
    if (c.shape.size() != 2 || c.shape != s.shape || c.shape[0] <= 0 || c.shape[1] <= 0)
        failNode(n, "cos_cache and sin_cache must be constant [max_position, rotary_dim / 2] tensors of one shape");
    t->cos = c.toFloat();
    t->sin = s.toFloat();
    t->neox = !interleaved;
    t->cosName = n.input(cosInput);
    t->sinName = n.input(sinInput);
    return t;
}

void ONNXNetBuilder::importRotary(const NodeProto& n)
{
    const bool microsoft = n.domain() == "com.microsoft";
    const int positionsInput = microsoft ? 1 : 3;
    if (hasInput(n, positionsInput) && input(n, positionsInput).kind != Value::CacheInput)
        failNode(n, "position_ids must be the graph's position input (the KV cache knows each token's position)");
    if (microsoft && onnxIntAttribute(n, "is_packed_batching", 0) != 0)
        failNode(n, "is_packed_batching is not supported");
    if (microsoft && onnxFloatAttribute(n, "scale", 1.f) != 1.f)
        failNode(n, "a scale other than 1 is not supported");
    Value v;
    v.kind = Value::Rotated;
    v.pin = tensorInput(n, 0);
    v.width = values_.at(n.input(0)).width;
    v.rotary = rotaryTables(n, microsoft ? 2 : 1, microsoft ? 3 : 2, onnxIntAttribute(n, "interleaved", 0) != 0);
    const int64 rotaryDim = onnxIntAttribute(n, "rotary_embedding_dim", 0);
    if (rotaryDim != 0 && rotaryDim != 2 * v.rotary->cos.cols)
        failNode(n, format("rotary_embedding_dim %lld does not match the cos_cache's %d pairs",
                           (long long)rotaryDim, v.rotary->cos.cols));
    define(n, 0, v);
}

void ONNXNetBuilder::importAttention(const NodeProto& n)
{
    const bool gqa = isOp(n, "GroupQueryAttention"), mha = isOp(n, "MultiHeadAttention");
    for (int out = 1; out < n.output_size(); out++)
        if (outputNeeded(n, out))
            failNode(n, "only the attention output is supported (present keys and values live in the KV cache)");
    const int past = pastKeyInput(n);
    if (!hasInput(n, past) || input(n, past).kind != Value::CacheInput)
        failNode(n, "an attention without past keys / values from the graph's inputs is not a decoder's "
                    "causal attention, which is what the importer supports");
    if (isOp(n, "Attention") && n.domain() == "com.microsoft")
        return importMicrosoftAttention(n);

    int heads, kvHeads, window = 0;
    float softcap = 0.f;
    if (gqa)
    {
        heads = intAttribute(n, "num_heads", 0);
        kvHeads = intAttribute(n, "kv_num_heads", 0);
        // local_window_size w: each token attends to its last w positions, itself included (as
        // ONNX Runtime's GQA computes it; checked by the oracle gqa_local_window); softcap c:
        // scores c * tanh(s / c).
        const int localWindow = intAttribute(n, "local_window_size", -1);
        if (localWindow == 0 || localWindow < -1 || localWindow == INT_MAX)
            failNode(n, format("local_window_size %d must be -1 (off) or positive", localWindow));
        window = localWindow > 0 ? localWindow : 0;
        softcap = onnxFloatAttribute(n, "softcap", 0.f);
        if (!(softcap >= 0.f) || !std::isfinite(softcap))
            failNode(n, "softcap must be 0 (off) or positive");
        if (onnxIntAttribute(n, "smooth_softmax", 0) > 0)
            failNode(n, "smooth_softmax is not supported");
        if (hasInput(n, 10) || hasInput(n, 11))
            failNode(n, "attention_bias and head_sink inputs are not supported");
        if (hasInput(n, 9) && input(n, 9).kind != Value::CacheInput)
            failNode(n, "position_ids must be the graph's position input");
    }
    else if (mha)
    {
        heads = kvHeads = intAttribute(n, "num_heads", 0);
        if (hasInput(n, 3))
            failNode(n, "the bias input is not supported");
    }
    else
    {
        heads = intAttribute(n, "q_num_heads", 0);
        kvHeads = intAttribute(n, "kv_num_heads", 0);
        if (onnxFloatAttribute(n, "softcap", 0.f) != 0.f)
            failNode(n, "softcap is not supported");
        if (onnxIntAttribute(n, "qk_matmul_output_mode", 0) != 0)
            failNode(n, "qk_matmul_output_mode is not supported");
    }
    if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
        failNode(n, format("num_heads %d must be a positive multiple of the KV head count %d", heads, kvHeads));

    const Value& q = input(n, 0);
    const bool packed = gqa && !hasInput(n, 1) && !hasInput(n, 2);
    if (!packed && (!hasInput(n, 1) || !hasInput(n, 2)))
        failNode(n, "needs key and value inputs (or, for GroupQueryAttention, one packed query|key|value input)");
    const int qWidth = q.width;
    // In int64: num_heads + 2 * kv_num_heads overflows int for large attributes (fuzz_onnx_llm).
    const int64 qkvHeads = packed ? (int64)heads + 2 * (int64)kvHeads : (int64)heads;
    if (qWidth / qkvHeads <= 0 || (qWidth / qkvHeads) * qkvHeads != qWidth)
        failNode(n, format("the query width %d does not split into %d heads", qWidth, heads));
    const int headDim = (int)(qWidth / qkvHeads);

    std::shared_ptr<RotaryTables> rotary;
    std::vector<Pin> inputs;
    if (gqa && onnxIntAttribute(n, "do_rotary", 0) != 0)
    {
        rotary = rotaryTables(n, 7, 8, onnxIntAttribute(n, "rotary_interleaved", 0) != 0);
        for (int i = 0; i < (packed ? 1 : 2); i++)
            if (input(n, i).kind == Value::Rotated)
                failNode(n, "do_rotary on inputs that a RotaryEmbedding already rotated");
    }
    else if (packed)
    {
        if (q.kind == Value::Rotated)
            failNode(n, "a RotaryEmbedding of the packed query|key|value input is not supported");
    }
    else
    {
        const Value& k = input(n, 1);
        if ((q.kind == Value::Rotated) != (k.kind == Value::Rotated) ||
            (q.kind == Value::Rotated && !q.rotary->sameAs(*k.rotary)))
            failNode(n, "query and key must be rotated by the same RotaryEmbedding tables, or neither");
        if (q.kind == Value::Rotated)
            rotary = q.rotary;
    }
    for (int i = 0; i < (packed ? 1 : 3); i++)
    {
        const Value& v = input(n, i);
        if (v.kind == Value::Rotated && i < 2)
            inputs.push_back(v.pin);
        else
            inputs.push_back(tensorInput(n, i));
    }
    if (!packed)
    {
        const int kvWidth = kvHeads * headDim;
        if (input(n, 1).width != kvWidth || input(n, 2).width != kvWidth)
            failNode(n, format("key and value must have %d heads of %d features", kvHeads, headDim));
    }
    addAttentionLayer(n, inputs, heads, kvHeads, headDim, rotary, onnxFloatAttribute(n, "scale", 0.f), softcap, window);
}

// The LLMAttention on the shared cache, its inputs q, k, v or one packed q|k|v.
void ONNXNetBuilder::addAttentionLayer(const NodeProto& n, const std::vector<Pin>& inputs, int heads, int kvHeads,
                                       int headDim, const std::shared_ptr<RotaryTables>& rotary, float scale,
                                       float softcap, int window)
{
    LayerParams lp = params(n.name(), "LLMAttention");
    lp.set("num_heads", heads);
    lp.set("num_kv_heads", kvHeads);
    lp.set("head_dim", headDim);
    lp.set("max_context", contextLength());
    if (scale != 0.f)
        lp.set("scale", scale);
    if (softcap != 0.f)
        lp.set("logit_softcap", softcap);
    if (window > 0)
        lp.set("sliding_window", window);
    if (rotary)
    {
        if (2 * rotary->cos.cols > headDim)
            failNode(n, format("the rotary tables cover %d dimensions, more than the head size %d",
                               2 * rotary->cos.cols, headDim));
        lp.set("rope_mode", "table");
        lp.set("rope_neox", rotary->neox);
        lp.blobs.push_back(rotary->cos);
        lp.blobs.push_back(rotary->sin);
    }
    else
    {
        lp.set("rope_mode", "none");
    }
    auto unpadded = unpaddedHeadSize_.find(n.output(0));
    const int keep = unpadded != unpaddedHeadSize_.end() ? std::min(unpadded->second, headDim) : headDim;
    if (keep < headDim)
        lp.set("output_head_dim", keep);
    const Pin out = add(lp, inputs);
    attention_.push_back({out.layer, kvHeads, headDim});
    defineTensor(n, 0, out, heads * keep);
    if (unpadded != unpaddedHeadSize_.end())
    {
        Value& v = values_.at(n.output(0));
        v.heads = heads;
        v.inner = keep;
        v.paddedHeadSize = headDim;
    }
}

namespace {

// The value of a constant input: an initializer or a Constant node's `value` (false otherwise).
bool readConstant(const OnnxModelFile& f, const DecoderGraph& g, const std::string& name, OnnxTensor& out)
{
    if (const OnnxTensor* t = f.findInitializer(name))
    {
        out = *t;
        return true;
    }
    auto producer = g.producer.find(name);
    if (producer == g.producer.end())
        return false;
    const NodeProto& c = f.graph().node(producer->second);
    if (c.op_type() != "Constant" || c.attribute_size() != 1 || c.attribute(0).name() != "value")
        return false;
    out = f.readTensor(c.attribute(0).t());
    return true;
}

} // namespace

void ONNXNetBuilder::findUnpadSlices()
{
    const opencv_onnx::GraphProto& g = f_.graph();
    std::map<std::string, std::vector<int>> consumers;
    for (int i : graph_.order)
        for (const std::string& in : g.node(i).input())
            consumers[in].push_back(i);
    auto onlyConsumer = [&](const std::string& name, const char* op) -> const NodeProto* {
        auto c = consumers.find(name);
        if (c == consumers.end() || c->second.size() != 1 || g.node(c->second[0]).op_type() != op ||
            g.node(c->second[0]).input(0) != name)
            return nullptr;
        return &g.node(c->second[0]);
    };
    for (int i : graph_.order)
    {
        const NodeProto& n = g.node(i);
        if (!isAttentionOp(n) || n.output_size() == 0 || n.output(0).empty())
            continue;
        const NodeProto* reshape = onlyConsumer(n.output(0), "Reshape");
        const NodeProto* slice = reshape ? onlyConsumer(reshape->output(0), "Slice") : nullptr;
        if (!slice || slice->input_size() < 4)
            continue;
        OnnxTensor starts, ends, axes, steps;
        if (!readConstant(f_, graph_, slice->input(1), starts) || !readConstant(f_, graph_, slice->input(2), ends) ||
            !readConstant(f_, graph_, slice->input(3), axes) || starts.total() != 1 || ends.total() != 1 ||
            axes.total() != 1)
            continue;
        if (slice->input_size() > 4 && !slice->input(4).empty() &&
            (!readConstant(f_, graph_, slice->input(4), steps) || steps.total() != 1 || steps.at(0) != 1))
            continue;
        // [0, keep) of the last axis of [batch, seq, heads, padded]: the head's first values
        if (starts.at(0) != 0 || (axes.at(0) != -1 && axes.at(0) != 3) || ends.at(0) <= 0)
            continue;
        unpaddedHeadSize_[n.output(0)] = (int)std::min(ends.at(0), (double)INT_MAX);
    }
}

void ONNXNetBuilder::findPerHeadQKV()
{
    const opencv_onnx::GraphProto& g = f_.graph();
    std::map<std::string, std::vector<int>> consumers;
    for (int i : graph_.order)
        for (const std::string& in : g.node(i).input())
            consumers[in].push_back(i);
    auto producerOf = [&](const std::string& name) -> const NodeProto* {
        auto p = graph_.producer.find(name);
        auto c = consumers.find(name);
        if (p == graph_.producer.end() || c == consumers.end() || c->second.size() != 1)
            return nullptr;  // (another consumer would see the permuted columns)
        return &g.node(p->second);
    };
    for (int i : graph_.order)
    {
        const NodeProto& r = g.node(i);
        if (r.op_type() != "Reshape" || r.input_size() < 2)
            continue;
        // [MatMul(x, W) + bias] -> Reshape -> Slices of the last axis, each of a third of it
        const NodeProto* p = producerOf(r.input(0));
        std::string bias;
        if (p && p->op_type() == "Add" && p->input_size() == 2)
        {
            OnnxTensor b;
            const int c = readConstant(f_, graph_, p->input(0), b) ? 0 : 1;
            if (!readConstant(f_, graph_, p->input(c), b))
                continue;
            bias = p->input(c);
            p = producerOf(p->input(1 - c));
        }
        const OnnxTensor* w = p && p->op_type() == "MatMul" && p->input_size() == 2 ? f_.findInitializer(p->input(1))
                                                                                    : nullptr;
        if (!w || w->shape.size() != 2 || w->shape[1] % 3 != 0)
            continue;
        // the per-head view, or its Transpose(0, 2, 1, 3) to heads first (transformers >= 4.48)
        std::string view = r.output(0);
        auto c = consumers.find(view);
        if (c != consumers.end() && c->second.size() == 1 && g.node(c->second[0]).op_type() == "Transpose" &&
            g.node(c->second[0]).output_size() == 1)
        {
            const NodeProto& t = g.node(c->second[0]);
            std::vector<int64> perm;
            for (const auto& a : t.attribute())
                if (a.name() == "perm")
                    perm.assign(a.ints().begin(), a.ints().end());
            if (perm != std::vector<int64>{0, 2, 1, 3})
                continue;
            view = t.output(0);
            c = consumers.find(view);
        }
        if (c == consumers.end())
            continue;
        std::set<std::pair<int64, int64>> ranges;
        if (c->second.size() == 1)
        {
            // one Split of the last axis into three (qkv.chunk(3, dim=-1))
            const NodeProto& s = g.node(c->second[0]);
            const int64 axis = onnxIntAttribute(s, "axis", 0);
            if (s.op_type() != "Split" || s.output_size() != 3 || s.input(0) != view || (axis != -1 && axis != 3))
                continue;
            std::vector<int64> sizes;
            for (const auto& a : s.attribute())
                if (a.name() == "split")
                    sizes.assign(a.ints().begin(), a.ints().end());
            OnnxTensor split;
            if (sizes.empty() && s.input_size() > 1 && !s.input(1).empty())
            {
                if (!readConstant(f_, graph_, s.input(1), split))
                    continue;
                for (int64 k = 0; k < split.total(); k++)
                    sizes.push_back((int64)split.at(k));
            }
            if (sizes.empty())
            {
                // three equal parts (no sizes, or opset 18's num_outputs) of the view's last axis:
                // its size from the Reshape's shape, constant or a Concat ending in a constant
                OnnxTensor shape;
                auto sp = graph_.producer.find(r.input(1));
                if (!readConstant(f_, graph_, r.input(1), shape) &&
                    !(sp != graph_.producer.end() && g.node(sp->second).op_type() == "Concat" &&
                      readConstant(f_, graph_, g.node(sp->second).input(g.node(sp->second).input_size() - 1), shape)))
                    continue;
                if (shape.total() < 1 || shape.at(shape.total() - 1) <= 0 || (int64)shape.at(shape.total() - 1) % 3)
                    continue;
                sizes.assign(3, (int64)shape.at(shape.total() - 1) / 3);
            }
            if (sizes.size() != 3)
                continue;
            int64 start = 0;
            for (int64 size : sizes)
            {
                ranges.insert({start, start + size});
                start += size;
            }
        }
        else if (c->second.size() == 3)
            for (int k : c->second)
            {
                const NodeProto& s = g.node(k);
                OnnxTensor starts, ends, axes, steps;
                if (s.op_type() != "Slice" || s.input_size() < 4 || s.input(0) != view ||
                    !readConstant(f_, graph_, s.input(1), starts) || !readConstant(f_, graph_, s.input(2), ends) ||
                    !readConstant(f_, graph_, s.input(3), axes) || starts.total() != 1 || ends.total() != 1 ||
                    axes.total() != 1 || (axes.at(0) != -1 && axes.at(0) != 3))
                    break;
                if (s.input_size() > 4 && !s.input(4).empty() &&
                    (!readConstant(f_, graph_, s.input(4), steps) || steps.total() != 1 || steps.at(0) != 1))
                    break;
                ranges.insert({(int64)starts.at(0), (int64)std::min(ends.at(0), 1e15)});
            }
        if (ranges.size() != 3)
            continue;
        const int64 d = ranges.begin()->second, n = w->shape[1];
        if (d <= 0 || n % (3 * d) != 0 || !ranges.count({0, d}) || !ranges.count({d, 2 * d}) ||
            !(ranges.count({2 * d, 3 * d}) || ranges.rbegin()->first == 2 * d))
            continue;
        perHeadQKV_[p->output(0)] = {(int)(n / (3 * d)), (int)d};
    }
}

std::vector<int> perHeadQKVColumns(int heads, int headDim)
{
    // new column j * heads * d + h * d + i (q of every head, then k, then v) <- old h * 3d + j * d + i
    std::vector<int> from((size_t)3 * heads * headDim);
    for (int h = 0; h < heads; h++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < headDim; i++)
                from[(size_t)(j * heads + h) * headDim + i] = (h * 3 + j) * headDim + i;
    return from;
}

// Reshape of a padded attention output to [batch, seq, heads, padded head]: a view of the
// unpadded heads the Net holds, whose Slice [0, keep) is the identity.
void ONNXNetBuilder::importPaddedHeadsReshape(const NodeProto& n)
{
    Value v = input(n, 0);
    const Value& sv = input(n, 1);
    const int64 heads = v.heads, padded = v.paddedHeadSize;
    bool ok = n.op_type() == "Reshape" && sv.kind == Value::Constant && sv.constant->total() == 4 &&
              sv.constant->at(2) == (double)heads && sv.constant->at(3) == (double)padded;
    for (int k = 0; ok && k < 2; k++)
    {
        const double d = sv.constant->at(k);
        ok = d == 0 || (k == 1 && d == -1) || (sv.symbolic && d == (double)(k == 0 ? kBatchDim : kTokenDim));
    }
    if (!ok)
        failNode(n, format("the output of an attention with heads padded to %lld (sliced after it) must be reshaped "
                           "to [batch, seq, %lld, %lld]", (long long)padded, (long long)heads, (long long)padded));
    define(n, 0, v);
}

void ONNXNetBuilder::attachCache()
{
    if (attention_.empty())
        f_.fail("the graph has no attention operator on the path to the logits");
    for (const AttentionInfo& a : attention_)
        if (a.kvHeads != attention_[0].kvHeads || a.headDim != attention_[0].headDim)
            f_.fail("attention layers with different KV head counts or head sizes are not supported");
    std::vector<int> layers;
    for (const AttentionInfo& a : attention_)
        layers.push_back(a.layer);
    installLLMState(net_, layers, logitRowsLayer_, f_.path());  // context: the layers' (capped by rotary tables)
    for (int id : positionLayers_)  // learned positions read the token positions from the Net's state
        net_.getLayer(id).dynamicCast<LLMPositionEmbeddingLayer>()->attachState(LLMNetState::of(net_));
}


// com.microsoft Attention (onnxruntime.transformers' GPT-2 form): the input projected by the packed
// [hidden, 3 * hidden] q|k|v weight and bias given to the node, the cache as past_N / present_N
// [2, batch, heads, seq, head]; causal (unidirectional=1). -> LLMMatMul (+ bias) and a packed LLMAttention.
void ONNXNetBuilder::importMicrosoftAttention(const NodeProto& n)
{
    const int heads = intAttribute(n, "num_heads", 0);
    if (onnxIntAttribute(n, "unidirectional", 0) != 1)
        failNode(n, "only causal attention (unidirectional=1) is a decoder's");
    if (onnxIntAttribute(n, "do_rotary", 0) != 0)
        failNode(n, "do_rotary is not supported");
    if (hasInput(n, 5) || hasInput(n, 6))
        failNode(n, "attention_bias and past_sequence_length inputs are not supported");
    const int hidden = width(n, 0);
    const OnnxTensor& w = constantInput(n, 1);
    if (w.shape.size() != 2 || w.shape[0] != hidden || w.shape[1] <= 0 || w.shape[1] % 3 != 0 || w.shape[1] > INT_MAX)
        failNode(n, format("the weight must be a constant [%d, 3 * hidden] matrix", hidden));
    for (const auto& a : n.attribute())
        if (a.name() == "qkv_hidden_sizes" && (a.ints_size() != 3 || a.ints(0) != a.ints(1) || a.ints(1) != a.ints(2)))
            failNode(n, "qkv_hidden_sizes must be three equal sizes");
    const int qkv = (int)w.shape[1], dim = qkv / 3;
    if (heads <= 0 || dim % heads != 0)
        failNode(n, format("num_heads %d does not divide the width %d", heads, dim));
    Pin x = addMatMul(n, n.name() + "/qkv_proj", tensorInput(n, 0), hidden, w);
    if (hasInput(n, 2))
    {
        const Mat bias = constantInput(n, 2).toFloat().reshape(1, 1);
        if ((int)bias.total() != qkv)
            failNode(n, format("the bias must have %d values", qkv));
        x = addBias(n.name() + "/qkv_bias", x, bias);
    }
    addAttentionLayer(n, {x}, heads, heads, dim / heads, nullptr, onnxFloatAttribute(n, "scale", 0.f));
}
}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
