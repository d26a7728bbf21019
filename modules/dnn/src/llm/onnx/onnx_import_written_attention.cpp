// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: attention written out in operators, as torch.onnx.export writes
// Hugging Face's eager attention (optimum's causal-lm-with-past exports of GPT-2, Llama, Qwen2,
// Gemma, ...):
//
//   q, k, v = Split(x @ W_qkv) or three MatMuls; Reshape [b, s, heads, d]; Transpose(0, 2, 1, 3)
//   q, k    = q * cos + rotate_half(q) * sin      (rotate_half: Slice halves, Neg, Concat)
//   k, v    = Concat(past_key_values.N.key / value, k / v, axis 2)  -> present.N.key / value
//   k, v    = repeat_kv: Unsqueeze(2), Expand, Reshape                (grouped-query)
//   scores  = q @ Transpose(k, 0, 1, 3, 2) (* or / scalars, on q, k or the scores)
//             (+ mask, Where(mask, scores, min); Tanh soft-capping)
//   out     = Softmax(scores) @ v; Transpose(0, 2, 1, 3); Reshape [b, s, heads * d]
//
// Each step only records what it does (Value kinds HalfRow ... Probabilities); the final MatMul
// becomes one LLMAttention on the Net's paged KV cache with the recorded scale, soft-cap and
// rotary tables (evaluated from the graph: onnx_derived_values.cpp). The mask is checked to be
// the causal one. A step outside this pattern is an error naming its node.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

namespace {

std::vector<int64> intsAttribute(const NodeProto& n, const char* name)
{
    for (const auto& a : n.attribute())
        if (a.name() == name)
            return std::vector<int64>(a.ints().begin(), a.ints().end());
    return {};
}

bool sameRows(const Value& a, const Value& b)
{
    return a.pin.layer == b.pin.layer && a.pin.output == b.pin.output && a.columnOffset == b.columnOffset &&
           a.width == b.width;
}

// A constant scalar (a factor on q, k^T or the scores; a mask's fill value).
bool scalarConstant(const Value& c, double& out)
{
    if (c.kind != Value::Constant || c.symbolic || c.constant->total() != 1)
        return false;
    out = c.constant->at(0);
    return true;
}

// A 4-D activation view [b, s, heads, d] or [b, heads, s, d], plain or rotated (whole heads:
// not the rotated part of a partial rotary embedding).
bool isHeadView(const Value& v)
{
    return (v.kind == Value::Tensor || v.kind == Value::Rotated) && v.heads > 0 && v.partEnd == 0;
}

} // namespace

bool ONNXNetBuilder::importWrittenAttention(const NodeProto& n)
{
    const std::string& op = n.op_type();
    // (Transpose, Split, Slice and Concat: their own importers, which take these kinds too)
    if ((!n.domain().empty() && n.domain() != "ai.onnx") || op == "Transpose" || op == "Split" || op == "Slice" ||
        op == "Concat")
        return false;
    // Kinds of the inputs the importer defined (attention operators' mask inputs are not).
    auto kind = [&](int i) {
        return hasInput(n, i) && values_.count(n.input(i)) ? values_.at(n.input(i)).kind : Value::Constant;
    };
    auto anyKind = [&](Value::Kind k) {
        for (int i = 0; i < n.input_size(); i++)
            if (kind(i) == k)
                return true;
        return false;
    };
    if (op == "Neg" && kind(0) == Value::HalfRow)
    {
        Value v = input(n, 0);
        v.negated = !v.negated;
        define(n, 0, v);
    }
    else if ((op == "Unsqueeze" && kind(0) == Value::HalfRow) || (op == "Reshape" && kind(0) == Value::RotateHalf))
        importRotateEveryTwoStep(n);
    else if (anyKind(Value::Scores) || anyKind(Value::Probabilities))
    {
        if (op == "MatMul" && kind(0) == Value::Probabilities)
            importAttentionOutputMatMul(n);
        else if (!importScoresStep(n))
            failNode(n, "on attention scores only scaling by a constant, adding or applying (Where) the attention mask, "
                        "Tanh soft-capping, Softmax over the last axis and the MatMul with the values are supported");
    }
    else if (anyKind(Value::CacheKV))
    {
        if (op == "MatMul" && kind(1) == Value::CacheKV)
            importScoresMatMul(n);
        else
            importCacheKVStep(n);
    }
    else if ((op == "Mul" || op == "Add") && importRotaryStep(n))
        return true;
    else if (op == "Add" && (kind(0) == Value::Derived || kind(1) == Value::Derived))
        return importPositionEmbedding(n);
    else
        return false;
    return true;
}

// A Softmax over attention scores is a step of the attention written out (importScoresStep).
void ONNXNetBuilder::importSoftmax(const NodeProto& n)
{
    failNode(n, "Softmax is supported only over attention scores (q @ k^T of a written-out attention)");
}

// Transpose(0, 2, 1, 3) of a head view swaps the heads and the sequence axis (the Net's rows
// stay as they are); Transpose(0, 1, 3, 2) of the cached keys is k^T.
void ONNXNetBuilder::importTranspose(const NodeProto& n)
{
    Value v = input(n, 0);
    const std::vector<int64> perm = intsAttribute(n, "perm");
    if (isHeadView(v) && v.repeatStage == 0 && perm == std::vector<int64>{0, 2, 1, 3})
        v.headsMajor = !v.headsMajor;
    else if (v.kind == Value::CacheKV && v.repeatStage == 0 && perm == std::vector<int64>{0, 1, 3, 2})
        v.transposed = !v.transposed;
    else
        failNode(n, "on activations only Transpose(0, 2, 1, 3) of a [batch, seq, heads, d] view (a Reshape of the "
                    "features into heads) and Transpose(0, 1, 3, 2) of an attention's keys are supported");
    define(n, 0, v);
}

// Split of the features (a packed q|k|v projection): column ranges of the same rows, taken by
// the attention as its packed input.
void ONNXNetBuilder::importSplit(const NodeProto& n)
{
    const Value& x = input(n, 0);
    if (x.kind == Value::Tensor && x.qkvHeads > 0)
    {
        // qkv.chunk(3, dim=-1) of GPT-NeoX's per-head q|k|v (findPerHeadQKV checked the sizes)
        const Value qkv = x;  // (define() may move values_)
        for (int k = 0; k < n.output_size(); k++)
            define(n, k, perHeadQKVPart(n, qkv, (int64)k * qkv.qkvHeadDim));
        return;
    }
    if (x.kind != Value::Tensor || x.inner != 0 || x.columnOffset >= 0)
        failNode(n, "only a Split of a [batch, seq, features] activation's features is supported");
    const int64 axis = onnxIntAttribute(n, "axis", 0);
    if (axis != -1 && axis != 2)
        failNode(n, "only a Split of the features (axis -1 or 2) is supported on activations");
    std::vector<int64> sizes = intsAttribute(n, "split");
    if (sizes.empty() && hasInput(n, 1))
    {
        const OnnxTensor& s = constantInput(n, 1);
        for (int64 k = 0; k < s.total(); k++)
            sizes.push_back((int64)s.at(k));
    }
    const int parts = n.output_size();
    if (sizes.empty() && parts > 0 && x.width % parts == 0)
        sizes.assign(parts, x.width / parts);
    int64 total = 0;
    for (int64 s : sizes)
        total += s > 0 ? s : INT_MAX;
    if ((int)sizes.size() != parts || total != x.width)
        failNode(n, format("the split sizes must be positive and add up to the %d features", x.width));
    int offset = 0;
    for (int k = 0; k < parts; k++)
    {
        Value v = x;
        v.columnOffset = offset;
        v.sourceWidth = x.width;
        v.width = (int)sizes[k];
        define(n, k, v);
        offset += (int)sizes[k];
    }
}

// q, k or v (the values [start, start + d) of each head's q | k | v) of GPT-NeoX's fused
// projection, whose columns findPerHeadQKV regrouped as [q | k | v]: a packed q|k|v's column
// range, viewed as [batch, seq, heads, d] (or heads first where the view was transposed).
Value ONNXNetBuilder::perHeadQKVPart(const NodeProto& n, const Value& x, int64 start) const
{
    const int d = x.qkvHeadDim, heads = x.qkvHeads;
    if (x.heads != heads || innerOf(x) != 3 * d || x.columnOffset >= 0 || (start != 0 && start != d && start != 2 * d))
        failNode(n, format("a fused per-head q|k|v must be viewed as [batch, seq, %d, %d] (or transposed to "
                           "[batch, %d, seq, %d]) and sliced or split into q, k, v", heads, 3 * d, heads, 3 * d));
    Value v = x;
    v.qkvHeads = v.qkvHeadDim = 0;
    v.columnOffset = (int)(start / d) * heads * d;
    v.sourceWidth = x.width;
    v.width = heads * d;
    v.inner = d;
    return v;
}

// Slices of a head's row on the last axis: its halves (rotate_half); or the Slice that takes a
// padded attention's padding off (findUnpadSlices: the attention layer outputs what it keeps).
void ONNXNetBuilder::importSlice(const NodeProto& n)
{
    const Value& x = input(n, 0);
    if (x.kind == Value::Tensor && x.paddedHeadSize > 0)
    {
        Value v = x;
        v.paddedHeadSize = 0;
        define(n, 0, v);
        return;
    }
    auto ints = [&](int i) {
        std::vector<int64> r;
        const OnnxTensor& t = constantInput(n, i);
        for (int64 k = 0; k < t.total(); k++)  // INT64_MAX ends ("to the end") clamped before the cast
            r.push_back((int64)std::max(-1e15, std::min(1e15, t.at(k))));
        return r;
    };
    if (x.kind == Value::Tensor && x.qkvHeads > 0)
    {
        define(n, 0, perHeadQKVPart(n, x, ints(1).at(0)));
        return;
    }
    const bool part = x.kind == Value::HalfRow && !x.negated && x.everyOther == 0 && !x.pairAxis;
    if ((!part && (!isHeadView(x) || x.kind != Value::Tensor)) || !hasInput(n, 3))
        failNode(n, "on activations only Slices of the last axis of a [batch, heads, seq, d] view (rotate_half's "
                    "halves, a partial rotary embedding's part) are supported");
    const std::vector<int64> starts = ints(1), ends = ints(2), axes = ints(3);
    const std::vector<int64> steps = hasInput(n, 4) ? ints(4) : std::vector<int64>{1};
    // A Slice of a part: offsets within it
    const int base = part ? x.partStart : 0, d = part ? x.partEnd - x.partStart : innerOf(x);
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1 ||
        (steps[0] != 1 && steps[0] != 2) || (axes[0] != -1 && axes[0] != 3))
        failNode(n, "on activations only Slices of the last axis of a [batch, heads, seq, d] view (rotate_half's "
                    "halves, a partial rotary embedding's part, rotate_every_two's x[..., ::2] and x[..., 1::2]) are "
                    "supported");
    const int64 s = starts[0] < 0 ? starts[0] + d : starts[0], e = ends[0] < 0 ? ends[0] + d : std::min<int64>(ends[0], d);
    if (steps[0] == 2)
    {
        // GPT-J's rotate_every_two: the even or the odd elements of the (part of the) head
        if ((s != 0 && s != 1) || e < d - 1 || d % 2 != 0)
            failNode(n, format("a Slice [%lld, %lld) step 2 of a head's %d values: only x[..., ::2] and x[..., 1::2] "
                               "of all of them (rotate_every_two) are supported", (long long)s, (long long)e, d));
        Value v = x;
        v.kind = Value::HalfRow;
        v.partStart = base;
        v.partEnd = base + d;
        v.everyOther = 1 + (int)s;
        v.negated = false;
        define(n, 0, v);
        return;
    }
    if (s < 0 || e <= s || e > d)
        failNode(n, format("a Slice [%lld, %lld) of a head's %d values is empty or outside it", (long long)s,
                           (long long)e, d));
    Value v = x;
    v.kind = Value::HalfRow;
    v.partStart = base + (int)s;
    v.partEnd = base + (int)e;
    v.negated = false;
    define(n, 0, v);
}

// Concat(past, new) on the sequence axis: the keys or values the paged cache holds; or
// Concat(-second half, first half): rotate_half.
void ONNXNetBuilder::importConcat(const NodeProto& n)
{
    const int64 axis = onnxIntAttribute(n, "axis", 0);
    if (n.input_size() == 2 && input(n, 0).kind == Value::CacheInput && isHeadView(input(n, 1)) &&
        (axis == 2 || axis == -2))
    {
        Value v = input(n, 1);
        if (!v.headsMajor)
            failNode(n, "the new keys / values must be [batch, heads, seq, d] (transposed) to follow the past ones");
        if (v.kind == Value::Rotated && v.scale != 1.f)
            failNode(n, "keys scaled before they are cached are not supported");
        v.kind = Value::CacheKV;  // v.rotary stays: the keys are rotated by the attention
        v.pastName = n.input(0);
        define(n, 0, v);
        return;
    }
    if (n.input_size() == 2 && input(n, 0).kind == Value::HalfRow && input(n, 1).kind == Value::HalfRow &&
        input(n, 0).pairAxis && input(n, 1).pairAxis && (axis == -1 || axis == 4))
    {
        // rotate_every_two: stack((-x[..., 1::2], x[..., ::2]), -1), [.., d/2, 2] until flatten(-2)
        const Value &a = input(n, 0), &b = input(n, 1);
        if (!sameRows(a, b) || !a.negated || b.negated || a.everyOther != 2 || b.everyOther != 1 ||
            a.partStart != b.partStart || a.partEnd != b.partEnd)
            failNode(n, "only stack((-x[..., 1::2], x[..., ::2]), -1) of one row or of its rotated part "
                        "(rotate_every_two) is supported");
        Value v = b;
        v.kind = Value::RotateHalf;
        v.interleaved = true;
        v.everyOther = 0;
        define(n, 0, v);
        return;
    }
    if (n.input_size() == 2 && input(n, 0).kind == Value::HalfRow && input(n, 1).kind == Value::HalfRow &&
        input(n, 0).everyOther == 0 && input(n, 1).everyOther == 0 && (axis == -1 || axis == 3))
    {
        // rotate_half of the part [b.partStart, a.partEnd): -(second half), first half
        const Value &a = input(n, 0), &b = input(n, 1);
        if (!sameRows(a, b) || !a.negated || b.negated || b.partEnd != a.partStart ||
            a.partEnd - a.partStart != b.partEnd - b.partStart)
            failNode(n, "only Concat(-x2, x1) of the two halves of one row or of its rotated part (rotate_half) is "
                        "supported");
        Value v = b;
        v.kind = Value::RotateHalf;
        v.partEnd = a.partEnd;
        define(n, 0, v);
        return;
    }
    if (n.input_size() == 2 && input(n, 0).kind == Value::Rotated && input(n, 0).partEnd > 0 &&
        input(n, 1).kind == Value::HalfRow && (axis == -1 || axis == 3))
    {
        // Concat(rotated part [0, r), the rest [r, d)): the head rotated on its first r values
        const Value &a = input(n, 0), &b = input(n, 1);
        if (!sameRows(a, b) || b.negated || b.everyOther != 0 || b.pairAxis || b.partStart != a.partEnd ||
            b.partEnd != innerOf(a))
            failNode(n, "a partial rotary embedding must Concat the rotated part [0, r) with the rest [r, d) of the "
                        "same rows");
        Value v = a;
        v.partStart = v.partEnd = 0;
        define(n, 0, v);
        return;
    }
    failNode(n, "on activations only Concat(past keys / values, new ones) on the sequence axis and rotate_half's "
                "Concat(-x2, x1) are supported");
}

// GPT-J's rotate_every_two around the stack: Unsqueeze(-1) of x[..., ::2] or -x[..., 1::2],
// and flatten(-2) (a Reshape to [b, s, heads, -1] or [.., d]) of the stacked pairs.
void ONNXNetBuilder::importRotateEveryTwoStep(const NodeProto& n)
{
    Value v = input(n, 0);
    std::vector<int64> s = intsAttribute(n, "axes");
    if (s.empty() && hasInput(n, 1))
    {
        const Value& sv = input(n, 1);
        if (sv.kind != Value::Constant)
            failNode(n, "the shape must be a constant or computed from the activations' shapes");
        for (int64 k = 0; k < sv.constant->total(); k++)
            s.push_back((int64)sv.constant->at(k));
    }
    const int len = v.partEnd - v.partStart;
    if (isOp(n, "Unsqueeze"))
    {
        if (v.everyOther == 0 || v.pairAxis || (s != std::vector<int64>{-1} && s != std::vector<int64>{4}))
            failNode(n, "on a part of a head only Unsqueeze(-1) of x[..., ::2] or -x[..., 1::2] (rotate_every_two's "
                        "stack) is supported");
        v.pairAxis = true;
    }
    else
    {
        if (!v.pairAxis || s.size() != 4 || (s[3] != -1 && s[3] != len))
            failNode(n, format("rotate_every_two's stacked pairs must be flattened back to [batch, seq, heads, %d]",
                               len));
        v.pairAxis = false;
    }
    define(n, 0, v);
}

// Written-out rotary embedding: x * cos + rotate_half(x) * sin, cos and sin computed from the
// positions -> a Rotated value carrying the tables (the attention rotates q and k itself).
// Also q * scalar after rotation (scaled_dot_product_attention's export scales q and k).
bool ONNXNetBuilder::importRotaryStep(const NodeProto& n)
{
    const std::string& op = n.op_type();
    const Value a = input(n, 0), b = input(n, 1);
    if (op == "Mul")
    {
        for (int s = 0; s < 2; s++)
        {
            const Value& x = s ? b : a;
            const Value& c = s ? a : b;
            const std::string& cName = n.input(s ? 0 : 1);
            const bool rotaryPart = x.kind == Value::HalfRow && !x.negated && x.partStart == 0 && x.everyOther == 0 &&
                                    !x.pairAxis;
            if (c.kind == Value::Derived && ((x.kind == Value::Tensor && isHeadView(x)) ||
                                             (x.kind == Value::RotateHalf && !x.pairAxis) || rotaryPart))
            {
                Value v = x;
                v.kind = x.kind == Value::RotateHalf ? Value::RotarySin : Value::RotaryCos;
                v.tableName = cName;
                define(n, 0, v);
                return true;
            }
            double factor = 0;
            if (x.kind == Value::Rotated && scalarConstant(c, factor))
            {
                Value v = x;
                v.scale *= (float)factor;
                define(n, 0, v);
                return true;
            }
        }
        return false;
    }
    const Value* cosPart = a.kind == Value::RotaryCos ? &a : b.kind == Value::RotaryCos ? &b : nullptr;
    const Value* sinPart = a.kind == Value::RotarySin ? &a : b.kind == Value::RotarySin ? &b : nullptr;
    if (!cosPart || !sinPart)
        return false;
    // the rotated dimensions: the whole head, or its first partEnd (partial rotary)
    auto partEnd = [](const Value& v) { return v.partEnd > 0 ? v.partEnd : innerOf(v); };
    if (!sameRows(*cosPart, *sinPart) || cosPart->partStart != 0 || sinPart->partStart != 0 ||
        partEnd(*cosPart) != partEnd(*sinPart))
        failNode(n, "x * cos + rotate_half(y) * sin with x and y different values is not a rotary embedding");
    const int d = partEnd(*cosPart);
    const int positions = std::min(contextLength(), (int)kMaxDerivedPositions);
    const Mat cosTable = positionTable(n, cosPart->tableName, d, positions);
    const Mat sinTable = positionTable(n, sinPart->tableName, d, positions);
    auto tables = std::make_shared<RotaryTables>();
    if (sinPart->interleaved)
    {
        // rotate_every_two pairs elements 2i and 2i + 1 (LLMAttention's NORM pairs), so both hold
        // the same angle (repeat_interleave(freqs, 2)).
        tables->cos.create(positions, d / 2, CV_32F);
        tables->sin.create(positions, d / 2, CV_32F);
        for (int i = 0; i < d / 2; i++)
        {
            if (cv::norm(cosTable.col(2 * i), cosTable.col(2 * i + 1), NORM_INF) != 0 ||
                cv::norm(sinTable.col(2 * i), sinTable.col(2 * i + 1), NORM_INF) != 0)
                failNode(n, "the cos / sin tables of a rotary embedding written out with rotate_every_two must repeat "
                            "each value twice (repeat_interleave(freqs, 2), as rotate_every_two pairs them)");
            cosTable.col(2 * i).copyTo(tables->cos.col(i));
            sinTable.col(2 * i).copyTo(tables->sin.col(i));
        }
        tables->neox = false;
    }
    else
    {
        // rotate_half pairs element i with i + d/2, so both halves of each row hold the same angle.
        const Range first(0, d / 2), second(d / 2, d);
        if (cv::norm(cosTable.colRange(first), cosTable.colRange(second), NORM_INF) != 0 ||
            cv::norm(sinTable.colRange(first), sinTable.colRange(second), NORM_INF) != 0)
            failNode(n, "the cos / sin tables of a rotary embedding written out must repeat each row's first half in "
                        "its second (cat(freqs, freqs), as rotate_half pairs them)");
        tables->cos = cosTable.colRange(first).clone();
        tables->sin = sinTable.colRange(first).clone();
        tables->neox = true;
    }
    tables->cosName = cosPart->tableName;
    tables->sinName = sinPart->tableName;
    Value v = *cosPart;
    v.kind = Value::Rotated;
    v.interleaved = false;
    if (v.partEnd == innerOf(v))
        v.partEnd = 0;  // a "part" that is the whole head
    v.rotary = tables;
    v.tableName.clear();
    define(n, 0, v);
    return true;
}

// repeat_kv on the cached keys / values (Unsqueeze(2), Expand, Reshape back to 4-D) and scalar
// factors on k^T.
void ONNXNetBuilder::importCacheKVStep(const NodeProto& n)
{
    const std::string& op = n.op_type();
    Value v = input(n, 0);
    if (v.kind != Value::CacheKV)
        failNode(n, "the past keys / values concatenated with the new ones are supported only as an attention's "
                    "k^T and v (through repeat_kv and scalar factors)");
    const int kvHeads = v.width / innerOf(v);
    auto shapeInput = [&]() {
        std::vector<int64> s;
        const Value& sv = input(n, 1);
        if (sv.kind != Value::Constant)
            failNode(n, "the shape must be a constant or computed from the activations' shapes");
        for (int64 k = 0; k < sv.constant->total(); k++)
            s.push_back((int64)sv.constant->at(k));
        return s;
    };
    if (op == "Unsqueeze" && v.repeatStage == 0 && !v.transposed)
    {
        std::vector<int64> axes = intsAttribute(n, "axes");
        if (axes.empty() && hasInput(n, 1))
            axes = shapeInput();
        if (axes != std::vector<int64>{2})
            failNode(n, "on cached keys / values only Unsqueeze(axes = [2]) of repeat_kv is supported");
        v.repeatStage = 1;
    }
    else if (op == "Expand" && v.repeatStage == 1)
    {
        const std::vector<int64> s = shapeInput();
        if (s.size() != 5 || s[2] <= 0 || s[2] > 4096 || (s[1] != kvHeads && s[1] != 1 && s[1] != -1))
            failNode(n, format("repeat_kv must expand [batch, %d, 1, seq, d] to [batch, %d, n_rep, seq, d]", kvHeads, kvHeads));
        v.repeat = (int)s[2];
        v.repeatStage = 2;
    }
    else if (op == "Reshape" && v.repeatStage == 2)
    {
        const std::vector<int64> s = shapeInput();
        if (s.size() != 4 || (s[1] != (int64)kvHeads * v.repeat && s[1] != -1))
            failNode(n, format("repeat_kv must reshape to [batch, %d, seq, d]", kvHeads * v.repeat));
        v.repeatStage = 0;
    }
    else if (double factor = 0; op == "Mul" && v.repeatStage == 0 && scalarConstant(input(n, 1), factor))
        v.scale *= (float)factor;
    else
        failNode(n, "the past keys / values concatenated with the new ones are supported only as an attention's "
                    "k^T and v (through repeat_kv: Unsqueeze(2), Expand, Reshape; and scalar factors)");
    define(n, 0, v);
}

// q @ k^T -> Scores.
void ONNXNetBuilder::importScoresMatMul(const NodeProto& n)
{
    const Value& q = input(n, 0);
    const Value& k = input(n, 1);
    if (!isHeadView(q) || !q.headsMajor)
        failNode(n, "the query of q @ k^T must be a [batch, heads, seq, d] view");
    if (!k.transposed || k.repeatStage != 0)
        failNode(n, "the keys of q @ k^T must be the cached keys transposed (0, 1, 3, 2)");
    if (innerOf(q) != innerOf(k))
        failNode(n, format("query and key head sizes differ (%d, %d)", innerOf(q), innerOf(k)));
    auto a = std::make_shared<WrittenAttention>();
    a->query = std::make_shared<Value>(q);
    a->key = std::make_shared<Value>(k);
    a->scale = q.scale * k.scale;
    Value v;
    v.kind = Value::Scores;
    v.attention = a;
    define(n, 0, v);
}

// Scaling, masking and soft-capping of the scores, and the softmax.
bool ONNXNetBuilder::importScoresStep(const NodeProto& n)
{
    const std::string& op = n.op_type();
    auto isScores = [&](int i) { return hasInput(n, i) && input(n, i).kind == Value::Scores; };
    auto scalar = [&](int i, double& out) { return scalarConstant(input(n, i), out); };
    const int s = isScores(0) ? 0 : 1;
    if (!isScores(s))
        return false;
    auto a = std::make_shared<WrittenAttention>(*input(n, s).attention);
    double c = 0;
    if ((op == "Div" || op == "Mul") && n.input_size() == 2 && scalar(1 - s, c) && !(op == "Div" && s == 1) &&
        c > 0 && std::isfinite(c) && a->softcap == 0.f)
    {
        if (a->pendingTanh && op == "Mul")
        {
            a->softcap = (float)c;  // c * tanh(t * qk): the layer's softcap c with scale t * c
            a->scale = a->tanhScale * (float)c;
            a->pendingTanh = false;
        }
        else if (a->pendingTanh)
            return false;
        else
            a->scale = op == "Div" ? (float)(a->scale / c) : (float)(a->scale * c);
    }
    else if (op == "Tanh" && !a->pendingTanh && a->softcap == 0.f)
    {
        a->pendingTanh = true;
        a->tanhScale = a->scale;
    }
    else if (op == "Add" && n.input_size() == 2 && input(n, 1 - s).kind == Value::Derived)
    {
        a->masks.push_back({WrittenAttention::Additive, n.input(1 - s)});
        if (a->firstMaskNode.empty())
            a->firstMaskNode = onnxNodeLabel(n);
    }
    else if (op == "Where" && n.input_size() == 3 && s >= 1 && input(n, 0).kind == Value::Derived)
    {
        const int other = s == 1 ? 2 : 1;
        if (!scalar(other, c) || c > -1e4)
            failNode(n, "Where on attention scores must replace the masked ones by a large negative constant");
        a->masks.push_back({s == 1 ? WrittenAttention::KeepWhere : WrittenAttention::DropWhere, n.input(0)});
        if (a->firstMaskNode.empty())
            a->firstMaskNode = onnxNodeLabel(n);
    }
    else if (op == "Max" && n.input_size() == 2 && scalar(1 - s, c) && c <= -1e4)
    {
        // clamping at finfo.min keeps the masked scores masked
    }
    else if (op == "Softmax" && s == 0 && (onnxIntAttribute(n, "axis", -1) == -1 || onnxIntAttribute(n, "axis", -1) == 3))
    {
        if (a->pendingTanh)
            failNode(n, "a Tanh on the scores must be followed by the soft-cap factor before the softmax");
        Value v;
        v.kind = Value::Probabilities;
        v.attention = a;
        define(n, 0, v);
        return true;
    }
    else
        return false;
    Value v;
    v.kind = Value::Scores;
    v.attention = a;
    define(n, 0, v);
    return true;
}

// softmax(scores) @ v -> LLMAttention on the paged cache; the result is the [batch, heads, seq, d] view.
void ONNXNetBuilder::importAttentionOutputMatMul(const NodeProto& n)
{
    const WrittenAttention& a = *input(n, 0).attention;
    const Value& v = input(n, 1);
    if (v.kind != Value::CacheKV || v.transposed || v.repeatStage != 0 || v.scale != 1.f || v.rotary)
        failNode(n, "softmax(scores) must be multiplied by the cached values (Concat of the past values and the new ones)");
    const Value &q = *a.query, &k = *a.key;
    checkCausalMask(n, a);
    const int headDim = innerOf(q);
    const int heads = q.width / headDim, kvHeads = k.width / headDim;
    if (v.width != k.width || innerOf(v) != headDim || v.repeat != k.repeat)
        failNode(n, "keys and values must have the same heads, head size and repeat_kv");
    if (heads != kvHeads * k.repeat)
        failNode(n, format("the query has %d heads, the keys %d repeated %d times", heads, kvHeads, k.repeat));
    if ((q.kind == Value::Rotated) != (bool)k.rotary ||
        (q.kind == Value::Rotated && !q.rotary->sameAs(*k.rotary)))
        failNode(n, "query and key must be rotated by the same rotary tables, or neither");
    std::vector<Pin> inputs;
    const bool packed = q.columnOffset == 0 && k.columnOffset == q.width && v.columnOffset == q.width + k.width &&
                        q.sourceWidth == q.width + 2 * k.width && q.pin.layer == k.pin.layer && k.pin.layer == v.pin.layer && q.pin.output == k.pin.output &&
                        k.pin.output == v.pin.output;
    if (packed)
        inputs.push_back(q.pin);
    else if (q.columnOffset >= 0 || k.columnOffset >= 0 || v.columnOffset >= 0)
        failNode(n, "query, key and value split from one projection must be its columns in the order q, k, v");
    else
        inputs = {q.pin, k.pin, v.pin};
    addAttentionLayer(n, inputs, heads, kvHeads, headDim, q.rotary, a.scale, a.softcap);
    Value& out = values_.at(n.output(0));
    out.inner = headDim;
    out.heads = heads;
    out.headsMajor = true;
}

// x + a learned position embedding: Gather(table, positions) with positions computed from the
// cache's inputs -> LLMPositionEmbedding (the positions come from the KV cache).
bool ONNXNetBuilder::importPositionEmbedding(const NodeProto& n)
{
    const int d = input(n, 0).kind == Value::Derived ? 0 : 1;
    const Pin x = tensorInput(n, 1 - d);
    const int w = values_.at(n.input(1 - d)).width;
    auto producer = graph_.producer.find(n.input(d));
    const NodeProto* gather = producer == graph_.producer.end() ? nullptr : &f_.graph().node(producer->second);
    if (!gather || gather->op_type() != "Gather" || gather->input_size() != 2 || onnxIntAttribute(*gather, "axis", 0) != 0 ||
        input(*gather, 0).kind != Value::Constant)
        failNode(n, "adds to activations a value computed from the positions or the attention mask that is not a "
                    "position-embedding lookup (Gather of a constant table by the positions)");
    const OnnxTensor& table = constantInput(*gather, 0);
    const int offset = positionOffset(*gather, gather->input(1));
    if (table.shape.size() != 2 || table.shape[1] != w || offset >= table.shape[0])
        failNode(n, format("the position embedding table must be [positions, %d]", w));
    OnnxTensor rows = table;
    const size_t rowBytes = (size_t)table.shape[1] * onnxElementSize(table.dataType);
    rows.data = table.data + offset * rowBytes;
    rows.bytes = table.bytes - offset * rowBytes;
    rows.shape[0] -= offset;
    int dim = 0;
    const Pin out = addEmbedding(*gather, n.name(), "LLMPositionEmbedding", x, rows, dim);
    positionLayers_.push_back(out.layer);
    defineTensor(n, 0, out, w);
    return true;
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
