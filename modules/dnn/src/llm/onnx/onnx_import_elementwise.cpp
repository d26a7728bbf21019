// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer: element-wise operators (Add / Sub / Mul / Div, SiLU and SwiGLU written out,
// Sigmoid, Relu, Tanh, Neg) and the RMS norms.

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
        const Pin pin = tensorInput(n, x);
        const int w = values_.at(n.input(x)).width;
        const OnnxTensor& c = *(constA ? a : b).constant;
        if (c.total() != 1 && c.total() != w)
            failNode(n, format("the constant has %lld values; only a scalar or one value per feature (%d) "
                               "broadcasts over the activations", (long long)c.total(), w));
        lp.set("constant_first", constA);
        lp.blobs.push_back(c.toFloat().reshape(1, 1));
        defineTensor(n, 0, add(lp, {pin}), w);
        return;
    }
    const Pin pa = tensorInput(n, 0), pb = tensorInput(n, 1);
    const int w = values_.at(n.input(0)).width;
    if (values_.at(n.input(1)).width != w)
        failNode(n, "the operands have different widths (broadcasting between activations is not supported)");
    defineTensor(n, 0, add(lp, {pa, pb}), w);
}

void ONNXNetBuilder::importSigmoid(const NodeProto& n)
{
    Value v;
    v.kind = Value::Sigmoid;
    v.pin = tensorInput(n, 0);
    v.width = values_.at(n.input(0)).width;
    define(n, 0, v);
}

void ONNXNetBuilder::importUnary(const NodeProto& n)
{
    const std::string& op = n.op_type();
    LayerParams lp = params(n.name(), "LLMElementwise");
    lp.set("operation", op == "Relu" ? "relu" : op == "Tanh" ? "tanh" : "neg");
    const Pin x = tensorInput(n, 0);
    defineTensor(n, 0, add(lp, {x}), values_.at(n.input(0)).width);
}

int ONNXNetBuilder::normAxisCheck(const NodeProto& n)
{
    const int64 axis = onnxIntAttribute(n, "axis", -1);
    if (axis != -1 && axis != 2)
        failNode(n, format("axis %lld: only the feature axis (-1) is supported", (long long)axis));
    return (int)axis;
}

// RMSNorm of x with the node's scale input; returns the layer (output 1: inv_std_var).
int ONNXNetBuilder::rmsNorm(const NodeProto& n, Pin x, int w, int scaleInput)
{
    normAxisCheck(n);
    const Mat scale = constantInput(n, scaleInput).toFloat().reshape(1, 1);
    if ((int)scale.total() != w)
        failNode(n, format("the scale has %zu values, the input %d features", scale.total(), w));
    LayerParams lp = params(n.name(), "RMSNorm");
    lp.set("epsilon", onnxFloatAttribute(n, "epsilon", 1e-5f));
    lp.blobs.push_back(scale);
    return add(lp, {x}).layer;
}

void ONNXNetBuilder::importRMSNorm(const NodeProto& n)
{
    const Pin x = tensorInput(n, 0);
    const int w = values_.at(n.input(0)).width;
    const int id = rmsNorm(n, x, w, 1);
    defineTensor(n, 0, Pin{id, 0}, w);
    defineTensor(n, 1, Pin{id, 1}, 1);  // inv_std_var
}

void ONNXNetBuilder::importSkipRMSNorm(const NodeProto& n)
{
    // outputs: normalized, mean (unused by the simplified form), inv_std_var, input + skip (+ bias)
    if (outputNeeded(n, 1))
        failNode(n, "the mean output is not supported (the simplified form has no mean)");
    const Pin x = tensorInput(n, 0), skip = tensorInput(n, 1);
    const int w = values_.at(n.input(0)).width;
    if (values_.at(n.input(1)).width != w)
        failNode(n, "input and skip have different widths");
    LayerParams lp = params(n.name() + "/residual", "LLMElementwise");
    lp.set("operation", "add");
    Pin sum = add(lp, {x, skip});
    if (hasInput(n, 3))
    {
        const Mat bias = constantInput(n, 3).toFloat().reshape(1, 1);
        if ((int)bias.total() != w)
            failNode(n, "the bias must have one value per feature");
        LayerParams b = params(n.name() + "/bias", "LLMElementwise");
        b.set("operation", "add");
        b.blobs.push_back(bias);
        sum = add(b, {sum});
    }
    const int id = rmsNorm(n, sum, w, 2);
    defineTensor(n, 0, Pin{id, 0}, w);
    defineTensor(n, 2, Pin{id, 1}, 1);  // inv_std_var
    defineTensor(n, 3, sum, w);
}

}}}} // namespace cv::dnn::llm::onnx_import

#endif // HAVE_PROTOBUF
