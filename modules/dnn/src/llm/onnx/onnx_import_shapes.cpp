// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: shape and data-movement operators.
//
// Nodes whose inputs are all constants are computed once, at import (constant folding, by the
// folder table's functions: onnx_import_fold_shapes.cpp, onnx_import_fold_arithmetic.cpp):
// shape arithmetic (Shape, Gather, Concat, Slice, Squeeze, Unsqueeze, Reshape, Expand, Range,
// ConstantOfShape, Equal, Where, Transpose, Cast) and arithmetic on weights (Gemma's norm scale
// written as Add(w, 1), Pow, Sqrt, Neg). A Shape of an activation is a shape tensor with placeholders for
// the run-time sizes. An activation stays 2-D in the Net (tokens x
// features); a Reshape of it that keeps each token's features together (Qwen3's
// [batch, seq * heads, head_dim] for per-head norms, [batch, seq, heads, head_dim], and back) is
// a view: the same rows, with `inner` recording the ONNX tensor's last dimension.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

bool ONNXNetBuilder::foldConstantNode(const NodeProto& n)
{
    const std::string& op = n.op_type();
    const ConstantFolder fold = findConstantFolder(n);
    if (!fold)
        return false;
    std::vector<Folded> in(n.input_size());
    std::vector<bool> present(n.input_size(), false);
    if (op == "Shape" && hasInput(n, 0) && input(n, 0).kind != Value::Constant)
        return foldShapeOfActivation(n);
    for (int i = 0; i < n.input_size(); i++)
    {
        if (!hasInput(n, i))
            continue;
        const Value& v = input(n, i);
        if (v.kind != Value::Constant)
            return false;
        if (v.symbolic)
        {
            // Shape entries that stand for run-time sizes may be moved around (Gather, Slice,
            // Squeeze, Unsqueeze, Concat, Reshape, Cast to an integer); a node computing with them
            // is not folded: its result is Derived (importDerived).
            // Equal and Where as torch exports expand(-1, ...): a size compared with a number <= 0
            // is never equal to it (foldEqual; other comparisons leave the node Derived).
            static const std::set<std::string> kMoving = {"Identity", "Cast", "Gather", "Slice", "Squeeze",
                                                          "Unsqueeze", "Concat", "Reshape", "Flatten"};
            const int to = (int)onnxIntAttribute(n, "to", ONNX_INT64);
            const bool moved = kMoving.count(op) && (op == "Concat" || i == 0) && !(op == "Cast" && isFloatType(to));
            if (!moved && op != "Equal" && !(op == "Where" && i > 0) && op != "Shape" && op != "Size")
                return false;
        }
        in[i] = foldedOf(n, i, *v.constant);
        present[i] = true;
    }
    FoldContext context(f_, n, in, present);
    const Folded r = fold(context);
    if (context.undecidable)
        return false;  // depends on the run-time sizes: Derived
    bool symbolic = false;
    for (double x : r.v)
        symbolic = symbolic || isSymbol(x);

    // Stored as float32 or int64 (what the importer's readers take).
    auto buf = std::make_shared<std::vector<uchar>>(r.v.size() * (r.isFloat ? 4 : 8));
    for (size_t k = 0; k < r.v.size(); k++)
    {
        if (r.isFloat)
        {
            const float f = (float)r.v[k];
            std::memcpy(buf->data() + 4 * k, &f, 4);
        }
        else
        {
            const int64_t i = (int64_t)r.v[k];
            std::memcpy(buf->data() + 8 * k, &i, 8);
        }
    }
    defineConstant(n, r.isFloat ? ONNX_FLOAT : ONNX_INT64, r.shape, buf, symbolic);
    return true;
}

Folded ONNXNetBuilder::foldedOf(const NodeProto& n, int i, const OnnxTensor& t)
{
    if (t.total() > kMaxFoldedElements)
        failNode(n, format("input %d has %lld elements, more than constant folding takes", i, (long long)t.total()));
    Folded f;
    f.shape = t.shape;
    f.isFloat = isFloatType(t.dataType);
    f.v.resize((size_t)t.total());
    try
    {
        for (int64 k = 0; k < t.total(); k++)
            f.v[(size_t)k] = t.at(k);
    }
    catch (const cv::Exception& e)
    {
        failNode(n, e.err);
    }
    return f;
}

// Output 0 of `n` becomes a constant tensor holding `bytes` (symbolic: it stands for run-time sizes).
void ONNXNetBuilder::defineConstant(const NodeProto& n, int dataType, const std::vector<int64>& shape,
                                    const std::shared_ptr<std::vector<uchar>>& bytes, bool symbolic)
{
    auto t = std::make_shared<OnnxTensor>();
    t->name = n.output_size() ? n.output(0) : std::string();
    t->dataType = dataType;
    t->shape = shape;
    t->data = bytes->data();
    t->bytes = bytes->size();
    t->owner = bytes;
    Value v;
    v.kind = Value::Constant;
    v.constant = t;
    v.symbolic = symbolic;
    define(n, 0, v);
}

// Shape of an activation: [batch, seq, width], of a view [batch, seq, heads, row] (or
// [batch, heads, seq, row] transposed), of the token ids [batch, seq], of the cache's keys or
// values [batch, heads, past + seq, row]: a shape tensor with placeholders for the sizes the Net
// knows only at run time (kBatchDim, kTokenDim, kTotalDim). Other inputs (the mask, positions,
// past keys) make the result Derived: false.
bool ONNXNetBuilder::foldShapeOfActivation(const NodeProto& n)
{
    const Value& x = input(n, 0);
    std::vector<int64> dims;
    if (x.kind == Value::TokenIds)
        dims = {kBatchDim, kTokenDim};
    else if (x.kind == Value::CacheKV)
    {
        const int kvHeads = x.width / innerOf(x) * x.repeat;
        dims = {kBatchDim, kvHeads, kTotalDim, innerOf(x)};
        if (x.transposed)
            std::swap(dims[2], dims[3]);
    }
    else if (x.kind == Value::CacheInput || x.kind == Value::Derived)
        return false;
    else
    {
        // (a part of each head in a written-out rotary embedding: its own length)
        const bool headPart = (x.kind == Value::HalfRow || x.kind == Value::RotateHalf || x.kind == Value::Rotated) &&
                              x.heads > 0 && x.partEnd > 0;
        if (x.kind != Value::Tensor && x.kind != Value::Rotated && !headPart)
            tensorInput(n, 0, true);  // computes a pending sigmoid; errors for other kinds
        if (x.flatRows)
            failNode(n, "the Shape of [batch * seq, features] rows is not supported");
        // (rotate_every_two: x[..., ::2] has half of them; stacked pairs [.., d/2, 2])
        int64 last = headPart ? x.partEnd - x.partStart : innerOf(x);
        if (headPart && (x.everyOther != 0 || x.pairAxis))
            last /= 2;
        if (x.heads > 0)
            dims = x.headsMajor ? std::vector<int64>{kBatchDim, x.heads, kTokenDim, last}
                                : std::vector<int64>{kBatchDim, kTokenDim, x.heads, last};
        else if (x.inner != 0)
            failNode(n, "the Shape of a [batch, seq * rows, row] view is not supported");
        else
            dims = {kBatchDim, kTokenDim, (int64)x.width};
        if (headPart && x.pairAxis)
            dims.push_back(2);
    }
    const int64 rank = (int64)dims.size();
    int64 s = onnxIntAttribute(n, "start", 0), e = onnxIntAttribute(n, "end", rank);
    s = std::min(std::max(s < 0 ? s + rank : s, (int64)0), rank);
    e = std::min(std::max(e < 0 ? e + rank : e, (int64)0), rank);
    auto buf = std::make_shared<std::vector<uchar>>();
    for (int64 k = s; k < e; k++)
    {
        const size_t at = buf->size();
        buf->resize(at + 8);
        const int64_t d = dims[(size_t)k];
        std::memcpy(buf->data() + at, &d, 8);
    }
    defineConstant(n, ONNX_INT64, {(int64)(buf->size() / 8)}, buf, true);
    return true;
}

// The token ids [batch, seq] reshaped to [-1, seq] (GPT-2's input_ids.view(-1, input_shape[-1])):
// still the token ids.
void ONNXNetBuilder::importTokenIdsReshape(const NodeProto& n)
{
    const Value& s = input(n, 1);
    if (n.op_type() != "Reshape" || s.kind != Value::Constant || s.constant->total() != 2 ||
        !(s.constant->at(1) == (double)kTokenDim || (s.constant->at(1) == 0 && s.constant->at(0) == 0)) ||
        !(s.constant->at(0) == -1 || s.constant->at(0) == 0 || s.constant->at(0) == (double)kBatchDim))
        failNode(n, "the token ids may only be reshaped to [batch, seq] (e.g. [-1, seq])");
    define(n, 0, input(n, 0));
}

void ONNXNetBuilder::importReshape(const NodeProto& n)
{
    if (input(n, 0).kind == Value::TokenIds)
        return importTokenIdsReshape(n);
    if (input(n, 0).kind == Value::Tensor && input(n, 0).paddedHeadSize > 0)
        return importPaddedHeadsReshape(n);
    if (input(n, 0).kind != Value::Tensor)
        tensorInput(n, 0, true);  // computes a pending sigmoid; the error for other kinds
    const Value x = input(n, 0);  // a copy: a Split's column range carries over to the result
    if (x.headsMajor)
        failNode(n, "a Reshape of a [batch, heads, seq, d] view (transpose it back to [batch, seq, heads, d] first)");
    const int w = x.width;
    const std::string& op = n.op_type();
    std::vector<int64> target;
    if (op == "Reshape")
    {
        if (onnxIntAttribute(n, "allowzero", 0) != 0)
            failNode(n, "allowzero is not supported on activations");
        const Value& sv = input(n, 1);
        if (sv.kind == Value::Derived)
            failNode(n, "the shape is computed with the batch size, token count or past length (by node " + sv.origin +
                        "); only moving the batch size and token count (Gather, Slice, Squeeze, Unsqueeze, Concat) into "
                        "a Reshape's shape is supported, not computing with them");
        if (sv.kind != Value::Constant)
            failNode(n, "the shape must be a constant or computed from the activations' shapes");
        const OnnxTensor& s = *sv.constant;
        // [-1, features]: the tokens of all sequences as rows (Hugging Face's Conv1D before its
        // Gemm); the Net's rows already are that. Back to [batch, seq, ...] only with the sizes
        // taken from a Shape.
        if (s.total() == 2 && s.at(0) == -1 && s.at(1) == w && x.inner == 0 && x.columnOffset < 0)
        {
            Value flat = x;
            flat.flatRows = true;
            define(n, 0, flat);
            return;
        }
        if (x.flatRows && !(sv.symbolic && s.total() >= 3 && s.at(0) == (double)kBatchDim && s.at(1) == (double)kTokenDim))
            failNode(n, "[batch * seq, features] rows may only be reshaped back to [batch, seq, ...] with the sizes "
                        "taken from a Shape of the activation");
        for (int64 k = 0; k < s.total(); k++)
        {
            int64 d = (int64)s.at(k);
            // The batch size and the token count from a Shape of the input: kept where they are
            // (as 0 would keep them).
            if (sv.symbolic && (d == kBatchDim || d == kTokenDim))
            {
                if (k != (d == kBatchDim ? 0 : 1))
                    failNode(n, "the shape moves the batch or sequence dimension (only [batch, seq, ...] is supported)");
                d = 0;
            }
            // [-1, seq, ...] with the token count from a Shape: the -1 is the batch (GPT-2's output_shape).
            if (k == 0 && d == -1 && sv.symbolic && s.total() >= 3 && s.at(1) == (double)kTokenDim)
                d = 0;
            target.push_back(d);
        }
    }
    else if (op == "Squeeze" || op == "Unsqueeze")
    {
        // Only around the feature axis of [batch, seq, ..., last]: adding or removing a unit
        // dimension before the last one leaves the rows as they are.
        std::vector<int64> axes;
        for (const auto& a : n.attribute())
            if (a.name() == "axes")
                axes.assign(a.ints().begin(), a.ints().end());
        if (axes.empty() && hasInput(n, 1))
        {
            const OnnxTensor& s = constantInput(n, 1);
            for (int64 k = 0; k < s.total(); k++)
                axes.push_back((int64)s.at(k));
        }
        for (int64 a : axes)
            if (a == -1 || (op == "Squeeze" && axes.empty()) || x.heads > 0)
                failNode(n, "only unit dimensions before the feature axis of a [batch, seq, features] activation "
                            "can be added or removed");
        define(n, 0, x);
        return;
    }
    else
        failNode(n, "operator not supported on activations");
    // The input is [batch, seq, ...] with `w` features per token in rows of `inner`. The result
    // keeps batch and sequence (0, 0 or 0, -1 leading) and ends in a row size that divides w.
    if (target.size() < 2 || target[0] != 0)
        failNode(n, "on activations only shapes that keep the batch dimension (a leading 0) are supported");
    const int64 last = target.back();
    int64 rows = 1;
    bool tokenAxis = false;
    for (size_t k = 1; k + 1 < target.size(); k++)
    {
        if (target[k] == -1 || (k == 1 && target[k] == 0))
            tokenAxis = true;
        else if (target[k] > 0)
            rows *= target[k];
        else
            failNode(n, "unsupported shape entry on activations");
    }
    int64 row = last;
    if (last == -1)
        row = rows > 0 && w % rows == 0 && tokenAxis ? w / rows : -1;
    if (!tokenAxis || row <= 0 || w % row != 0 || (last != -1 && rows * row > w) || (rows > 1 && rows * row != w))
        failNode(n, format("the shape must keep each token's %d features together (e.g. [0, -1, d] or [0, 0, h, d] "
                           "with d dividing %d)", w, w));
    Value out = x;
    out.flatRows = false;
    out.inner = row == w ? 0 : (int)row;
    out.heads = target.size() == 4 ? (int)(w / row) : 0;
    define(n, 0, out);
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
