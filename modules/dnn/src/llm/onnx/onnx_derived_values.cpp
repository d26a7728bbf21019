// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: values derived from the cache's inputs.
//
// Hugging Face exports compute their attention masks, rotary tables and learned-position
// lookups in the graph, from attention_mask, position_ids, the past length (a Shape of
// past_key_values) and the token count. The Net's paged cache knows all of these per token, so
// such values are not computed at run time: they stay Derived and are evaluated at import,
// where their use needs their values, for one sequence at chosen sizes (EvalPoint):
//   - a rotary cos / sin table: at positions 0..context-1, checked against an evaluation after
//     a cached prefix (the rows must move with the position, nothing else);
//   - a learned-position lookup: its indices must be the positions (plus a constant offset);
//   - an attention mask: at two sizes (with and without a cached prefix) it must be the causal
//     mask over the cache, or the import fails naming the node (a sliding window, a prefix-LM or
//     bidirectional mask would otherwise be computed wrongly in silence).

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

// Names of the graph inputs a Derived value may read, as exporters write them.
bool isPositionInput(const std::string& name)
{
    return name.find("position") != std::string::npos;
}

bool isMaskInput(const std::string& name)
{
    return name.find("mask") != std::string::npos;
}

bool isPastInput(const std::string& name)
{
    return name.compare(0, 4, "past") == 0;
}

Folded filled(const std::vector<int64>& shape, double value, bool isFloat)
{
    Folded f;
    f.shape = shape;
    f.isFloat = isFloat;
    int64 total = 1;
    for (int64 d : shape)
        total *= d;
    f.v.assign((size_t)total, value);
    return f;
}

// A mask value that drops a score: -inf, finfo(float).min or another large negative number.
bool isDropValue(double v)
{
    return v <= -1e4;
}

} // namespace

bool ONNXNetBuilder::importDerived(const NodeProto& n)
{
    if (!n.domain().empty() && n.domain() != "ai.onnx")
        return false;  // contrib operators reading the cache's inputs (EmbedLayerNormalization) are imported as such
    bool derived = false;
    std::string origin;
    for (int i = 0; i < n.input_size(); i++)
    {
        if (!hasInput(n, i))
            continue;
        if (!values_.count(n.input(i)) && !f_.findInitializer(n.input(i)))
            return false;  // not computed: the caller's error names it
        const Value& v = input(n, i);
        if (v.kind == Value::Derived)
        {
            derived = true;
            if (origin.empty())
                origin = v.origin;
        }
        else if (v.kind == Value::CacheInput || (v.kind == Value::Constant && v.symbolic))
            derived = true;
        else if (v.kind != Value::Constant)
            return false;  // an activation or the token ids (reshaped as such by importReshape): not derived
    }
    if (!derived)
        return false;
    Value out;
    out.kind = Value::Derived;
    out.origin = origin.empty() ? onnxNodeLabel(n) : origin;
    for (int k = 0; k < n.output_size(); k++)
        define(n, k, out);
    return true;
}

Folded ONNXNetBuilder::evaluate(const std::string& name, const EvalPoint& at)
{
    if (at.past != evaluatedAt_.past || at.tokens != evaluatedAt_.tokens)
    {
        evaluated_.clear();
        evaluatedAt_ = at;
    }
    const opencv_onnx::GraphProto& g = f_.graph();
    // A value may be pushed once per consumer before it is evaluated: the stack stays below the
    // number of node inputs (the graph has no cycle: analyzeDecoderGraph ordered it).
    size_t edges = 16;
    for (const NodeProto& node : g.node())
        edges += node.input_size();
    std::vector<std::string> stack{name};
    while (!stack.empty())
    {
        const std::string cur = stack.back();
        if (evaluated_.count(cur))
        {
            stack.pop_back();
            continue;
        }
        auto it = values_.find(cur);
        const OnnxTensor* init = it == values_.end() ? f_.findInitializer(cur) : nullptr;
        if (init || (it != values_.end() && it->second.kind == Value::Constant))
        {
            const OnnxTensor& t = init ? *init : *it->second.constant;
            if (t.total() > (int64(1) << 22))
                f_.fail("value '" + cur + "' is too large to evaluate at import (" + std::to_string(t.total()) + " elements)");
            Folded f;
            f.shape = t.shape;
            f.isFloat = isFloatType(t.dataType);
            for (int64 k = 0; k < t.total(); k++)
            {
                double d = t.at(k);
                if (it != values_.end() && it->second.symbolic && isSymbol(d))
                    d = d == (double)kBatchDim ? 1.0 : d == (double)kTokenDim ? (double)at.tokens : (double)(at.past + at.tokens);
                f.v.push_back(d);
            }
            evaluated_[cur] = f;
            stack.pop_back();
            continue;
        }
        if (it == values_.end())
            f_.fail("value '" + cur + "' is needed to evaluate '" + name + "' at import but is not defined");
        const Value& v = it->second;
        if (v.kind == Value::TokenIds)
            evaluated_[cur] = filled({1, at.tokens}, 0, false);
        else if (v.kind == Value::CacheInput && isPositionInput(cur))
        {
            Folded f = filled({1, at.tokens}, 0, false);
            for (int64 k = 0; k < at.tokens; k++)
                f.v[(size_t)k] = (double)(at.past + k);
            evaluated_[cur] = f;
        }
        else if (v.kind == Value::CacheInput && isMaskInput(cur))
            evaluated_[cur] = filled({1, at.past + at.tokens}, 1, false);
        else if (v.kind == Value::CacheInput && isPastInput(cur))
        {
            // [batch, heads, past, head]: only its shape is read (Shape of the past keys).
            std::vector<int64> shape;
            for (const auto& in : g.input())
                if (in.name() == cur)
                    for (const auto& d : in.type().tensor_type().shape().dim())
                        shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
            if (shape.size() != 4 || shape[1] <= 0 || shape[3] <= 0)
                f_.fail("graph input '" + cur + "' must be declared [batch, heads, past, head] with fixed heads and "
                        "head size to evaluate what is computed from its shape");
            evaluated_[cur] = filled({1, shape[1], at.past, shape[3]}, 0, true);
        }
        else if (v.kind == Value::CacheInput)
            f_.fail("graph input '" + cur + "' is read by '" + name + "', which the importer evaluates for the KV "
                    "cache; only the positions, the attention mask and the past keys' shapes are known there");
        else if (v.kind != Value::Derived)
            f_.fail("'" + name + "' is computed from activation '" + cur + "', not only from the positions, the "
                    "attention mask and the sizes");
        if (evaluated_.count(cur))
        {
            stack.pop_back();
            continue;
        }
        const NodeProto& p = g.node(graph_.producer.at(cur));
        bool ready = true;
        for (int i = 0; i < p.input_size(); i++)
            if (!p.input(i).empty() && !evaluated_.count(p.input(i)))
            {
                stack.push_back(p.input(i));
                ready = false;
            }
        if (!ready)
        {
            if (stack.size() > edges)
                f_.fail("'" + name + "' is computed by a chain too deep to evaluate at import");
            continue;
        }
        const ConstantFolder fold = p.output_size() >= 1 && p.output(0) == cur ? findConstantFolder(p) : nullptr;
        int splitOutput = -1;  // (GPT-J's sin, cos = Split(sincos))
        const bool split = isOp(p, "Split") && (p.domain().empty() || p.domain() == "ai.onnx");
        for (int k = 0; split && k < p.output_size(); k++)
            if (p.output(k) == cur)
                splitOutput = k;
        if (!fold && splitOutput < 0)
            failNode(p, "is on the way from the positions or the attention mask to '" + name + "', and the importer "
                        "cannot evaluate it (only the constant-folding operators, output 0, and Split)");
        std::vector<Folded> in(p.input_size());
        std::vector<bool> present(p.input_size(), false);
        for (int i = 0; i < p.input_size(); i++)
            if (!p.input(i).empty())
            {
                in[i] = evaluated_.at(p.input(i));
                present[i] = true;
            }
        FoldContext context(f_, p, in, present);
        evaluated_[cur] = splitOutput >= 0 ? foldSplit(context, splitOutput) : fold(context);
        stack.pop_back();
    }
    return evaluated_.at(name);
}

Mat ONNXNetBuilder::positionTable(const NodeProto& n, const std::string& name, int width, int count)
{
    auto cached = positionTables_.find(name);
    if (cached != positionTables_.end() && cached->second.rows >= count)
        return cached->second.rowRange(0, count);
    auto rowsOf = [&](const Folded& t, int64 rows) {
        // [1, positions, d] or [batch 1, 1, positions, d] as Llama's cos.unsqueeze(1), or
        // [1, positions, 1, d] as GPT-J's sin[:, :, None, :] (before the heads' permute)
        const size_t r = t.shape.size();
        bool ok = r >= 2 && t.shape[r - 1] == width;
        int64 product = 1;
        for (size_t d = 0; ok && d + 1 < r; d++)
        {
            ok = t.shape[d] == 1 || t.shape[d] == rows;
            product *= t.shape[d];
        }
        if (!ok || product != rows)
            failNode(n, format("'%s' must hold one row of %d values per token position ([..., positions, %d] with "
                               "1s around the positions)", name.c_str(), width, width));
        Mat m((int)rows, width, CV_32F);
        for (int64 k = 0; k < rows * width; k++)
            m.ptr<float>()[k] = (float)t.v[(size_t)k];
        return m;
    };
    const Mat table = rowsOf(evaluate(name, {0, count}), count);
    // After 5 cached tokens, 3 new ones must see rows 5..7: the table follows the position.
    if (count >= 8)
    {
        const Mat later = rowsOf(evaluate(name, {5, 3}), 3);
        if (cv::norm(later, table.rowRange(5, 8), NORM_INF) > 1e-5 * (1 + cv::norm(later, NORM_INF)))
            failNode(n, "'" + name + "' does not follow the token positions (its rows after a cached prefix are "
                        "not the rows at those positions)");
    }
    positionTables_[name] = table;
    return table;
}

int ONNXNetBuilder::positionOffset(const NodeProto& n, const std::string& name)
{
    int offset = 0;
    const EvalPoint points[] = {{0, 6}, {4, 3}};
    for (int p = 0; p < 2; p++)
    {
        const Folded t = evaluate(name, points[p]);
        bool ok = t.total() == points[p].tokens;
        for (int64 k = 0; ok && k < t.total(); k++)
        {
            const double expected = (double)(points[p].past + k) + (p ? offset : t.v[0]);
            ok = t.v[(size_t)k] == expected;
        }
        if (ok && p == 0)
            offset = (int)t.v[0];
        if (!ok || offset < 0 || offset > (1 << 20))
            failNode(n, "'" + name + "' must be the token positions (0, 1, 2, ... after the cached ones, plus a "
                        "constant offset) to look up position embeddings");
    }
    return offset;
}

void ONNXNetBuilder::checkCausalMask(const NodeProto& n, const WrittenAttention& a)
{
    std::string key;
    for (const auto& m : a.masks)
        key += std::to_string(m.first) + ":" + m.second + ";";
    if (checkedMasks_.count(key))
        return;
    const std::string where = a.firstMaskNode.empty() ? onnxNodeLabel(n) : a.firstMaskNode;
    const EvalPoint points[] = {{0, 5}, {3, 4}};
    for (const EvalPoint& at : points)
    {
        const int64 rows = at.tokens, cols = at.past + at.tokens;
        std::vector<bool> keep((size_t)(rows * cols), true);
        for (const auto& m : a.masks)
        {
            const Folded t = evaluate(m.second, at);
            const size_t r = t.shape.size();
            const int64 mr = r >= 2 ? t.shape[r - 2] : 1, mc = r >= 1 ? t.shape[r - 1] : 1;
            if ((mr != 1 && mr != rows) || (mc != 1 && mc != cols))
                f_.fail("node " + where + ": the attention mask's shape does not match the scores [" + std::to_string(rows) +
                        ", " + std::to_string(cols) + "] of a step after " + std::to_string(at.past) + " cached tokens");
            for (int64 i = 0; i < rows; i++)
                for (int64 j = 0; j < cols; j++)
                {
                    const double v = t.v[(size_t)((mr == 1 ? 0 : i) * mc + (mc == 1 ? 0 : j))];
                    bool kept;
                    if (m.first == WrittenAttention::Additive)
                    {
                        if (v != 0 && !isDropValue(v))
                            f_.fail("node " + where + ": the attention mask adds values other than 0 and a large negative "
                                    "number to the scores (a bias such as ALiBi is not supported)");
                        kept = v == 0;
                    }
                    else
                        kept = (v != 0) == (m.first == WrittenAttention::KeepWhere);
                    keep[(size_t)(i * cols + j)] = keep[(size_t)(i * cols + j)] && kept;
                }
        }
        for (int64 i = 0; i < rows; i++)
            for (int64 j = 0; j < cols; j++)
                if (keep[(size_t)(i * cols + j)] != (j <= at.past + i))
                    f_.fail("node " + where + format(": the attention is not causal over the cache: after %lld cached tokens, "
                                                     "new token %lld %s position %lld (a sliding window, prefix or "
                                                     "bidirectional mask is not supported in written-out attention)",
                                                     (long long)at.past, (long long)i,
                                                     keep[(size_t)(i * cols + j)] ? "sees" : "does not see", (long long)j));
    }
    checkedMasks_.insert(key);
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
