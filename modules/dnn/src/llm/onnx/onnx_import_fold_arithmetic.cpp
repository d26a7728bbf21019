// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Constant folding, arithmetic: element-wise operators with numpy broadcasting (Expand, Where,
// comparisons, logic, Min, Max, Add, Sub, Mul, Div, Pow), one-input math (Sqrt, Neg,
// Reciprocal, Not, Cos, Sin), MatMul and CumSum of constants. Float results are rounded to
// float32 as ONNX Runtime computes them.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_constant_folding.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

namespace {

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

// The shape `shapes` broadcast to (numpy rules).
std::vector<int64> broadcastShape(const FoldContext& c, const std::vector<std::vector<int64>>& shapes)
{
    size_t rank = 0;
    for (const auto& s : shapes)
        rank = std::max(rank, s.size());
    std::vector<int64> r(rank, 1);
    for (const auto& s : shapes)
        for (size_t k = 0; k < s.size(); k++)
        {
            int64& d = r[rank - s.size() + k];
            if (s[k] != 1)
            {
                if (d != 1 && d != s[k])
                    c.fail("the inputs' shapes do not broadcast");
                d = s[k];
            }
        }
    return r;
}

// y = op(a, b) over inputs 0 and 1 broadcast; `logical`: a bool result (comparisons, And, Or),
// else the type of input 0.
template <class Op>
Folded foldBinary(FoldContext& c, bool logical, Op op)
{
    const Folded &a = c.need(0), &b = c.need(1);
    Folded r;
    r.shape = broadcastShape(c, {a.shape, b.shape});
    const int64 total = c.checkedTotal(r.shape);
    r.isFloat = !logical && a.isFloat;
    r.v.resize((size_t)total);
    for (int64 i = 0; i < total; i++)
    {
        const double y = op(a.v[(size_t)broadcastOffset(i, r.shape, a.shape)], b.v[(size_t)broadcastOffset(i, r.shape, b.shape)]);
        r.v[(size_t)i] = r.isFloat ? (double)(float)y : y;
    }
    return r;
}

// y = op(x) of input 0, of its type.
template <class Op>
Folded foldUnary(FoldContext& c, Op op)
{
    Folded r = c.need(0);
    for (double& x : r.v)
        x = op(x);
    if (r.isFloat)
        for (double& x : r.v)
            x = (float)x;
    return r;
}

// Min and Max fold with two inputs only (ONNX allows any number).
void checkTwoInputs(const FoldContext& c)
{
    if (c.node.input_size() != 2)
        c.fail("only Min / Max of two inputs folds");
}

} // namespace

Folded foldSqrt(FoldContext& c)
{
    return foldUnary(c, [](double x) { return std::sqrt(x); });
}

Folded foldNeg(FoldContext& c)
{
    return foldUnary(c, [](double x) { return -x; });
}

Folded foldReciprocal(FoldContext& c)
{
    return foldUnary(c, [](double x) { return 1.0 / x; });
}

Folded foldNot(FoldContext& c)
{
    return foldUnary(c, [](double x) { return (double)(x == 0); });
}

Folded foldCos(FoldContext& c)
{
    return foldUnary(c, [](double x) { return (double)std::cos((float)x); });
}

Folded foldSin(FoldContext& c)
{
    return foldUnary(c, [](double x) { return (double)std::sin((float)x); });
}

Folded foldExpand(FoldContext& c)
{
    const Folded& x = c.need(0);
    Folded r;
    r.shape = broadcastShape(c, {x.shape, c.ints(1)});
    const int64 total = c.checkedTotal(r.shape);
    r.isFloat = x.isFloat;
    r.v.resize((size_t)total);
    for (int64 i = 0; i < total; i++)
        r.v[(size_t)i] = x.v[(size_t)broadcastOffset(i, r.shape, x.shape)];
    return r;
}

// A condition on a run-time size cannot be decided: the result stays Derived.
Folded foldWhere(FoldContext& c)
{
    const Folded &cond = c.need(0), &a = c.need(1), &b = c.need(2);
    Folded r;
    r.shape = broadcastShape(c, {cond.shape, a.shape, b.shape});
    const int64 total = c.checkedTotal(r.shape);
    r.isFloat = a.isFloat;
    r.v.resize((size_t)total);
    for (int64 i = 0; i < total; i++)
    {
        const double keep = cond.v[(size_t)broadcastOffset(i, r.shape, cond.shape)];
        const double y = a.v[(size_t)broadcastOffset(i, r.shape, a.shape)];
        c.undecidable = c.undecidable || isSymbol(keep);
        r.v[(size_t)i] = keep != 0 ? y : b.v[(size_t)broadcastOffset(i, r.shape, b.shape)];
    }
    return r;
}

// A run-time size (batch, tokens, past + tokens: all >= 1) equals itself and no number <= 0;
// other comparisons of it cannot be decided (torch's expand(-1) pattern folds, the rest stays
// Derived).
Folded foldEqual(FoldContext& c)
{
    return foldBinary(c, true, [&c](double a, double b) {
        if ((isSymbol(a) || isSymbol(b)) && a != b && !(isSymbol(a) ? b <= 0 : a <= 0))
            c.undecidable = true;
        return (double)(a == b);
    });
}

Folded foldLess(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a < b); });
}

Folded foldGreater(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a > b); });
}

Folded foldLessOrEqual(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a <= b); });
}

Folded foldGreaterOrEqual(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a >= b); });
}

Folded foldAnd(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a != 0 && b != 0); });
}

Folded foldOr(FoldContext& c)
{
    return foldBinary(c, true, [](double a, double b) { return (double)(a != 0 || b != 0); });
}

Folded foldMin(FoldContext& c)
{
    checkTwoInputs(c);
    return foldBinary(c, false, [](double a, double b) { return std::min(a, b); });
}

Folded foldMax(FoldContext& c)
{
    checkTwoInputs(c);
    return foldBinary(c, false, [](double a, double b) { return std::max(a, b); });
}

Folded foldAdd(FoldContext& c)
{
    return foldBinary(c, false, [](double a, double b) { return a + b; });
}

Folded foldSub(FoldContext& c)
{
    return foldBinary(c, false, [](double a, double b) { return a - b; });
}

Folded foldMul(FoldContext& c)
{
    return foldBinary(c, false, [](double a, double b) { return a * b; });
}

Folded foldPow(FoldContext& c)
{
    return foldBinary(c, false, [](double a, double b) { return std::pow(a, b); });
}

// Integers divide truncating toward zero, as ONNX Runtime does.
Folded foldDiv(FoldContext& c)
{
    const bool isFloat = c.need(0).isFloat;
    return foldBinary(c, false, [&c, isFloat](double a, double b) {
        if (isFloat)
            return a / b;
        if (b == 0)
            c.fail("integer division by zero");
        return std::trunc(a / b);
    });
}

// [..., m, k] @ [..., k, n] with broadcast batch dimensions (1-D operands not taken).
Folded foldMatMul(FoldContext& c)
{
    const Folded &a = c.need(0), &b = c.need(1);
    if (a.shape.size() < 2 || b.shape.size() < 2 || a.shape.back() != b.shape[b.shape.size() - 2])
        c.fail("the operands' shapes do not multiply");
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
                    c.fail("the operands' batch dimensions do not broadcast");
                o = (*s)[d];
            }
        }
    Folded r;
    r.shape = batch;
    r.shape.push_back(m);
    r.shape.push_back(cols);
    const int64 total = c.checkedTotal(r.shape), batches = m * cols != 0 ? total / (m * cols) : 0;
    if (total > 0 && k > kMaxFoldedElements / total)
        c.fail("the product is larger than constant folding takes");
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
    return r;
}

Folded foldCumSum(FoldContext& c)
{
    Folded r = c.need(0);
    const int64 rank = (int64)r.shape.size();
    const int64 axis = c.axisOf(c.ints(1).at(0), rank);
    const bool exclusive = onnxIntAttribute(c.node, "exclusive", 0) != 0, reverse = onnxIntAttribute(c.node, "reverse", 0) != 0;
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
    return r;
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
