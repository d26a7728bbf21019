// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Imports an ONNX decoder (ONNX Runtime GenAI builder style) onto the LLM layers.
//
// The graph is walked backwards from the logits to find the nodes that matter
// (decoder_graph.hpp); the KV cache's plumbing is not among them: past_key_values.* inputs,
// present.* outputs and the attention mask's subgraph (seqlens_k, total_sequence_length, the
// 4-D attention bias) only feed attention inputs that the Net's paged KV cache replaces. The
// other nodes become layers, in topological order:
//   Gather(table, input_ids)              -> LLMTokenEmbedding (fp32 / fp16 / bf16 rows)
//   MatMul(x, W), MatMulNBits(x, ...)     -> LLMMatMul (MatMulNBits repacked to Q4_0 / Q4_1 / Q8_0)
//   (Skip)SimplifiedLayerNormalization, RMSNormalization -> RMSNorm (+ LLMElementwise add)
//   RotaryEmbedding                       -> folded into the attention that consumes it
//   GroupQueryAttention, MultiHeadAttention, Attention -> LLMAttention on the shared cache
//   Mul(Mul(x, Sigmoid(x)), y)            -> LLMElementwise swiglu; other element-wise ops -> LLMElementwise
//   Cast, Identity                        -> nothing (the Net computes in float32)
// Activations are 2-D in the Net (tokens x features): ONNX's [batch, sequence, features] with
// the batch's sequences laid out as the cache's batch plan says. Anything else on the path to
// the logits is an error naming the node and its operator.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_proto.hpp"

#include "../llm_layers.hpp"
#include "../ggml/ggml_types.hpp"
#include "onnx_model_file.hpp"
#include "genai_config.hpp"
#include "matmul_nbits.hpp"
#include "decoder_graph.hpp"
#include "../net/net_assembly.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

namespace cv {
namespace dnn {
namespace llm {

namespace {

using opencv_onnx::NodeProto;

using Pin = LayerPin;

// Angle tables of a rotary embedding, as ONNX Runtime's cos_cache / sin_cache give them.
struct RotaryTables
{
    Mat cos, sin;  // positions x pairs, float32
    bool neox = false;
    std::string cosName, sinName;

    bool sameAs(const RotaryTables& o) const
    {
        return cosName == o.cosName && sinName == o.sinName && neox == o.neox;
    }
};

// What a graph value is while the Net is built.
struct Value
{
    enum Kind
    {
        Tensor,      // an activation: output `pin` of a layer, `width` features per token
        Constant,    // an initializer or a Constant node
        TokenIds,    // the input_ids graph input
        CacheInput,  // another graph input (mask, positions, past keys/values): the cache replaces it
        Rotated,     // RotaryEmbedding of `pin`, applied by the attention that consumes it
        Sigmoid,     // sigmoid(pin), not computed unless something other than SiLU needs it
        Silu         // pin * sigmoid(pin), not computed unless something other than SwiGLU needs it
    };
    Kind kind = Tensor;
    Pin pin;
    int width = 0;
    std::shared_ptr<const OnnxTensor> constant;
    std::shared_ptr<RotaryTables> rotary;
    std::string name;
};

bool isOp(const NodeProto& n, const char* type)
{
    return n.op_type() == type;
}

class ONNXNetBuilder
{
public:
    ONNXNetBuilder(const OnnxModelFile& file, const GenAIConfig& config, const LoadOptions& options)
        : f_(file), allLogits_(options.allLogits), integerDot_(options.integerDot),
          contextLength_(options.contextLength), config_(config)
    {
    }

    Net build()
    {
        const opencv_onnx::GraphProto& g = f_.graph();
        defineGraphInputs(g);
        const std::string logits = logitsName(g);
        graph_ = analyzeDecoderGraph(f_, logits);
        for (int i : graph_.order)
            importNode(g.node(i));
        if (!values_.count(logits))
            f_.fail("the logits output '" + logits + "' is not computed by the graph");
        Value out = values_.at(logits);
        Pin last = tensor(out, "the logits output '" + logits + "'");
        if (!logitRowsAdded_)
            last = addLogitRows(last);
        (void)last;
        attachCache();
        return net_;
    }

private:
    // ---- graph structure -------------------------------------------------------------

    void defineGraphInputs(const opencv_onnx::GraphProto& g)
    {
        bool hasIds = false;
        for (const auto& in : g.input())
        {
            if (f_.findInitializer(in.name()))
                continue;  // old exporters list initializers as inputs too
            Value v;
            v.name = in.name();
            if (in.name() == config_.inputIdsName)
            {
                v.kind = Value::TokenIds;
                v.pin = Pin{0, 0};
                hasIds = true;
            }
            else
            {
                v.kind = Value::CacheInput;
            }
            values_[in.name()] = v;
        }
        if (!hasIds)
            f_.fail("the graph has no input '" + config_.inputIdsName + "' (token ids)");
        net_.setInputsNames({"input_ids"});
    }

    std::string logitsName(const opencv_onnx::GraphProto& g) const
    {
        if (g.output_size() == 0)
            f_.fail("the graph has no outputs");
        for (const auto& out : g.output())
            if (out.name() == config_.logitsName)
                return out.name();
        return g.output(0).name();
    }

    // ---- values ----------------------------------------------------------------------

    [[noreturn]] void failNode(const NodeProto& n, const std::string& msg) const
    {
        f_.fail("node " + onnxNodeLabel(n) + ": " + msg);
    }

    // An integer attribute that must fit an int (head counts, sizes): larger values are an
    // error, not silently truncated.
    int intAttribute(const NodeProto& n, const char* name, int def) const
    {
        const int64 v = onnxIntAttribute(n, name, def);
        if (v < INT_MIN || v > INT_MAX)
            failNode(n, format("attribute %s = %lld is out of range", name, (long long)v));
        return (int)v;
    }

    bool hasInput(const NodeProto& n, int i) const
    {
        return i < n.input_size() && !n.input(i).empty();
    }

    const Value& input(const NodeProto& n, int i)
    {
        if (!hasInput(n, i))
            failNode(n, format("input %d is missing", i));
        const std::string& name = n.input(i);
        auto it = values_.find(name);
        if (it != values_.end())
            return it->second;
        if (const OnnxTensor* t = f_.findInitializer(name))
        {
            Value v;
            v.kind = Value::Constant;
            v.name = name;
            v.constant = std::shared_ptr<const OnnxTensor>(std::shared_ptr<void>(), t);  // owned by the file
            return values_[name] = v;
        }
        failNode(n, "input '" + name + "' is neither a graph input, an initializer nor computed by a node");
    }

    // An activation input; a pending sigmoid or SiLU is computed now.
    Pin tensorInput(const NodeProto& n, int i)
    {
        const Value& v = input(n, i);
        return tensor(v, "node " + onnxNodeLabel(n) + format(" input %d ('%s')", i, n.input(i).c_str()));
    }

    Pin tensor(const Value& v, const std::string& where)
    {
        switch (v.kind)
        {
        case Value::Tensor:
            return v.pin;
        case Value::Sigmoid:
        case Value::Silu:
        {
            LayerParams lp = params(v.name + "/" + (v.kind == Value::Sigmoid ? "sigmoid" : "silu"), "LLMElementwise");
            lp.set("operation", v.kind == Value::Sigmoid ? "sigmoid" : "silu");
            Value& stored = values_[v.name];
            stored.kind = Value::Tensor;
            stored.pin = add(lp, {v.pin});
            return stored.pin;
        }
        case Value::Rotated:
            f_.fail(where + ": a RotaryEmbedding output is supported only as an attention's query or key");
        case Value::Constant:
            f_.fail(where + ": a constant where an activation is expected (constant folding is not supported)");
        case Value::TokenIds:
            f_.fail(where + ": the token ids are supported only as the indices of the embedding Gather");
        case Value::CacheInput:
            break;
        }
        f_.fail(where + ": graph input '" + v.name + "' is used in a way the KV cache cannot replace "
                "(only as attention masks, sequence lengths, positions and past keys / values)");
    }

    const OnnxTensor& constantInput(const NodeProto& n, int i)
    {
        const Value& v = input(n, i);
        if (v.kind != Value::Constant)
            failNode(n, format("input %d ('%s') must be a constant (an initializer or a Constant node)", i, n.input(i).c_str()));
        return *v.constant;
    }

    int width(const NodeProto& n, int i)
    {
        tensorInput(n, i);
        return values_.at(n.input(i)).width;
    }

    void define(const NodeProto& n, int output, Value v)
    {
        if (output >= n.output_size() || n.output(output).empty())
            return;
        v.name = n.output(output);
        values_[v.name] = v;
    }

    void defineTensor(const NodeProto& n, int output, Pin pin, int width)
    {
        Value v;
        v.kind = Value::Tensor;
        v.pin = pin;
        v.width = width;
        define(n, output, v);
    }

    bool outputNeeded(const NodeProto& n, int output) const
    {
        return output < n.output_size() && !n.output(output).empty() && graph_.neededValues.count(n.output(output));
    }

    // ---- layers ----------------------------------------------------------------------

    LayerParams params(const std::string& name, const std::string& type)
    {
        LayerParams lp;
        std::string unique = name.empty() ? type : name;
        for (int k = 1; !layerNames_.insert(unique).second; k++)
            unique = (name.empty() ? type : name) + format("_%d", k);
        lp.name = unique;
        lp.type = type;
        return lp;
    }

    Pin add(LayerParams& lp, const std::vector<Pin>& inputs)
    {
        return addConnectedLayer(net_, lp, inputs);
    }

    Pin addLogitRows(Pin x)
    {
        LayerParams lp = params("logit_rows", "LLMLogitRows");
        lp.set("all_logits", allLogits_);
        Pin p = add(lp, {x});
        logitRowsLayer_ = p.layer;
        logitRowsAdded_ = true;
        return p;
    }

    // ---- nodes -----------------------------------------------------------------------

    void importNode(const NodeProto& n)
    {
        const std::string& op = n.op_type();
        if (op == "Constant")
            importConstant(n);
        else if (op == "Identity" || op == "Cast")
            define(n, 0, input(n, 0));
        else if (op == "Gather")
            importGather(n);
        else if (op == "MatMul")
            importMatMul(n);
        else if (op == "MatMulNBits")
            importMatMulNBits(n);
        else if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div")
            importBinary(n);
        else if (op == "Sigmoid")
            importSigmoid(n);
        else if (op == "Relu" || op == "Tanh" || op == "Neg")
            importUnary(n);
        else if (op == "SimplifiedLayerNormalization" || op == "RMSNormalization")
            importRMSNorm(n);
        else if (op == "SkipSimplifiedLayerNormalization")
            importSkipRMSNorm(n);
        else if (op == "RotaryEmbedding")
            importRotary(n);
        else if (isAttentionOp(n))
            importAttention(n);
        else
            failNode(n, "operator not supported by the LLM importer (supported: Gather, MatMul, MatMulNBits, "
                        "Add, Sub, Mul, Div, Sigmoid, Relu, Tanh, Neg, Cast, Identity, Constant, "
                        "SimplifiedLayerNormalization, SkipSimplifiedLayerNormalization, RMSNormalization, "
                        "RotaryEmbedding, GroupQueryAttention, MultiHeadAttention, Attention)");
    }

    void importConstant(const NodeProto& n)
    {
        auto t = std::make_shared<OnnxTensor>();
        for (const auto& a : n.attribute())
        {
            if (a.name() == "value")
                *t = f_.readTensor(a.t());
            else if (a.name() == "value_float" || a.name() == "value_floats" || a.name() == "value_int" ||
                     a.name() == "value_ints")
            {
                const bool isFloat = a.name().compare(0, 11, "value_float") == 0;
                const bool isList = a.name().back() == 's';
                auto buf = std::make_shared<std::vector<uchar>>();
                const int count = isList ? (isFloat ? a.floats_size() : a.ints_size()) : 1;
                buf->resize((size_t)count * (isFloat ? 4 : 8));
                for (int i = 0; i < count; i++)
                {
                    if (isFloat)
                    {
                        const float v = isList ? a.floats(i) : a.f();
                        std::memcpy(buf->data() + 4 * i, &v, 4);
                    }
                    else
                    {
                        const int64_t v = isList ? a.ints(i) : a.i();
                        std::memcpy(buf->data() + 8 * i, &v, 8);
                    }
                }
                t->dataType = isFloat ? ONNX_FLOAT : ONNX_INT64;
                if (isList)
                    t->shape = {count};
                t->data = buf->data();
                t->bytes = buf->size();
                t->owner = buf;
            }
            else
                failNode(n, "attribute '" + a.name() + "' is not supported");
        }
        if (!t->data && t->bytes == 0 && t->dataType == 0)
            failNode(n, "has no value");
        t->name = n.output_size() ? n.output(0) : std::string();
        Value v;
        v.kind = Value::Constant;
        v.constant = t;
        define(n, 0, v);
    }

    static GGMLType ggmlFloatType(int onnxType)
    {
        return onnxType == ONNX_FLOAT ? GGML_F32 : onnxType == ONNX_FLOAT16 ? GGML_F16 : GGML_BF16;
    }

    void importGather(const NodeProto& n)
    {
        const Value& ids = input(n, 1);
        if (ids.kind != Value::TokenIds)
            failNode(n, "only the token-embedding lookup (Gather of a constant table by input_ids) is supported");
        const OnnxTensor& table = constantInput(n, 0);
        if (onnxIntAttribute(n, "axis", 0) != 0)
            failNode(n, "axis must be 0");
        if (table.shape.size() != 2 || table.shape[0] <= 0 || table.shape[1] <= 0 ||
            table.shape[0] > INT_MAX || table.shape[1] > INT_MAX)
            failNode(n, "the embedding table must be a non-empty 2-D tensor");
        if (table.dataType != ONNX_FLOAT && table.dataType != ONNX_FLOAT16 && table.dataType != ONNX_BFLOAT16)
            failNode(n, "the embedding table must be float, float16 or bfloat16");
        const int vocab = (int)table.shape[0], dim = (int)table.shape[1];
        LayerParams lp = params(n.name(), "LLMTokenEmbedding");
        lp.set("ggml_type", (int)ggmlFloatType(table.dataType));
        lp.set("embedding_length", dim);
        lp.set("vocab_size", vocab);
        lp.blobs.push_back(table.rawRows(vocab, (int64)dim * onnxElementSize(table.dataType)));
        defineTensor(n, 0, add(lp, {ids.pin}), dim);
    }

    // The activation input of a matmul; the logit-row selection goes in front of the logits' one.
    Pin matmulInput(const NodeProto& n)
    {
        Pin a = tensorInput(n, 0);
        if (&n == graph_.logitsProducer)
            a = addLogitRows(a);
        return a;
    }

    void importMatMul(const NodeProto& n)
    {
        const int k = width(n, 0);
        const OnnxTensor& w = constantInput(n, 1);
        if (w.shape.size() != 2 || w.shape[0] != k || w.shape[1] <= 0 || w.shape[1] > INT_MAX)
            failNode(n, format("the weight must be a constant [%d, N] matrix", k));
        if (w.dataType != ONNX_FLOAT && w.dataType != ONNX_FLOAT16 && w.dataType != ONNX_BFLOAT16)
            failNode(n, "the weight must be float, float16 or bfloat16");
        const int outFeatures = (int)w.shape[1];
        // ONNX stores W as [K, N]; LLMMatMul wants N rows of K elements.
        const int depth = w.dataType == ONNX_FLOAT ? CV_32S : CV_16U;  // bit patterns, transposed as they are
        Mat stored(k, outFeatures, depth, const_cast<uchar*>(w.data));
        Mat rows;
        cv::transpose(stored, rows);
        LayerParams lp = params(n.name(), "LLMMatMul");
        lp.set("ggml_type", (int)ggmlFloatType(w.dataType));
        lp.set("in_features", k);
        lp.set("out_features", outFeatures);
        lp.set("integer_dot", integerDot_);
        lp.blobs.push_back(Mat(outFeatures, (int)(k * onnxElementSize(w.dataType)), CV_8U, rows.data).clone());
        defineTensor(n, 0, add(lp, {matmulInput(n)}), outFeatures);
    }

    void importMatMulNBits(const NodeProto& n)
    {
        MatMulNBitsWeights q;
        q.in = intAttribute(n, "K", -1);
        q.out = intAttribute(n, "N", -1);
        q.bits = intAttribute(n, "bits", 4);
        q.blockSize = intAttribute(n, "block_size", -1);
        if (width(n, 0) != q.in)
            failNode(n, format("attribute K = %d, the input has %d features", q.in, width(n, 0)));
        q.packed = &constantInput(n, 1);
        q.scales = &constantInput(n, 2);
        if (hasInput(n, 3))
            q.zeroPoints = &constantInput(n, 3);
        if (hasInput(n, 4))
            failNode(n, "g_idx (act-order) is not supported");
        Mat bias;
        if (hasInput(n, 5))
        {
            bias = constantInput(n, 5).toFloat().reshape(1, 1);
            if ((int)bias.total() != q.out)
                failNode(n, format("bias has %zu values, N is %d", bias.total(), q.out));
        }
        ConvertedWeights w;
        try
        {
            w = convertMatMulNBits(q);
        }
        catch (const cv::Exception& e)
        {
            failNode(n, e.err);
        }
        LayerParams lp = params(n.name(), "LLMMatMul");
        lp.set("ggml_type", (int)w.type);
        lp.set("in_features", q.in);
        lp.set("out_features", q.out);
        // accuracy_level 4 lets the input be quantized to int8 (ONNX Runtime does so too): our
        // integer dot products. Lower levels ask for float inputs: the exact float path.
        lp.set("integer_dot", integerDot_ && onnxIntAttribute(n, "accuracy_level", 0) == 4);
        lp.blobs.push_back(w.rows);
        if (!bias.empty())
            lp.blobs.push_back(bias);
        defineTensor(n, 0, add(lp, {matmulInput(n)}), q.out);
    }

    void importBinary(const NodeProto& n)
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

    void importSigmoid(const NodeProto& n)
    {
        Value v;
        v.kind = Value::Sigmoid;
        v.pin = tensorInput(n, 0);
        v.width = values_.at(n.input(0)).width;
        define(n, 0, v);
    }

    void importUnary(const NodeProto& n)
    {
        const std::string& op = n.op_type();
        LayerParams lp = params(n.name(), "LLMElementwise");
        lp.set("operation", op == "Relu" ? "relu" : op == "Tanh" ? "tanh" : "neg");
        const Pin x = tensorInput(n, 0);
        defineTensor(n, 0, add(lp, {x}), values_.at(n.input(0)).width);
    }

    int normAxisCheck(const NodeProto& n)
    {
        const int64 axis = onnxIntAttribute(n, "axis", -1);
        if (axis != -1 && axis != 2)
            failNode(n, format("axis %lld: only the feature axis (-1) is supported", (long long)axis));
        return (int)axis;
    }

    // RMSNorm of x with the node's scale input; returns the layer (output 1: inv_std_var).
    int rmsNorm(const NodeProto& n, Pin x, int w, int scaleInput)
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

    void importRMSNorm(const NodeProto& n)
    {
        const Pin x = tensorInput(n, 0);
        const int w = values_.at(n.input(0)).width;
        const int id = rmsNorm(n, x, w, 1);
        defineTensor(n, 0, Pin{id, 0}, w);
        defineTensor(n, 1, Pin{id, 1}, 1);  // inv_std_var
    }

    void importSkipRMSNorm(const NodeProto& n)
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

    std::shared_ptr<RotaryTables> rotaryTables(const NodeProto& n, int cosInput, int sinInput, bool interleaved)
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

    void importRotary(const NodeProto& n)
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

    void importAttention(const NodeProto& n)
    {
        const bool gqa = isOp(n, "GroupQueryAttention"), mha = isOp(n, "MultiHeadAttention");
        for (int out = 1; out < n.output_size(); out++)
            if (outputNeeded(n, out))
                failNode(n, "only the attention output is supported (present keys and values live in the KV cache)");
        const int past = pastKeyInput(n);
        if (!hasInput(n, past) || input(n, past).kind != Value::CacheInput)
            failNode(n, "an attention without past keys / values from the graph's inputs is not a decoder's "
                        "causal attention, which is what the importer supports");

        int heads, kvHeads;
        if (gqa)
        {
            heads = intAttribute(n, "num_heads", 0);
            kvHeads = intAttribute(n, "kv_num_heads", 0);
            if (onnxIntAttribute(n, "local_window_size", -1) != -1)
                failNode(n, "local_window_size (sliding-window attention) is not supported");
            if (onnxFloatAttribute(n, "softcap", 0.f) != 0.f)
                failNode(n, "softcap is not supported");
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

        LayerParams lp = params(n.name(), "LLMAttention");
        lp.set("num_heads", heads);
        lp.set("num_kv_heads", kvHeads);
        lp.set("head_dim", headDim);
        lp.set("max_context", contextLength());
        const float scale = onnxFloatAttribute(n, "scale", 0.f);
        if (scale != 0.f)
            lp.set("scale", scale);
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
        const Pin out = add(lp, inputs);
        attention_.push_back({out.layer, kvHeads, headDim});
        defineTensor(n, 0, out, heads * headDim);
    }

    // The caller's choice, else genai_config.json's.
    int contextLength() const
    {
        return contextLength_ > 0 ? contextLength_ : config_.contextLength > 0 ? config_.contextLength : kDefaultContext;
    }

    void attachCache()
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
    }

    // Without genai_config.json's context_length (and without rotary tables to bound it).
    static constexpr int kDefaultContext = 4096;

    struct AttentionInfo
    {
        int layer, kvHeads, headDim;
    };

    const OnnxModelFile& f_;
    bool allLogits_, integerDot_;
    int contextLength_;
    GenAIConfig config_;
    Net net_;
    std::map<std::string, Value> values_;
    DecoderGraph graph_;
    std::set<std::string> layerNames_;
    bool logitRowsAdded_ = false;
    int logitRowsLayer_ = -1;
    std::vector<AttentionInfo> attention_;
};

} // namespace

bool isONNXLanguageModel(const OnnxModelFile& file)
{
    std::set<std::string> graphInputs;
    for (const auto& in : file.graph().input())
        graphInputs.insert(in.name());
    for (const NodeProto& n : file.graph().node())
    {
        if (!isAttentionOp(n))
            continue;
        const int past = pastKeyInput(n);
        if (past < n.input_size() && graphInputs.count(n.input(past)))
            return true;
    }
    return false;
}

Net buildNetFromONNXLanguageModel(const OnnxModelFile& file, const GenAIConfig& config, const LoadOptions& options)
{
    return ONNXNetBuilder(file, config, options).build();
}

bool mayBeONNXLanguageModel(const String& path)
{
    // Every attention operator this importer knows has "Attention" in its type name, which the
    // serialized graph holds as plain bytes: without them, the file is not one of ours. Scanning
    // the mapped bytes costs far less than parsing the protobuf.
    static const char kMarker[] = "Attention";
    const MappedFile file(path);
    const uchar* end = file.data() + file.size();
    return std::search(file.data(), end, kMarker, kMarker + sizeof(kMarker) - 1) != end;
}

bool readONNXLanguageModel(const String& path, Net& net)
{
    if (!mayBeONNXLanguageModel(path))
        return false;
    OnnxModelFile file(path);
    if (!isONNXLanguageModel(file))
        return false;
    net = buildNetFromONNXLanguageModel(file, readGenAIConfig(path), LoadOptions::fromEnvironment());
    return true;
}

}}} // namespace cv::dnn::llm

#else // HAVE_PROTOBUF

namespace cv {
namespace dnn {
namespace llm {

bool readONNXLanguageModel(const String&, Net&)
{
    return false;
}

}}} // namespace cv::dnn::llm

#endif // HAVE_PROTOBUF
