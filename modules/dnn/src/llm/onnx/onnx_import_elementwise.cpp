// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: element-wise operators (Add / Sub / Mul / Div, SiLU and SwiGLU written out,
// Sigmoid, Relu, Tanh, Neg, Erf, Sqrt, the GELU family) and the norms (RMS norms, also per row of
// a view such as Qwen3's per-head Q / K norms; LayerNormalization).

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

void ONNXNetBuilder::importBinary(const NodeProto& n)
{
    const std::string& op = n.op_type();
    const Value a = input(n, 0), b = input(n, 1);
    if (op == "Mul")
    {
        // SiLU written out (x * sigmoid(x)), then the SwiGLU product with `up`.
        for (int s = 0; s < 2; s++)
        {
            const Value& p = s ? b : a;
            const Value& o = s ? a : b;
            if (p.kind == Value::Sigmoid && o.kind == Value::Tensor && o.pin.layer == p.pin.layer &&
                o.pin.output == p.pin.output)
            {
                Value silu = p;
                silu.kind = Value::Silu;
                define(n, 0, silu);
                return;
            }
        }
        for (int s = 0; s < 2; s++)
        {
            const Value& p = s ? b : a;
            if (p.kind == Value::Silu)
            {
                const Pin up = tensorInput(n, s ? 0 : 1);
                if (values_.at(n.input(s ? 0 : 1)).width != p.width)
                    failNode(n, "the operands have different widths");
                LayerParams lp = params(n.name(), "LLMElementwise");
                lp.set("operation", "swiglu");
                defineTensor(n, 0, add(lp, {p.pin, up}), p.width);
                return;
            }
        }
    }
    const bool constA = a.kind == Value::Constant, constB = b.kind == Value::Constant;
    if (constA && constB)
        failNode(n, "both operands are constants (constant folding is not supported)");
    std::string operation = op == "Add" ? "add" : op == "Sub" ? "sub" : op == "Mul" ? "mul" : "div";
    LayerParams lp = params(n.name(), "LLMElementwise");
    lp.set("operation", operation);
    if (constA || constB)
    {
        const int x = constA ? 1 : 0;
        const Pin pin = tensorInput(n, x, true);
        const Value& t = values_.at(n.input(x));
        const int w = t.width, inner = innerOf(t);
        const OnnxTensor& c = *(constA ? a : b).constant;
        if (c.total() != 1 && c.total() != w && c.total() != inner)
            failNode(n, format("the constant has %lld values; only a scalar or one value per feature (%d) "
                               "broadcasts over the activations", (long long)c.total(), inner));
        for (size_t d = 0; d + 1 < c.shape.size(); d++)
            if (c.shape[d] != 1)
                failNode(n, "the constant must be a scalar or a row (leading dimensions 1)");
        Mat values = c.toFloat().reshape(1, 1);
        if (c.total() == inner && inner != w)
            values = repeat(values, 1, w / inner);  // one value per feature of each row of the view
        const int qkvHeads = t.qkvHeads, qkvHeadDim = t.qkvHeadDim;
        if (qkvHeads > 0)
        {
            // the bias of GPT-NeoX's fused q|k|v, regrouped as its weight's columns (findPerHeadQKV)
            if (op != "Add" || c.total() != w)
                failNode(n, "only a bias Add follows a fused per-head q|k|v projection");
            const std::vector<int> from = perHeadQKVColumns(qkvHeads, qkvHeadDim);
            Mat permuted(1, w, CV_32F);
            for (int k = 0; k < w; k++)
                permuted.at<float>(k) = values.at<float>(from[k]);
            values = permuted;
        }
        lp.set("constant_first", constA);
        lp.blobs.push_back(values);
        define(n, 0, viewLike(t, add(lp, {pin})));
        values_.at(n.output(0)).qkvHeads = qkvHeads;
        values_.at(n.output(0)).qkvHeadDim = qkvHeadDim;
        return;
    }
    const Pin pa = tensorInput(n, 0, true), pb = tensorInput(n, 1, true);
    const Value &va = values_.at(n.input(0)), &vb = values_.at(n.input(1));
    if (va.width != vb.width || innerOf(va) != innerOf(vb) || va.heads != vb.heads || va.headsMajor != vb.headsMajor)
        failNode(n, "the operands have different shapes (broadcasting between activations is not supported)");
    Value out = va;
    out.pin = add(lp, {pa, pb});
    define(n, 0, out);
}

void ONNXNetBuilder::importSigmoid(const NodeProto& n)
{
    Value v;
    v.kind = Value::Sigmoid;
    v.pin = tensorInput(n, 0, true);
    const Value& x = values_.at(n.input(0));
    v.width = x.width;
    v.inner = x.inner;
    v.heads = x.heads;
    v.headsMajor = x.headsMajor;
    define(n, 0, v);
}

void ONNXNetBuilder::importUnary(const NodeProto& n)
{
    const std::string& op = n.op_type();
    LayerParams lp = params(n.name(), "LLMElementwise");
    lp.set("operation", op == "Relu" ? "relu" : op == "Tanh" ? "tanh" : op == "Erf" ? "erf" : op == "Sqrt" ? "sqrt" : "neg");
    const Pin x = tensorInput(n, 0, true);
    const Value& v = values_.at(n.input(0));
    define(n, 0, viewLike(v, add(lp, {x})));
}

// Pow of an activation by a constant scalar exponent: 1 (the input), 2, 3 (products), 0.5 (sqrt).
void ONNXNetBuilder::importPow(const NodeProto& n)
{
    const OnnxTensor& e = constantInput(n, 1);
    if (e.total() != 1)
        failNode(n, "only a scalar exponent is supported on activations");
    const double p = e.at(0);
    const Pin x = tensorInput(n, 0, true);
    const Value& v = values_.at(n.input(0));
    if (p == 1)
    {
        defineTensor(n, 0, x, v.width, innerOf(v));
        return;
    }
    if (p == 2 && input(n, 0).kind == Value::Tensor)
    {
        Value sq = input(n, 0);
        sq.kind = Value::Square;  // computed only if not consumed by an RMS norm's mean
        define(n, 0, sq);
        return;
    }
    if (p != 2 && p != 3 && p != 0.5)
        failNode(n, format("exponent %g: only 1, 2, 3 and 0.5 are supported on activations", p));
    LayerParams lp = params(n.name(), "LLMElementwise");
    lp.set("operation", p == 0.5 ? "sqrt" : "mul");
    Pin y = p == 0.5 ? add(lp, {x}) : add(lp, {x, x});
    if (p == 3)  // GPT-2's gelu_new as exported: x * x * x
    {
        LayerParams cube = params(n.name() + "/cube", "LLMElementwise");
        cube.set("operation", "mul");
        y = add(cube, {y, x});
    }
    define(n, 0, viewLike(v, y));
}

// ReduceMean over the features of x^2 (keepdims): the start of an RMS norm written out.
void ONNXNetBuilder::importReduceMean(const NodeProto& n)
{
    const Value& x = input(n, 0);
    std::vector<int64> axes;
    for (const auto& a : n.attribute())
        if (a.name() == "axes")
            axes.assign(a.ints().begin(), a.ints().end());
    if (axes.empty() && hasInput(n, 1))
    {
        const OnnxTensor& t = constantInput(n, 1);
        for (int64 k = 0; k < t.total(); k++)
            axes.push_back((int64)t.at(k));
    }
    // The last axis: 2 of [batch, seq, features], 3 of a [batch, seq, heads, d] view (per-head norms).
    const int64 lastAxis = x.heads > 0 ? 3 : 2;
    if (x.kind != Value::Square || (x.inner != 0 && x.heads == 0) || axes.size() != 1 ||
        (axes[0] != -1 && axes[0] != lastAxis) || onnxIntAttribute(n, "keepdims", 1) != 1)
        failNode(n, "only the mean over the features (axes [-1], keepdims) of Pow(x, 2) is supported on activations "
                    "(an RMS norm written out)");
    Value v = x;
    v.kind = Value::MeanSquare;
    v.eps = 0.f;
    define(n, 0, v);
}

// The steps of an RMS norm written out: Add(mean, eps), Sqrt, Reciprocal (or Div(1, .)), then
// Mul(x, 1 / rms) or Div(x, rms) with the x whose squares were averaged -> RMSNorm.
bool ONNXNetBuilder::importWrittenOutRMSNorm(const NodeProto& n)
{
    const std::string& op = n.op_type();
    auto kindOf = [&](int i) { return hasInput(n, i) && values_.count(n.input(i)) ? values_.at(n.input(i)).kind : Value::Tensor; };
    auto isReduction = [](Value::Kind k) {
        return k == Value::MeanSquare || k == Value::RootMeanSquare || k == Value::InvRootMeanSquare;
    };
    if (!n.domain().empty() || n.input_size() < 1 || !(isReduction(kindOf(0)) || (n.input_size() > 1 && isReduction(kindOf(1)))))
        return false;
    const int r = isReduction(kindOf(0)) ? 0 : 1;
    Value v = values_.at(n.input(r));
    if (op == "Add" && v.kind == Value::MeanSquare && input(n, 1 - r).kind == Value::Constant &&
        input(n, 1 - r).constant->total() == 1)
    {
        v.eps += (float)input(n, 1 - r).constant->at(0);
    }
    else if (op == "Sqrt" && v.kind == Value::MeanSquare)
        v.kind = Value::RootMeanSquare;
    else if ((op == "Reciprocal" && v.kind == Value::RootMeanSquare) ||
             (op == "Div" && r == 1 && v.kind == Value::RootMeanSquare && input(n, 0).kind == Value::Constant &&
              input(n, 0).constant->total() == 1 && input(n, 0).constant->at(0) == 1.0))
        v.kind = Value::InvRootMeanSquare;
    else if ((op == "Mul" && v.kind == Value::InvRootMeanSquare) || (op == "Div" && r == 1 && v.kind == Value::RootMeanSquare))
    {
        const Value& x = input(n, 1 - r);
        if ((x.kind != Value::Tensor && x.kind != Value::Square) || x.pin.layer != v.pin.layer || x.pin.output != v.pin.output)
            failNode(n, "an RMS norm written out must scale the same x whose squares it averaged");
        LayerParams lp = params(n.name(), "RMSNorm");
        lp.set("epsilon", v.eps);
        const int row = innerOf(v);
        if (row != v.width)
            lp.set("group_size", row);  // each head's row of the view normalized on its own
        lp.blobs.push_back(Mat::ones(1, row, CV_32F));
        Value out = v;
        out.kind = Value::Tensor;
        out.pin = add(lp, {v.pin});
        define(n, 0, out);
        return true;
    }
    else
        failNode(n, "a mean over the features is supported only inside an RMS norm written out "
                    "(x * 1 / sqrt(mean(x^2) + eps), or x / sqrt(...))");
    define(n, 0, v);
    return true;
}

// GELU: ai.onnx Gelu (approximate "none" / "tanh"), com.microsoft Gelu (erf), FastGelu (tanh,
// optional bias), BiasGelu (erf of x + bias).
void ONNXNetBuilder::importGelu(const NodeProto& n)
{
    const std::string& op = n.op_type();
    bool tanhForm = op == "FastGelu";
    if (op == "Gelu")
        for (const auto& a : n.attribute())
            if (a.name() == "approximate")
            {
                if (a.s() != "none" && a.s() != "tanh")
                    failNode(n, "approximate must be \"none\" or \"tanh\"");
                tanhForm = a.s() == "tanh";
            }
    Pin x = tensorInput(n, 0, true);
    const Value& v = values_.at(n.input(0));
    const int w = v.width, inner = innerOf(v);
    if (op == "BiasGelu" && !hasInput(n, 1))
        failNode(n, "BiasGelu needs its bias input");
    if (op != "Gelu" && hasInput(n, 1))
    {
        const OnnxTensor& bias = constantInput(n, 1);
        if (bias.total() != inner)
            failNode(n, format("the bias has %lld values, the input %d features", (long long)bias.total(), inner));
        x = addBias(n.name() + "/bias", x, repeat(bias.toFloat().reshape(1, 1), 1, w / inner));
    }
    LayerParams lp = params(n.name(), "LLMElementwise");
    lp.set("operation", tanhForm ? "gelu_tanh" : "gelu");
    define(n, 0, viewLike(v, add(lp, {x})));
}

// LayerNormalization over the features (ai.onnx; the bias optional) -> LLMLayerNorm.
void ONNXNetBuilder::importLayerNorm(const NodeProto& n)
{
    normAxisCheck(n);
    if (outputNeeded(n, 1) || outputNeeded(n, 2))
        failNode(n, "only the normalized output is supported (not Mean / InvStdDev)");
    const Pin x = tensorInput(n, 0);
    const int w = values_.at(n.input(0)).width;
    const Mat scale = constantInput(n, 1).toFloat().reshape(1, 1);
    if ((int)scale.total() != w)
        failNode(n, format("the scale has %zu values, the input %d features", scale.total(), w));
    Mat bias = Mat::zeros(1, w, CV_32F);
    if (hasInput(n, 2))
    {
        bias = constantInput(n, 2).toFloat().reshape(1, 1);
        if ((int)bias.total() != w)
            failNode(n, format("the bias has %zu values, the input %d features", bias.total(), w));
    }
    defineTensor(n, 0, addLayerNorm(n, x, scale, bias, onnxFloatAttribute(n, "epsilon", 1e-5f)), w);
}

int ONNXNetBuilder::normAxisCheck(const NodeProto& n)
{
    const int64 axis = onnxIntAttribute(n, "axis", -1);
    if (axis != -1 && axis != 2)
        failNode(n, format("axis %lld: only the feature axis (-1) is supported", (long long)axis));
    return (int)axis;
}

// RMSNorm of x with the node's scale input; returns the layer (output 1: inv_std_var).
int ONNXNetBuilder::rmsNorm(const NodeProto& n, Pin x, int w, int scaleInput, int group)
{
    normAxisCheck(n);
    const Mat scale = constantInput(n, scaleInput).toFloat().reshape(1, 1);
    const int size = group > 0 ? group : w;
    if ((int)scale.total() != size)
        failNode(n, format("the scale has %zu values, the input %d features", scale.total(), size));
    LayerParams lp = params(n.name(), "RMSNorm");
    lp.set("epsilon", onnxFloatAttribute(n, "epsilon", 1e-5f));
    if (group > 0)
        lp.set("group_size", group);  // each row of the view (e.g. each head) normalized on its own
    lp.blobs.push_back(scale);
    return add(lp, {x}).layer;
}

void ONNXNetBuilder::importRMSNorm(const NodeProto& n)
{
    const Pin x = tensorInput(n, 0, true);
    const Value& v = values_.at(n.input(0));
    const int w = v.width, inner = innerOf(v);
    if (inner != w && outputNeeded(n, 1))
        failNode(n, "the inv_std_var output of a per-row norm of a view is not supported");
    const int id = rmsNorm(n, x, w, 1, inner != w ? inner : 0);
    define(n, 0, viewLike(v, Pin{id, 0}));
    if (inner == w)
        defineTensor(n, 1, Pin{id, 1}, 1);  // inv_std_var
}

// com.microsoft EmbedLayerNormalization (onnxruntime.transformers' GPT-2 / BERT embeddings):
// word[input_ids] + position[position_ids] -> LLMTokenEmbedding, LLMPositionEmbedding (positions
// from the KV cache), LayerNorm with gamma and beta; outputs normalized, mask_index, the sum.
void ONNXNetBuilder::importEmbedLayerNorm(const NodeProto& n)
{
    if (outputNeeded(n, 1))
        failNode(n, "the mask_index output is not supported (the KV cache does the masking)");
    const Value& ids = input(n, 0);
    if (ids.kind != Value::TokenIds)
        failNode(n, "input_ids must be the graph's token ids");
    if (hasInput(n, 1) || hasInput(n, 4))
        failNode(n, "segment embeddings are not supported");
    if (hasInput(n, 8) && input(n, 8).kind != Value::CacheInput)
        failNode(n, "position_ids must be the graph's position input (the KV cache knows each token's position)");
    int dim = 0, posDim = 0;
    const Pin words = addEmbedding(n, n.name() + "/word", "LLMTokenEmbedding", ids.pin, constantInput(n, 2), dim);
    const Pin sum = addEmbedding(n, n.name() + "/position", "LLMPositionEmbedding", words, constantInput(n, 3), posDim);
    if (posDim != dim)
        failNode(n, format("the position embedding has %d features, the word embedding %d", posDim, dim));
    positionLayers_.push_back(sum.layer);
    const Mat gamma = constantInput(n, 5).toFloat().reshape(1, 1), beta = constantInput(n, 6).toFloat().reshape(1, 1);
    if ((int)gamma.total() != dim || (int)beta.total() != dim)
        failNode(n, format("gamma and beta must have one value per feature (%d)", dim));
    defineTensor(n, 0, addLayerNorm(n, sum, gamma, beta, onnxFloatAttribute(n, "epsilon", 1e-12f)), dim);
    defineTensor(n, 2, sum, dim);
}

// com.microsoft SkipLayerNormalization (input, skip, gamma, beta, bias): LayerNorm of
// input + skip (+ bias) with a shift; outputs normalized, mean, inv_std_var, the sum.
// The skip norms' input + skip (+ the optional bias input `biasInput`), one value per feature.
Pin ONNXNetBuilder::skipSum(const NodeProto& n, int biasInput)
{
    const Pin x = tensorInput(n, 0), skip = tensorInput(n, 1);
    const int w = values_.at(n.input(0)).width;
    if (values_.at(n.input(1)).width != w)
        failNode(n, "input and skip have different widths");
    LayerParams lp = params(n.name() + "/residual", "LLMElementwise");
    lp.set("operation", "add");
    Pin sum = add(lp, {x, skip});
    if (hasInput(n, biasInput))
    {
        const Mat bias = constantInput(n, biasInput).toFloat().reshape(1, 1);
        if ((int)bias.total() != w)
            failNode(n, "the bias must have one value per feature");
        sum = addBias(n.name() + "/bias", sum, bias);
    }
    return sum;
}

void ONNXNetBuilder::importSkipLayerNorm(const NodeProto& n)
{
    if (outputNeeded(n, 1) || outputNeeded(n, 2))
        failNode(n, "only the normalized output and the sum are supported (not mean / inv_std_var)");
    const Pin sum = skipSum(n, 4);  // (checks the inputs first)
    const int w = values_.at(n.input(0)).width;
    const Mat gamma = constantInput(n, 2).toFloat().reshape(1, 1);
    Mat beta = Mat::zeros(1, w, CV_32F);
    if (hasInput(n, 3))
        beta = constantInput(n, 3).toFloat().reshape(1, 1);
    if ((int)gamma.total() != w || (int)beta.total() != w)
        failNode(n, format("gamma and beta must have one value per feature (%d)", w));
    defineTensor(n, 0, addLayerNorm(n, sum, gamma, beta, onnxFloatAttribute(n, "epsilon", 1e-12f)), w);
    defineTensor(n, 3, sum, w);
}

void ONNXNetBuilder::importSkipRMSNorm(const NodeProto& n)
{
    // outputs: normalized, mean (unused by the simplified form), inv_std_var, input + skip (+ bias)
    if (outputNeeded(n, 1))
        failNode(n, "the mean output is not supported (the simplified form has no mean)");
    const Pin sum = skipSum(n, 3);  // (checks the inputs first)
    const int w = values_.at(n.input(0)).width;
    const int id = rmsNorm(n, sum, w, 2);
    defineTensor(n, 0, Pin{id, 0}, w);
    defineTensor(n, 2, Pin{id, 1}, 1);  // inv_std_var
    defineTensor(n, 3, sum, w);
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
