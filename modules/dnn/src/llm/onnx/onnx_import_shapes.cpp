// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: shape and data-movement operators.
//
// Nodes whose inputs are all constants are computed once, at import (constant folding): shape
// arithmetic (Shape, Gather, Concat, Slice, Squeeze, Unsqueeze, Reshape, Expand, Range,
// ConstantOfShape, Equal, Where, Transpose, Cast) and arithmetic on weights (Gemma's norm
// scale written as Add(w, 1), Pow, Sqrt, Neg). An activation stays 2-D in the Net (tokens x
// features); a Reshape of it that keeps each token's features together (Qwen3's
// [batch, seq * heads, head_dim] for per-head norms, [batch, seq, heads, head_dim], and back) is
// a view: the same rows, with `inner` recording the ONNX tensor's last dimension.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

#include <cmath>
#include <cstring>
#include <numeric>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

namespace {

// Folding works on small tensors only (shapes, scalars, norm weights): a larger result is
// an error, not an allocation a hostile file chooses.
constexpr int64 kMaxFoldedElements = int64(1) << 22;

bool isFloatType(int t)
{
    return t == ONNX_FLOAT || t == ONNX_FLOAT16 || t == ONNX_BFLOAT16 || t == ONNX_DOUBLE;
}

int64 shapeTotal(const std::vector<int64>& s)
{
    int64 n = 1;
    for (int64 d : s)
    {
        if (d < 0 || (d > 0 && n > kMaxFoldedElements / d))
            return -1;
        n *= d;
    }
    return n;
}

std::vector<int64> stridesOf(const std::vector<int64>& s)
{
    std::vector<int64> st(s.size(), 1);
    for (int i = (int)s.size() - 2; i >= 0; i--)
        st[i] = st[i + 1] * s[i + 1];
    return st;
}

// Offset in `from` (numpy-broadcast to `to`) of the element at flat index `i` of `to`.
int64 broadcastOffset(int64 i, const std::vector<int64>& to, const std::vector<int64>& from)
{
    int64 off = 0, stride = 1;
    for (int d = (int)to.size() - 1, e = (int)from.size() - 1; d >= 0; d--, e--)
    {
        const int64 idx = i % to[d];
        i /= to[d];
        if (e >= 0)
        {
            if (from[e] != 1)
                off += idx * stride;
            stride *= from[e];
        }
    }
    return off;
}

// float32 rounded to bfloat16 (nearest even), as a Cast to bfloat16 does.
float roundToBFloat16(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) <= 0x7f800000u)  // not NaN
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    std::memcpy(&f, &u, 4);
    return f;
}

} // namespace

bool ONNXNetBuilder::isFoldableOperator(const NodeProto& n)
{
    static const std::set<std::string> kFoldable = {
        "Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Gather", "Slice", "Shape",
        "Size", "Expand", "Where", "Range", "ConstantOfShape", "Equal", "Less", "Greater", "LessOrEqual",
        "GreaterOrEqual", "Not", "And", "Or", "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Neg", "Reciprocal",
        "Transpose", "MatMul", "Cos", "Sin", "Trilu", "Min", "Max", "CumSum", "ScatterND"};
    return (n.domain().empty() || n.domain() == "ai.onnx") && kFoldable.count(n.op_type());
}

bool ONNXNetBuilder::foldConstantNode(const NodeProto& n)
{
    const std::string& op = n.op_type();
    if (!isFoldableOperator(n))
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
            // is never equal to it (foldOperator; other comparisons leave the node Derived).
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
    foldUndecidable_ = false;
    const Folded r = foldOperator(n, in, present);
    if (foldUndecidable_)
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

Folded ONNXNetBuilder::foldOperator(const NodeProto& n, const std::vector<Folded>& in, const std::vector<bool>& present)
{
    const std::string& op = n.op_type();
    auto need = [&](int i) -> const Folded& {
        if (i >= (int)in.size() || !present[i])
            failNode(n, format("input %d is missing", i));
        return in[i];
    };
    auto ints = [&](int i) {
        std::vector<int64> r;
        for (double x : need(i).v)  // INT64_MAX ("to the end") is 2^63 as a double: clamped before the cast
            r.push_back((int64)std::max(-4.6e18, std::min(4.6e18, x)));
        return r;
    };
    auto axisOf = [&](int64 a, int64 rank) -> int64 {
        if (a < -rank || a >= rank)
            failNode(n, format("axis %lld is out of range for rank %lld", (long long)a, (long long)rank));
        return a < 0 ? a + rank : a;
    };
    auto checkedTotal = [&](const std::vector<int64>& s) {
        const int64 t = shapeTotal(s);
        if (t < 0)
            failNode(n, "the folded result would be larger than constant folding takes (or has a negative dimension)");
        return t;
    };
    auto intsAttr = [&](const char* name, std::vector<int64>& out) {
        for (const auto& a : n.attribute())
            if (a.name() == name)
            {
                out.assign(a.ints().begin(), a.ints().end());
                return true;
            }
        return false;
    };

    Folded r;
    if (op == "Identity")
        r = need(0);
    else if (op == "Cast")
    {
        r = need(0);
        const int to = (int)onnxIntAttribute(n, "to", ONNX_FLOAT);
        r.isFloat = isFloatType(to);
        if (to == ONNX_BOOL)
            for (double& x : r.v)
                x = x != 0;
        else if (!r.isFloat)
            for (double& x : r.v)
                x = std::trunc(x);
        else if (to == ONNX_FLOAT16 || to == ONNX_BFLOAT16 || to == ONNX_FLOAT)
            for (double& x : r.v)
                x = to == ONNX_FLOAT16 ? (float)hfloat((float)x) : to == ONNX_BFLOAT16 ? roundToBFloat16((float)x) : (float)x;
    }
    else if (op == "Shape" || op == "Size")
    {
        const Folded& x = need(0);
        r.isFloat = false;
        if (op == "Size")
            r.v = {(double)x.total()};
        else
        {
            const int64 rank = (int64)x.shape.size();
            int64 s = onnxIntAttribute(n, "start", 0), e = onnxIntAttribute(n, "end", rank);
            s = std::min(std::max(s < 0 ? s + rank : s, (int64)0), rank);
            e = std::min(std::max(e < 0 ? e + rank : e, (int64)0), rank);
            for (int64 k = s; k < e; k++)
                r.v.push_back((double)x.shape[(size_t)k]);
            r.shape = {(int64)r.v.size()};
        }
    }
    else if (op == "Reshape" || op == "Squeeze" || op == "Unsqueeze" || op == "Flatten")
    {
        r = need(0);
        const std::vector<int64> s = r.shape;
        std::vector<int64> axes;
        if (op != "Reshape" && op != "Flatten" && !intsAttr("axes", axes) && hasInput(n, 1))
            axes = ints(1);
        if (op == "Reshape")
        {
            std::vector<int64> t = ints(1);
            const bool allowZero = onnxIntAttribute(n, "allowzero", 0) != 0;
            int minus = -1;
            int64 known = 1;
            for (size_t k = 0; k < t.size(); k++)
            {
                if (t[k] == 0 && !allowZero)
                {
                    if (k >= s.size())
                        failNode(n, "a 0 in the shape copies a dimension the input does not have");
                    t[k] = s[k];
                }
                if (t[k] == -1)
                {
                    if (minus >= 0)
                        failNode(n, "the shape has more than one -1");
                    minus = (int)k;
                }
                else if (t[k] < 0)
                    failNode(n, "the shape has a negative dimension");
                else
                    known *= std::max<int64>(t[k], 1);
            }
            if (minus >= 0)
                t[(size_t)minus] = known > 0 ? r.total() / known : 0;
            if (checkedTotal(t) != r.total())
                failNode(n, "the shape does not hold the input's elements");
            r.shape = t;
        }
        else if (op == "Flatten")
        {
            const int64 axis = onnxIntAttribute(n, "axis", 1);
            const int64 a = axis < 0 ? axis + (int64)s.size() : axis;
            if (a < 0 || a > (int64)s.size())
                failNode(n, "axis is out of range");
            int64 outer = 1;
            for (int64 k = 0; k < a; k++)
                outer *= s[(size_t)k];
            r.shape = {outer, outer ? r.total() / outer : 0};
        }
        else if (op == "Squeeze")
        {
            std::vector<bool> drop(s.size(), axes.empty());
            for (int64 a : axes)
                drop[(size_t)axisOf(a, (int64)s.size())] = true;
            r.shape.clear();
            for (size_t k = 0; k < s.size(); k++)
                if (!(drop[k] && s[k] == 1))
                {
                    if (drop[k] && !axes.empty())
                        failNode(n, "squeezes a dimension that is not 1");
                    r.shape.push_back(s[k]);
                }
        }
        else
        {
            const int64 rank = (int64)(s.size() + axes.size());
            std::vector<bool> added((size_t)rank, false);
            for (int64 a : axes)
                added[(size_t)axisOf(a, rank)] = true;
            r.shape.clear();
            for (int64 k = 0, j = 0; k < rank; k++)
                r.shape.push_back(added[(size_t)k] ? 1 : s[(size_t)j++]);
        }
    }
    else if (op == "Concat")
    {
        const Folded& first = need(0);
        const int64 rank = (int64)first.shape.size();
        const int64 axis = axisOf(onnxIntAttribute(n, "axis", 0), rank);
        r.shape = first.shape;
        r.shape[(size_t)axis] = 0;
        r.isFloat = first.isFloat;
        for (int i = 0; i < n.input_size(); i++)
        {
            const Folded& x = need(i);
            if ((int64)x.shape.size() != rank)
                failNode(n, "the inputs have different ranks");
            for (int64 d = 0; d < rank; d++)
                if (d != axis && x.shape[(size_t)d] != first.shape[(size_t)d])
                    failNode(n, "the inputs' shapes differ off the concatenation axis");
            r.shape[(size_t)axis] += x.shape[(size_t)axis];
        }
        checkedTotal(r.shape);
        int64 outer = 1;
        for (int64 d = 0; d < axis; d++)
            outer *= r.shape[(size_t)d];
        for (int64 o = 0; o < outer; o++)
            for (int i = 0; i < n.input_size(); i++)
            {
                const Folded& x = in[i];
                const int64 chunk = outer ? x.total() / outer : 0;
                r.v.insert(r.v.end(), x.v.begin() + o * chunk, x.v.begin() + (o + 1) * chunk);
            }
    }
    else if (op == "Gather")
    {
        const Folded& x = need(0);
        const Folded& idx = need(1);
        const int64 rank = (int64)x.shape.size();
        const int64 axis = axisOf(onnxIntAttribute(n, "axis", 0), rank);
        r.isFloat = x.isFloat;
        r.shape.assign(x.shape.begin(), x.shape.begin() + axis);
        r.shape.insert(r.shape.end(), idx.shape.begin(), idx.shape.end());
        r.shape.insert(r.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
        checkedTotal(r.shape);
        int64 outer = 1, inner = 1;
        for (int64 d = 0; d < axis; d++)
            outer *= x.shape[(size_t)d];
        for (int64 d = axis + 1; d < rank; d++)
            inner *= x.shape[(size_t)d];
        const int64 dim = x.shape[(size_t)axis];
        for (int64 o = 0; o < outer; o++)
            for (double fi : idx.v)
            {
                int64 k = (int64)fi;
                if (k < -dim || k >= dim)
                    failNode(n, format("index %lld is out of range [%lld, %lld)", (long long)k, (long long)-dim, (long long)dim));
                k = k < 0 ? k + dim : k;
                const auto from = x.v.begin() + (o * dim + k) * inner;
                r.v.insert(r.v.end(), from, from + inner);
            }
    }
    else if (op == "Slice")
    {
        const Folded& x = need(0);
        const int64 rank = (int64)x.shape.size();
        const std::vector<int64> starts = ints(1), ends = ints(2);
        std::vector<int64> axes, steps;
        if (hasInput(n, 3))
            axes = ints(3);
        else
            for (size_t k = 0; k < starts.size(); k++)
                axes.push_back((int64)k);
        steps = hasInput(n, 4) ? ints(4) : std::vector<int64>(starts.size(), 1);
        if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
            failNode(n, "starts, ends, axes and steps differ in length");
        std::vector<int64> b(rank, 0), st(rank, 1);
        r.shape = x.shape;
        for (size_t k = 0; k < starts.size(); k++)
        {
            const size_t a = (size_t)axisOf(axes[k], rank);
            const int64 dim = x.shape[a], step = steps[k];
            if (step == 0)
                failNode(n, "a step is 0");
            auto clampIndex = [&](int64 v, bool isEnd) {
                if (v < 0)
                    v += dim;
                return step > 0 ? std::min(std::max(v, (int64)0), dim) : std::min(std::max(v, (int64)(isEnd ? -1 : 0)), dim - 1);
            };
            const int64 s = clampIndex(starts[k], false), e = clampIndex(ends[k], true);
            b[a] = s;
            st[a] = step;
            r.shape[a] = step > 0 ? std::max<int64>(0, (e - s + step - 1) / step) : std::max<int64>(0, (s - e - step - 1) / -step);
        }
        r.isFloat = x.isFloat;
        const int64 total = checkedTotal(r.shape);
        const std::vector<int64> xs = stridesOf(x.shape);
        for (int64 i = 0; i < total; i++)
        {
            int64 rem = i, off = 0;
            for (int64 d = rank - 1; d >= 0; d--)
            {
                const int64 idx = rem % r.shape[(size_t)d];
                rem /= r.shape[(size_t)d];
                off += (b[(size_t)d] + idx * st[(size_t)d]) * xs[(size_t)d];
            }
            r.v.push_back(x.v[(size_t)off]);
        }
    }
    else if (op == "Transpose")
    {
        const Folded& x = need(0);
        const int64 rank = (int64)x.shape.size();
        std::vector<int64> perm;
        if (!intsAttr("perm", perm))
            for (int64 d = rank - 1; d >= 0; d--)
                perm.push_back(d);
        if ((int64)perm.size() != rank)
            failNode(n, "perm does not match the input's rank");
        r.isFloat = x.isFloat;
        for (int64 p : perm)
            r.shape.push_back(x.shape[(size_t)axisOf(p, rank)]);
        const std::vector<int64> xs = stridesOf(x.shape);
        for (int64 i = 0; i < x.total(); i++)
        {
            int64 rem = i, off = 0;
            for (int64 d = rank - 1; d >= 0; d--)
            {
                const int64 idx = rem % r.shape[(size_t)d];
                rem /= r.shape[(size_t)d];
                off += idx * xs[(size_t)axisOf(perm[(size_t)d], rank)];
            }
            r.v.push_back(x.v[(size_t)off]);
        }
    }
    else if (op == "ConstantOfShape")
    {
        r.shape = ints(0);
        checkedTotal(r.shape);
        double value = 0;
        r.isFloat = true;
        for (const auto& a : n.attribute())
            if (a.name() == "value")
            {
                const OnnxTensor t = f_.readTensor(a.t());
                if (t.total() != 1)
                    failNode(n, "value must hold one element");
                value = t.at(0);
                r.isFloat = isFloatType(t.dataType);
            }
        r.v.assign((size_t)shapeTotal(r.shape), value);
    }
    else if (op == "Range")
    {
        const double start = need(0).v.at(0), limit = need(1).v.at(0), delta = need(2).v.at(0);
        r.isFloat = need(0).isFloat;
        if (delta == 0)
            failNode(n, "delta is 0");
        const double count = std::max(0.0, std::ceil((limit - start) / delta));
        if (count > (double)kMaxFoldedElements)
            failNode(n, "the range is larger than constant folding takes");
        for (int64 k = 0; k < (int64)count; k++)
            r.v.push_back(start + k * delta);
        r.shape = {(int64)r.v.size()};
    }
    else if (op == "Sqrt" || op == "Neg" || op == "Reciprocal" || op == "Not" || op == "Cos" || op == "Sin")
    {
        r = need(0);
        for (double& x : r.v)
            x = op == "Sqrt" ? std::sqrt(x) : op == "Neg" ? -x : op == "Not" ? (double)(x == 0) : op == "Cos" ? std::cos((float)x)
              : op == "Sin" ? std::sin((float)x) : 1.0 / x;
        if (r.isFloat)
            for (double& x : r.v)
                x = (float)x;
    }
    else if (op == "MatMul")
    {
        // [..., m, k] @ [..., k, n] with broadcast batch dimensions (1-D operands not taken).
        const Folded &a = need(0), &b = need(1);
        if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2])
            failNode(n, "the operands' shapes do not multiply");
        const int64 m = a.shape[a.shape.size() - 2], k = a.shape.back(), cols = b.shape.back();
        std::vector<int64> batchA(a.shape.begin(), a.shape.end() - 2), batchB(b.shape.begin(), b.shape.end() - 2);
        const size_t rank = std::max(batchA.size(), batchB.size());
        std::vector<int64> batch(rank, 1);
        for (const auto* s : {&batchA, &batchB})
            for (size_t d = 0; d < s->size(); d++)
            {
                int64& o = batch[rank - s->size() + d];
                if ((*s)[d] != 1)
                {
                    if (o != 1 && o != (*s)[d])
                        failNode(n, "the operands' batch dimensions do not broadcast");
                    o = (*s)[d];
                }
            }
        r.shape = batch;
        r.shape.push_back(m);
        r.shape.push_back(cols);
        const int64 total = checkedTotal(r.shape), batches = m * cols != 0 ? total / (m * cols) : 0;
        if (total > 0 && k > kMaxFoldedElements / total)
            failNode(n, "the product is larger than constant folding takes");
        r.isFloat = a.isFloat;
        r.v.assign((size_t)total, 0.0);
        for (int64 bi = 0; bi < batches; bi++)
        {
            const int64 offA = broadcastOffset(bi, batch, batchA) * m * k, offB = broadcastOffset(bi, batch, batchB) * k * cols;
            for (int64 i = 0; i < m; i++)
                for (int64 j = 0; j < cols; j++)
                {
                    double sum = 0;
                    for (int64 t = 0; t < k; t++)
                        sum += a.v[(size_t)(offA + i * k + t)] * b.v[(size_t)(offB + t * cols + j)];
                    r.v[(size_t)((bi * m + i) * cols + j)] = r.isFloat ? (double)(float)sum : sum;
                }
        }
    }
    else if (op == "ScatterND")
    {
        // data with slices replaced at indices [..., k] (transformers' in-place mask updates).
        r = need(0);
        const Folded &idx = need(1), &upd = need(2);
        for (const auto& a : n.attribute())
            if (a.name() == "reduction" && a.s() != "none")
                failNode(n, "only ScatterND without reduction folds");
        const int64 rank = (int64)r.shape.size();
        const int64 k = idx.shape.empty() ? 0 : idx.shape.back();
        if (idx.shape.empty() || k < 1 || k > rank)
            failNode(n, "the indices' last dimension must be between 1 and the data's rank");
        int64 slice = 1;
        for (int64 d = k; d < rank; d++)
            slice *= r.shape[(size_t)d];
        const int64 count = idx.total() / k;
        if (upd.total() != count * slice)
            failNode(n, "the updates do not match the indices");
        const std::vector<int64> strides = stridesOf(r.shape);
        for (int64 c = 0; c < count; c++)
        {
            int64 off = 0;
            for (int64 d = 0; d < k; d++)
            {
                int64 i = (int64)idx.v[(size_t)(c * k + d)];
                const int64 dim = r.shape[(size_t)d];
                if (i < -dim || i >= dim)
                    failNode(n, "an index is out of range");
                off += (i < 0 ? i + dim : i) * strides[(size_t)d];
            }
            std::copy(upd.v.begin() + c * slice, upd.v.begin() + (c + 1) * slice, r.v.begin() + off);
        }
    }
    else if (op == "Trilu")
    {
        r = need(0);
        if (r.shape.size() < 2)
            failNode(n, "the input must have at least 2 dimensions");
        const int64 k = hasInput(n, 1) ? ints(1).at(0) : 0;
        const bool upper = onnxIntAttribute(n, "upper", 1) != 0;
        const int64 rows = r.shape[r.shape.size() - 2], cols = r.shape.back();
        for (int64 i = 0; i < r.total(); i++)
        {
            const int64 col = i % cols, row = (i / cols) % rows;
            if (upper ? col - row < k : col - row > k)
                r.v[(size_t)i] = 0;
        }
    }
    else if (op == "CumSum")
    {
        r = need(0);
        const int64 rank = (int64)r.shape.size();
        const int64 axis = axisOf(ints(1).at(0), rank);
        const bool exclusive = onnxIntAttribute(n, "exclusive", 0) != 0, reverse = onnxIntAttribute(n, "reverse", 0) != 0;
        int64 inner = 1;
        for (int64 d = axis + 1; d < rank; d++)
            inner *= r.shape[(size_t)d];
        const int64 dim = r.shape[(size_t)axis], outer = dim * inner != 0 ? r.total() / (dim * inner) : 0;
        const std::vector<double> x = r.v;
        for (int64 o = 0; o < outer; o++)
            for (int64 e = 0; e < inner; e++)
            {
                double sum = 0;
                for (int64 t = 0; t < dim; t++)
                {
                    const int64 idx = reverse ? dim - 1 - t : t;
                    const size_t at = (size_t)((o * dim + idx) * inner + e);
                    if (!exclusive)
                        sum += x[at];
                    r.v[at] = sum;
                    if (exclusive)
                        sum += x[at];
                }
            }
    }
    else  // broadcasting: Expand, Where, comparisons, And, Or, Add, Sub, Mul, Div, Pow, Min, Max
    {
        std::vector<const Folded*> ops;
        const int operands = op == "Expand" ? 1 : op == "Where" ? 3 : 2;
        if ((op == "Min" || op == "Max") && n.input_size() != 2)
            failNode(n, "only Min / Max of two inputs folds");
        for (int i = 0; i < operands; i++)
            ops.push_back(&need(i));
        std::vector<std::vector<int64>> shapes;
        for (const Folded* f : ops)
            shapes.push_back(f->shape);
        if (op == "Expand")
            shapes.push_back(ints(1));
        size_t rank = 0;
        for (const auto& s : shapes)
            rank = std::max(rank, s.size());
        r.shape.assign(rank, 1);
        for (const auto& s : shapes)
            for (size_t k = 0; k < s.size(); k++)
            {
                int64& d = r.shape[rank - s.size() + k];
                if (s[k] != 1)
                {
                    if (d != 1 && d != s[k])
                        failNode(n, "the inputs' shapes do not broadcast");
                    d = s[k];
                }
            }
        const int64 total = checkedTotal(r.shape);
        const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                             op == "GreaterOrEqual" || op == "And" || op == "Or";
        r.isFloat = op == "Where" ? ops[1]->isFloat : compare ? false : ops[0]->isFloat;
        r.v.resize((size_t)total);
        for (int64 i = 0; i < total; i++)
        {
            const double a = ops[0]->v[(size_t)broadcastOffset(i, r.shape, ops[0]->shape)];
            if (op == "Expand")
            {
                r.v[(size_t)i] = a;
                continue;
            }
            const double b = ops[1]->v[(size_t)broadcastOffset(i, r.shape, ops[1]->shape)];
            double y;
            if (op == "Where")
            {
                foldUndecidable_ = foldUndecidable_ || isSymbol(a);
                y = a != 0 ? b : ops[2]->v[(size_t)broadcastOffset(i, r.shape, ops[2]->shape)];
            }
            else if (op == "Equal")
            {
                // A run-time size (batch, tokens, past + tokens: all >= 1) equals itself and no number <= 0.
                if ((isSymbol(a) || isSymbol(b)) && a != b && !(isSymbol(a) ? b <= 0 : a <= 0))
                    foldUndecidable_ = true;
                y = a == b;
            }
            else if (op == "Less")
                y = a < b;
            else if (op == "Greater")
                y = a > b;
            else if (op == "LessOrEqual")
                y = a <= b;
            else if (op == "GreaterOrEqual")
                y = a >= b;
            else if (op == "And")
                y = a != 0 && b != 0;
            else if (op == "Or")
                y = a != 0 || b != 0;
            else if (op == "Min")
                y = std::min(a, b);
            else if (op == "Max")
                y = std::max(a, b);
            else if (op == "Add")
                y = a + b;
            else if (op == "Sub")
                y = a - b;
            else if (op == "Mul")
                y = a * b;
            else if (op == "Pow")
                y = std::pow(a, b);
            else if (r.isFloat)
                y = a / b;
            else
            {
                if (b == 0)
                    failNode(n, "integer division by zero");
                y = std::trunc(a / b);
            }
            r.v[(size_t)i] = r.isFloat && op != "Where" ? (double)(float)y : y;
        }
    }

    return r;
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
        if (x.kind != Value::Tensor && x.kind != Value::Rotated)
            tensorInput(n, 0, true);  // computes a pending sigmoid; errors for other kinds
        if (x.flatRows)
            failNode(n, "the Shape of [batch * seq, features] rows is not supported");
        if (x.heads > 0)
            dims = x.headsMajor ? std::vector<int64>{kBatchDim, x.heads, kTokenDim, innerOf(x)}
                                : std::vector<int64>{kBatchDim, kTokenDim, x.heads, innerOf(x)};
        else if (x.inner != 0)
            failNode(n, "the Shape of a [batch, seq * rows, row] view is not supported");
        else
            dims = {kBatchDim, kTokenDim, (int64)x.width};
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
