// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Constant folding, shapes and data movement: Identity, Cast, Shape, Size, Reshape, Flatten,
// Squeeze, Unsqueeze, Concat, Gather, Slice, Transpose, ConstantOfShape, Range, ScatterND and
// Trilu of constants (shape tensors, norm weights, the masks derived from the cache's inputs).

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_constant_folding.hpp"

#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

namespace {

// Elements of a shape; -1 for a negative dimension or more than kMaxFoldedElements.
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

// Squeeze's and Unsqueeze's axes: the attribute (opset < 13) or input 1.
std::vector<int64> squeezeAxes(FoldContext& c)
{
    std::vector<int64> axes;
    if (!c.intsAttribute("axes", axes) && c.hasInput(1))
        axes = c.ints(1);
    return axes;
}

} // namespace

void FoldContext::fail(const std::string& message) const
{
    file.fail("node " + onnxNodeLabel(node) + ": " + message);
}

const Folded& FoldContext::need(int i) const
{
    if (i >= (int)inputs_.size() || !present_[i])
        fail(format("input %d is missing", i));
    return inputs_[i];
}

bool FoldContext::hasInput(int i) const
{
    return i < node.input_size() && !node.input(i).empty();
}

std::vector<int64> FoldContext::ints(int i) const
{
    std::vector<int64> r;
    for (double x : need(i).v)  // INT64_MAX ("to the end") is 2^63 as a double: clamped before the cast
        r.push_back((int64)std::max(-4.6e18, std::min(4.6e18, x)));
    return r;
}

int64 FoldContext::axisOf(int64 axis, int64 rank) const
{
    if (axis < -rank || axis >= rank)
        fail(format("axis %lld is out of range for rank %lld", (long long)axis, (long long)rank));
    return axis < 0 ? axis + rank : axis;
}

int64 FoldContext::checkedTotal(const std::vector<int64>& shape) const
{
    const int64 t = shapeTotal(shape);
    if (t < 0)
        fail("the folded result would be larger than constant folding takes (or has a negative dimension)");
    return t;
}

bool FoldContext::intsAttribute(const char* name, std::vector<int64>& out) const
{
    for (const auto& a : node.attribute())
        if (a.name() == name)
        {
            out.assign(a.ints().begin(), a.ints().end());
            return true;
        }
    return false;
}

Folded foldIdentity(FoldContext& c)
{
    return c.need(0);
}

Folded foldCast(FoldContext& c)
{
    Folded r = c.need(0);
    const int to = (int)onnxIntAttribute(c.node, "to", ONNX_FLOAT);
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
    return r;
}

Folded foldShape(FoldContext& c)
{
    const Folded& x = c.need(0);
    Folded r;
    r.isFloat = false;
    const int64 rank = (int64)x.shape.size();
    int64 s = onnxIntAttribute(c.node, "start", 0), e = onnxIntAttribute(c.node, "end", rank);
    s = std::min(std::max(s < 0 ? s + rank : s, (int64)0), rank);
    e = std::min(std::max(e < 0 ? e + rank : e, (int64)0), rank);
    for (int64 k = s; k < e; k++)
        r.v.push_back((double)x.shape[(size_t)k]);
    r.shape = {(int64)r.v.size()};
    return r;
}

Folded foldSize(FoldContext& c)
{
    Folded r;
    r.isFloat = false;
    r.v = {(double)c.need(0).total()};
    return r;
}

Folded foldReshape(FoldContext& c)
{
    Folded r = c.need(0);
    const std::vector<int64> s = r.shape;
    std::vector<int64> t = c.ints(1);
    const bool allowZero = onnxIntAttribute(c.node, "allowzero", 0) != 0;
    int minus = -1;
    int64 known = 1;
    for (size_t k = 0; k < t.size(); k++)
    {
        if (t[k] == 0 && !allowZero)
        {
            if (k >= s.size())
                c.fail("a 0 in the shape copies a dimension the input does not have");
            t[k] = s[k];
        }
        if (t[k] == -1)
        {
            if (minus >= 0)
                c.fail("the shape has more than one -1");
            minus = (int)k;
        }
        else if (t[k] < 0)
            c.fail("the shape has a negative dimension");
        else
            known *= std::max<int64>(t[k], 1);
    }
    if (minus >= 0)
        t[(size_t)minus] = known > 0 ? r.total() / known : 0;
    if (c.checkedTotal(t) != r.total())
        c.fail("the shape does not hold the input's elements");
    r.shape = t;
    return r;
}

Folded foldFlatten(FoldContext& c)
{
    Folded r = c.need(0);
    const std::vector<int64> s = r.shape;
    const int64 axis = onnxIntAttribute(c.node, "axis", 1);
    const int64 a = axis < 0 ? axis + (int64)s.size() : axis;
    if (a < 0 || a > (int64)s.size())
        c.fail("axis is out of range");
    int64 outer = 1;
    for (int64 k = 0; k < a; k++)
        outer *= s[(size_t)k];
    r.shape = {outer, outer ? r.total() / outer : 0};
    return r;
}

Folded foldSqueeze(FoldContext& c)
{
    Folded r = c.need(0);
    const std::vector<int64> s = r.shape;
    const std::vector<int64> axes = squeezeAxes(c);
    std::vector<bool> drop(s.size(), axes.empty());
    for (int64 a : axes)
        drop[(size_t)c.axisOf(a, (int64)s.size())] = true;
    r.shape.clear();
    for (size_t k = 0; k < s.size(); k++)
        if (!(drop[k] && s[k] == 1))
        {
            if (drop[k] && !axes.empty())
                c.fail("squeezes a dimension that is not 1");
            r.shape.push_back(s[k]);
        }
    return r;
}

Folded foldUnsqueeze(FoldContext& c)
{
    Folded r = c.need(0);
    const std::vector<int64> s = r.shape;
    const std::vector<int64> axes = squeezeAxes(c);
    const int64 rank = (int64)(s.size() + axes.size());
    std::vector<bool> added((size_t)rank, false);
    for (int64 a : axes)
        added[(size_t)c.axisOf(a, rank)] = true;
    r.shape.clear();
    for (int64 k = 0, j = 0; k < rank; k++)
        r.shape.push_back(added[(size_t)k] ? 1 : s[(size_t)j++]);
    return r;
}

Folded foldConcat(FoldContext& c)
{
    const Folded& first = c.need(0);
    const int64 rank = (int64)first.shape.size();
    const int64 axis = c.axisOf(onnxIntAttribute(c.node, "axis", 0), rank);
    Folded r;
    r.shape = first.shape;
    r.shape[(size_t)axis] = 0;
    r.isFloat = first.isFloat;
    const int inputs = c.node.input_size();
    for (int i = 0; i < inputs; i++)
    {
        const Folded& x = c.need(i);
        if ((int64)x.shape.size() != rank)
            c.fail("the inputs have different ranks");
        for (int64 d = 0; d < rank; d++)
            if (d != axis && x.shape[(size_t)d] != first.shape[(size_t)d])
                c.fail("the inputs' shapes differ off the concatenation axis");
        r.shape[(size_t)axis] += x.shape[(size_t)axis];
    }
    c.checkedTotal(r.shape);
    int64 outer = 1;
    for (int64 d = 0; d < axis; d++)
        outer *= r.shape[(size_t)d];
    for (int64 o = 0; o < outer; o++)
        for (int i = 0; i < inputs; i++)
        {
            const Folded& x = c.need(i);
            const int64 chunk = outer ? x.total() / outer : 0;
            r.v.insert(r.v.end(), x.v.begin() + o * chunk, x.v.begin() + (o + 1) * chunk);
        }
    return r;
}

Folded foldGather(FoldContext& c)
{
    const Folded& x = c.need(0);
    const Folded& idx = c.need(1);
    const int64 rank = (int64)x.shape.size();
    const int64 axis = c.axisOf(onnxIntAttribute(c.node, "axis", 0), rank);
    Folded r;
    r.isFloat = x.isFloat;
    r.shape.assign(x.shape.begin(), x.shape.begin() + axis);
    r.shape.insert(r.shape.end(), idx.shape.begin(), idx.shape.end());
    r.shape.insert(r.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    c.checkedTotal(r.shape);
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
                c.fail(format("index %lld is out of range [%lld, %lld)", (long long)k, (long long)-dim, (long long)dim));
            k = k < 0 ? k + dim : k;
            const auto from = x.v.begin() + (o * dim + k) * inner;
            r.v.insert(r.v.end(), from, from + inner);
        }
    return r;
}

Folded foldSlice(FoldContext& c)
{
    const Folded& x = c.need(0);
    const int64 rank = (int64)x.shape.size();
    const std::vector<int64> starts = c.ints(1), ends = c.ints(2);
    std::vector<int64> axes, steps;
    if (c.hasInput(3))
        axes = c.ints(3);
    else
        for (size_t k = 0; k < starts.size(); k++)
            axes.push_back((int64)k);
    steps = c.hasInput(4) ? c.ints(4) : std::vector<int64>(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
        c.fail("starts, ends, axes and steps differ in length");
    std::vector<int64> b(rank, 0), st(rank, 1);
    Folded r;
    r.shape = x.shape;
    for (size_t k = 0; k < starts.size(); k++)
    {
        const size_t a = (size_t)c.axisOf(axes[k], rank);
        const int64 dim = x.shape[a], step = steps[k];
        if (step == 0)
            c.fail("a step is 0");
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
    const int64 total = c.checkedTotal(r.shape);
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
    return r;
}

Folded foldTranspose(FoldContext& c)
{
    const Folded& x = c.need(0);
    const int64 rank = (int64)x.shape.size();
    std::vector<int64> perm;
    if (!c.intsAttribute("perm", perm))
        for (int64 d = rank - 1; d >= 0; d--)
            perm.push_back(d);
    if ((int64)perm.size() != rank)
        c.fail("perm does not match the input's rank");
    Folded r;
    r.isFloat = x.isFloat;
    for (int64 p : perm)
        r.shape.push_back(x.shape[(size_t)c.axisOf(p, rank)]);
    const std::vector<int64> xs = stridesOf(x.shape);
    for (int64 i = 0; i < x.total(); i++)
    {
        int64 rem = i, off = 0;
        for (int64 d = rank - 1; d >= 0; d--)
        {
            const int64 idx = rem % r.shape[(size_t)d];
            rem /= r.shape[(size_t)d];
            off += idx * xs[(size_t)c.axisOf(perm[(size_t)d], rank)];
        }
        r.v.push_back(x.v[(size_t)off]);
    }
    return r;
}

Folded foldConstantOfShape(FoldContext& c)
{
    Folded r;
    r.shape = c.ints(0);
    const int64 total = c.checkedTotal(r.shape);
    double value = 0;
    r.isFloat = true;
    for (const auto& a : c.node.attribute())
        if (a.name() == "value")
        {
            const OnnxTensor t = c.file.readTensor(a.t());
            if (t.total() != 1)
                c.fail("value must hold one element");
            value = t.at(0);
            r.isFloat = isFloatType(t.dataType);
        }
    r.v.assign((size_t)total, value);
    return r;
}

Folded foldRange(FoldContext& c)
{
    const double start = c.need(0).v.at(0), limit = c.need(1).v.at(0), delta = c.need(2).v.at(0);
    Folded r;
    r.isFloat = c.need(0).isFloat;
    if (delta == 0)
        c.fail("delta is 0");
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    if (count > (double)kMaxFoldedElements)
        c.fail("the range is larger than constant folding takes");
    for (int64 k = 0; k < (int64)count; k++)
        r.v.push_back(start + k * delta);
    r.shape = {(int64)r.v.size()};
    return r;
}

// Data with slices replaced at indices [..., k] (transformers' in-place mask updates).
Folded foldScatterND(FoldContext& c)
{
    Folded r = c.need(0);
    const Folded &idx = c.need(1), &upd = c.need(2);
    for (const auto& a : c.node.attribute())
        if (a.name() == "reduction" && a.s() != "none")
            c.fail("only ScatterND without reduction folds");
    const int64 rank = (int64)r.shape.size();
    const int64 k = idx.shape.empty() ? 0 : idx.shape.back();
    if (idx.shape.empty() || k < 1 || k > rank)
        c.fail("the indices' last dimension must be between 1 and the data's rank");
    int64 slice = 1;
    for (int64 d = k; d < rank; d++)
        slice *= r.shape[(size_t)d];
    const int64 count = idx.total() / k;
    if (upd.total() != count * slice)
        c.fail("the updates do not match the indices");
    const std::vector<int64> strides = stridesOf(r.shape);
    for (int64 i = 0; i < count; i++)
    {
        int64 off = 0;
        for (int64 d = 0; d < k; d++)
        {
            const int64 at = (int64)idx.v[(size_t)(i * k + d)];
            const int64 dim = r.shape[(size_t)d];
            if (at < -dim || at >= dim)
                c.fail("an index is out of range");
            off += (at < 0 ? at + dim : at) * strides[(size_t)d];
        }
        std::copy(upd.v.begin() + i * slice, upd.v.begin() + (i + 1) * slice, r.v.begin() + off);
    }
    return r;
}

Folded foldTrilu(FoldContext& c)
{
    Folded r = c.need(0);
    if (r.shape.size() < 2)
        c.fail("the input must have at least 2 dimensions");
    const int64 k = c.hasInput(1) ? c.ints(1).at(0) : 0;
    const bool upper = onnxIntAttribute(c.node, "upper", 1) != 0;
    const int64 rows = r.shape[r.shape.size() - 2], cols = r.shape.back();
    for (int64 i = 0; i < r.total(); i++)
    {
        const int64 col = i % cols, row = (i / cols) % rows;
        if (upper ? col - row < k : col - row > k)
            r.v[(size_t)i] = 0;
    }
    return r;
}

// GPT-J's rotary tables: embed_positions Tile'd to the batch, GatherElements by the positions
// repeated over the row, Split into sin and cos.
Folded foldTile(FoldContext& c)
{
    const Folded& x = c.need(0);
    const std::vector<int64> repeats = c.ints(1);
    if (repeats.size() != x.shape.size())
        c.fail("the repeats must have one entry per dimension");
    Folded r;
    r.isFloat = x.isFloat;
    for (size_t d = 0; d < repeats.size(); d++)
    {
        if (repeats[d] < 0)
            c.fail("a repeat count is negative");
        r.shape.push_back(x.shape[d] * repeats[d]);
    }
    const int64 total = c.checkedTotal(r.shape);
    const std::vector<int64> rs = stridesOf(r.shape), xs = stridesOf(x.shape);
    r.v.resize((size_t)total);
    for (int64 i = 0; i < total; i++)
    {
        int64 off = 0;
        for (size_t d = 0; d < r.shape.size(); d++)
            off += ((i / rs[d]) % r.shape[d] % x.shape[d]) * xs[d];
        r.v[(size_t)i] = x.v[(size_t)off];
    }
    return r;
}

Folded foldGatherElements(FoldContext& c)
{
    const Folded& x = c.need(0);
    const Folded& idx = c.need(1);
    const int64 rank = (int64)x.shape.size();
    const int64 axis = c.axisOf(onnxIntAttribute(c.node, "axis", 0), rank);
    if ((int64)idx.shape.size() != rank)
        c.fail("the indices must have the data's rank");
    Folded r;
    r.isFloat = x.isFloat;
    r.shape = idx.shape;
    const int64 total = c.checkedTotal(r.shape);
    const std::vector<int64> is = stridesOf(idx.shape), xs = stridesOf(x.shape);
    const int64 dim = x.shape[(size_t)axis];
    r.v.resize((size_t)total);
    for (int64 i = 0; i < total; i++)
    {
        int64 off = 0;
        for (int64 d = 0; d < rank; d++)
        {
            int64 at = (i / is[(size_t)d]) % idx.shape[(size_t)d];
            if (d == axis)
            {
                at = (int64)idx.v[(size_t)i];
                if (at < -dim || at >= dim)
                    c.fail(format("index %lld is out of range [%lld, %lld)", (long long)at, (long long)-dim,
                                  (long long)dim));
                at = at < 0 ? at + dim : at;
            }
            else if (at >= x.shape[(size_t)d])
                c.fail("the indices are larger than the data outside the gathered axis");
            off += at * xs[(size_t)d];
        }
        r.v[(size_t)i] = x.v[(size_t)off];
    }
    return r;
}

Folded foldSplit(FoldContext& c, int output)
{
    const Folded& x = c.need(0);
    const int64 rank = (int64)x.shape.size();
    const int64 axis = c.axisOf(onnxIntAttribute(c.node, "axis", 0), rank);
    const int64 dim = x.shape[(size_t)axis];
    std::vector<int64> sizes;
    if (!c.intsAttribute("split", sizes) && c.hasInput(1))
        sizes = c.ints(1);
    const int parts = c.node.output_size();
    if (sizes.empty())
    {
        if (parts <= 0 || dim % parts != 0)
            c.fail("the axis does not split into equal parts");
        sizes.assign((size_t)parts, dim / parts);
    }
    int64 start = 0, sum = 0;
    for (size_t k = 0; k < sizes.size(); k++)
    {
        if (sizes[k] < 0)
            c.fail("a split size is negative");
        if ((int)k < output)
            start += sizes[k];
        sum += sizes[k];
    }
    if ((int)sizes.size() != parts || sum != dim || output >= parts)
        c.fail("the split sizes must add up to the axis");
    Folded r;
    r.isFloat = x.isFloat;
    r.shape = x.shape;
    r.shape[(size_t)axis] = sizes[(size_t)output];
    int64 outer = 1, inner = 1;
    for (int64 d = 0; d < axis; d++)
        outer *= x.shape[(size_t)d];
    for (int64 d = axis + 1; d < rank; d++)
        inner *= x.shape[(size_t)d];
    for (int64 o = 0; o < outer; o++)
    {
        const auto from = x.v.begin() + (o * dim + start) * inner;
        r.v.insert(r.v.end(), from, from + sizes[(size_t)output] * inner);
    }
    return r;
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
