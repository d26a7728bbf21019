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
//   Gelu, FastGelu, BiasGelu, Erf, Sqrt   -> LLMElementwise (gelu, gelu_tanh, erf, sqrt; bias add)
//   x * 1 / sqrt(ReduceMean(x^2) + eps)   -> RMSNorm (unit scale), as exporters write RMS norms out
//   LayerNormalization, SkipLayerNormalization -> LLMLayerNorm (+ LLMElementwise add)
//   EmbedLayerNormalization               -> LLMTokenEmbedding, LLMPositionEmbedding, LLMLayerNorm
//   Reshape / Squeeze / Unsqueeze of an activation that keeps each token's features together
//                                         -> nothing: a view (Value::inner); an RMS norm of a view
//                                            of heads is RMSNorm with group_size (Qwen3's q/k norms)
//   nodes whose inputs are all constants  -> folded at import (onnx_import_shapes.cpp)
//   Cast, Identity                        -> nothing (the Net computes in float32)
// Activations are 2-D in the Net (tokens x features): ONNX's [batch, sequence, features] with
// the batch's sequences laid out as the cache's batch plan says. Anything else on the path to
// the logits is an error naming the node and its operator. Which importer or folder takes each
// operator: the tables of onnx_import_operator_tables.cpp.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"
#include "matmul_nbits.hpp"
#include "../net/net_assembly.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

Net ONNXNetBuilder::build()
{
    const opencv_onnx::GraphProto& g = f_.graph();
    defineGraphInputs(g);
    const std::string logits = logitsName(g);
    graph_ = analyzeDecoderGraph(f_, logits);
    groupMatMulNBits();
    findUnpadSlices();
    findPerHeadQKV();
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

void ONNXNetBuilder::defineGraphInputs(const opencv_onnx::GraphProto& g)
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

std::string ONNXNetBuilder::logitsName(const opencv_onnx::GraphProto& g) const
{
    if (g.output_size() == 0)
        f_.fail("the graph has no outputs");
    for (const auto& out : g.output())
        if (out.name() == config_.logitsName)
            return out.name();
    return g.output(0).name();
}

// An integer attribute that must fit an int (head counts, sizes): larger values are an
// error, not silently truncated.
int ONNXNetBuilder::intAttribute(const NodeProto& n, const char* name, int def) const
{
    const int64 v = onnxIntAttribute(n, name, def);
    if (v < INT_MIN || v > INT_MAX)
        failNode(n, format("attribute %s = %lld is out of range", name, (long long)v));
    return (int)v;
}

const Value& ONNXNetBuilder::input(const NodeProto& n, int i)
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
Pin ONNXNetBuilder::tensorInput(const NodeProto& n, int i, bool allowView)
{
    const Value& v = input(n, i);
    const Pin pin = tensor(v, "node " + onnxNodeLabel(n) + format(" input %d ('%s')", i, n.input(i).c_str()));
    if (!allowView && innerOf(v) != v.width)
        failNode(n, format("input %d ('%s') is a view of each token's %d features as rows of %d; this operator "
                           "needs them as one row (Reshape back to [batch, sequence, %d])",
                           i, n.input(i).c_str(), v.width, innerOf(v), v.width));
    return pin;
}

Pin ONNXNetBuilder::tensor(const Value& v, const std::string& where)
{
    switch (v.kind)
    {
    case Value::Tensor:
        if (v.columnOffset >= 0)
            f_.fail(where + ": a Split of the features is supported only into an attention's query, key and value");
        return v.pin;
    case Value::Sigmoid:
    case Value::Silu:
    case Value::Square:
    {
        const char* op = v.kind == Value::Sigmoid ? "sigmoid" : v.kind == Value::Silu ? "silu" : "mul";
        LayerParams lp = params(v.name + "/" + (v.kind == Value::Square ? "square" : op), "LLMElementwise");
        lp.set("operation", op);
        Value& stored = values_[v.name];
        stored.kind = Value::Tensor;
        stored.pin = v.kind == Value::Square ? add(lp, {v.pin, v.pin}) : add(lp, {v.pin});
        return stored.pin;
    }
    case Value::MeanSquare:
    case Value::RootMeanSquare:
    case Value::InvRootMeanSquare:
        f_.fail(where + ": a mean over the features is supported only inside an RMS norm written out "
                "(x * 1 / sqrt(mean(x^2) + eps), or x / sqrt(...))");
    case Value::Rotated:
        f_.fail(where + ": a RotaryEmbedding output is supported only as an attention's query or key");
    case Value::Constant:
        f_.fail(where + ": a constant where an activation is expected (constant folding is not supported)");
    case Value::TokenIds:
        f_.fail(where + ": the token ids are supported only as the indices of the embedding Gather");
    case Value::Derived:
        f_.fail(where + ": computed from the positions, the attention mask or the sequence lengths (by node " + v.origin +
                "); supported only as an attention mask, a rotary table, position-embedding indices or a Reshape's shape "
                "moving the batch and sequence sizes");
    case Value::HalfRow:
    case Value::RotateHalf:
    case Value::RotaryCos:
    case Value::RotarySin:
        f_.fail(where + ": part of a rotary embedding written out (x * cos + rotate_half(x) * sin) used otherwise");
    case Value::CacheKV:
        f_.fail(where + ": the past keys / values with the new ones are supported only as an attention's k^T and v");
    case Value::Scores:
    case Value::Probabilities:
        f_.fail(where + ": attention scores used other than through the softmax and the MatMul with the values");
    case Value::CacheInput:
        break;
    }
    f_.fail(where + ": graph input '" + v.name + "' is used in a way the KV cache cannot replace "
            "(only as attention masks, sequence lengths, positions and past keys / values)");
}

const OnnxTensor& ONNXNetBuilder::constantInput(const NodeProto& n, int i)
{
    const Value& v = input(n, i);
    if (v.kind != Value::Constant)
        failNode(n, format("input %d ('%s') must be a constant (an initializer or a Constant node)", i, n.input(i).c_str()));
    if (v.symbolic)
        failNode(n, format("input %d ('%s') depends on the batch size or token count (a Shape of an activation); "
                           "it is supported only as a Reshape's shape", i, n.input(i).c_str()));
    return *v.constant;
}

int ONNXNetBuilder::width(const NodeProto& n, int i)
{
    tensorInput(n, i);
    return values_.at(n.input(i)).width;
}

void ONNXNetBuilder::define(const NodeProto& n, int output, Value v)
{
    if (output >= n.output_size() || n.output(output).empty())
        return;
    v.name = n.output(output);
    values_[v.name] = v;
}

void ONNXNetBuilder::defineTensor(const NodeProto& n, int output, Pin pin, int width, int inner)
{
    Value v;
    v.kind = Value::Tensor;
    v.pin = pin;
    v.width = width;
    v.inner = inner == width ? 0 : inner;
    define(n, output, v);
}

bool ONNXNetBuilder::outputNeeded(const NodeProto& n, int output) const
{
    return output < n.output_size() && !n.output(output).empty() && graph_.neededValues.count(n.output(output));
}

LayerParams ONNXNetBuilder::params(const std::string& name, const std::string& type)
{
    LayerParams lp;
    std::string unique = name.empty() ? type : name;
    for (int k = 1; !layerNames_.insert(unique).second; k++)
        unique = (name.empty() ? type : name) + format("_%d", k);
    lp.name = unique;
    lp.type = type;
    return lp;
}

Pin ONNXNetBuilder::add(LayerParams& lp, const std::vector<Pin>& inputs)
{
    return addConnectedLayer(net_, lp, inputs);
}

Pin ONNXNetBuilder::addBias(const std::string& name, Pin x, const Mat& bias)
{
    LayerParams lp = params(name, "LLMElementwise");
    lp.set("operation", "add");
    lp.blobs.push_back(bias);
    return add(lp, {x});
}

Pin ONNXNetBuilder::addLayerNorm(const NodeProto& n, Pin x, const Mat& gamma, const Mat& beta, float epsilon)
{
    LayerParams lp = params(n.name(), "LLMLayerNorm");
    lp.set("epsilon", epsilon);
    lp.blobs.push_back(gamma);
    lp.blobs.push_back(beta);
    return add(lp, {x});
}

Pin ONNXNetBuilder::addLogitRows(Pin x)
{
    LayerParams lp = params("logit_rows", "LLMLogitRows");
    lp.set("all_logits", allLogits_);
    Pin p = add(lp, {x});
    logitRowsLayer_ = p.layer;
    logitRowsAdded_ = true;
    return p;
}

// Cast and Identity leave activations as they are (the Net computes in float32) and keep a
// float constant's storage type (a bfloat16 or float16 weight stays one); casts to or from
// integers and bools of constants are folded.
bool ONNXNetBuilder::castPassesThrough(const NodeProto& n)
{
    const Value& v = input(n, 0);
    if (v.kind != Value::Constant || n.op_type() == "Identity")
        return true;
    const int to = (int)onnxIntAttribute(n, "to", ONNX_FLOAT);
    auto isFloat = [](int t) { return t == ONNX_FLOAT || t == ONNX_FLOAT16 || t == ONNX_BFLOAT16; };
    return isFloat(to) && isFloat(v.constant->dataType);
}

void ONNXNetBuilder::importConstant(const NodeProto& n)
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

void ONNXNetBuilder::importGather(const NodeProto& n)
{
    const Value& ids = input(n, 1);
    if (ids.kind != Value::TokenIds)
        failNode(n, "only the token-embedding lookup (Gather of a constant table by input_ids) is supported");
    if (onnxIntAttribute(n, "axis", 0) != 0)
        failNode(n, "axis must be 0");
    int dim = 0;
    const Pin out = addEmbedding(n, n.name(), "LLMTokenEmbedding", ids.pin, constantInput(n, 0), dim);
    defineTensor(n, 0, out, dim);
}

// A lookup table layer (LLMTokenEmbedding by token ids, LLMPositionEmbedding adding rows by
// position) of a constant [rows, dim] float table; `dim` receives its width.
Pin ONNXNetBuilder::addEmbedding(const NodeProto& n, const std::string& name, const char* type, Pin x,
                                 const OnnxTensor& table, int& dim)
{
    if (table.shape.size() != 2 || table.shape[0] <= 0 || table.shape[1] <= 0 ||
        table.shape[0] > INT_MAX || table.shape[1] > INT_MAX)
        failNode(n, "the embedding table must be a non-empty 2-D tensor");
    if (table.dataType != ONNX_FLOAT && table.dataType != ONNX_FLOAT16 && table.dataType != ONNX_BFLOAT16)
        failNode(n, "the embedding table must be float, float16 or bfloat16");
    const int rows = (int)table.shape[0];
    dim = (int)table.shape[1];
    LayerParams lp = params(name, type);
    lp.set("ggml_type", (int)ggmlFloatType(table.dataType));
    lp.set("embedding_length", dim);
    lp.set(std::string(type) == "LLMTokenEmbedding" ? "vocab_size" : "max_positions", rows);
    lp.blobs.push_back(table.rawRows(rows, (int64)dim * onnxElementSize(table.dataType)));
    return add(lp, {x});
}

// The activation input of a matmul; the logit-row selection goes in front of the logits' one.
Pin ONNXNetBuilder::matmulInput(const NodeProto& n)
{
    Pin a = tensorInput(n, 0);
    if (&n == graph_.logitsProducer)
        a = addLogitRows(a);
    return a;
}

void ONNXNetBuilder::importMatMul(const NodeProto& n)
{
    const int k = width(n, 0);
    const OnnxTensor& w = constantInput(n, 1);
    auto qkv = perHeadQKV_.find(n.output(0));
    if (qkv != perHeadQKV_.end() && w.shape.size() == 2 && w.shape[0] == k && w.data &&
        w.bytes == (size_t)(w.shape[0] * w.shape[1]) * onnxElementSize(w.dataType))
    {
        // GPT-NeoX's fused q|k|v, each head's q | k | v adjacent: columns regrouped as [q | k | v]
        const std::vector<int> from = perHeadQKVColumns(qkv->second.first, qkv->second.second);
        CV_CheckEQ(from.size(), (size_t)w.shape[1], "ONNX: per-head q|k|v columns");
        const size_t es = onnxElementSize(w.dataType), cols = from.size();
        auto bytes = std::make_shared<std::vector<uchar>>(w.bytes);
        for (int64 r = 0; r < w.shape[0]; r++)
            for (size_t c = 0; c < cols; c++)
                std::memcpy(bytes->data() + (r * cols + c) * es, w.data + (r * cols + from[c]) * es, es);
        OnnxTensor permuted = w;
        permuted.data = bytes->data();
        permuted.owner = bytes;
        permuted.mapping.reset();
        defineTensor(n, 0, addMatMul(n, n.name(), matmulInput(n), k, permuted), (int)cols);
        values_.at(n.output(0)).qkvHeads = qkv->second.first;
        values_.at(n.output(0)).qkvHeadDim = qkv->second.second;
        return;
    }
    const Pin out = addMatMul(n, n.name(), matmulInput(n), k, w);  // checks w's shape
    defineTensor(n, 0, out, (int)w.shape[1]);
}

// LLMMatMul of x by a constant [k, N] float weight (float32, float16 or bfloat16 rows).
Pin ONNXNetBuilder::addMatMul(const NodeProto& n, const std::string& name, Pin x, int k, const OnnxTensor& w,
                              bool transposed)
{
    const int kAxis = transposed ? 1 : 0;
    if (w.shape.size() != 2 || w.shape[kAxis] != k || w.shape[1 - kAxis] <= 0 || w.shape[1 - kAxis] > INT_MAX)
        failNode(n, format(transposed ? "the weight must be a constant [N, %d] matrix" : "the weight must be a constant [%d, N] matrix", k));
    if (w.dataType != ONNX_FLOAT && w.dataType != ONNX_FLOAT16 && w.dataType != ONNX_BFLOAT16)
        failNode(n, "the weight must be float, float16 or bfloat16");
    const int outFeatures = (int)w.shape[1 - kAxis];
    // ONNX stores W as [K, N]; LLMMatMul wants N rows of K elements (Gemm's transB: as stored).
    const int depth = w.dataType == ONNX_FLOAT ? CV_32S : CV_16U;  // bit patterns, transposed as they are
    Mat stored(transposed ? outFeatures : k, transposed ? k : outFeatures, depth, const_cast<uchar*>(w.data));
    Mat rows;
    if (transposed)
        rows = stored;
    else
        cv::transpose(stored, rows);
    LayerParams lp = params(name, "LLMMatMul");
    lp.set("ggml_type", (int)ggmlFloatType(w.dataType));
    lp.set("in_features", k);
    lp.set("out_features", outFeatures);
    lp.set("integer_dot", integerDot_);
    lp.blobs.push_back(Mat(outFeatures, (int)(k * onnxElementSize(w.dataType)), CV_8U, rows.data).clone());
    return add(lp, {x});
}

// Gemm(x, W, bias) of [batch * seq, k] rows (Hugging Face's Conv1D: addmm): LLMMatMul (+ bias add).
void ONNXNetBuilder::importGemm(const NodeProto& n)
{
    const int k = width(n, 0);
    if (onnxIntAttribute(n, "transA", 0) != 0 || onnxFloatAttribute(n, "alpha", 1.f) != 1.f ||
        onnxFloatAttribute(n, "beta", 1.f) != 1.f)
        failNode(n, "only Gemm with transA = 0, alpha = 1 and beta = 1 is supported on activations");
    const bool transB = onnxIntAttribute(n, "transB", 0) != 0;
    const OnnxTensor& w = constantInput(n, 1);
    Pin out = addMatMul(n, n.name(), matmulInput(n), k, w, transB);
    const int outFeatures = (int)w.shape[transB ? 0 : 1];
    if (hasInput(n, 2))
    {
        const Mat bias = constantInput(n, 2).toFloat().reshape(1, 1);
        if ((int)bias.total() != outFeatures && bias.total() != 1)
            failNode(n, format("the bias must have 1 or %d values", outFeatures));
        out = addBias(n.name() + "/bias", out,
                      bias.total() == 1 ? Mat(1, outFeatures, CV_32F, Scalar(bias.at<float>(0))) : bias);
    }
    Value v = input(n, 0);
    defineTensor(n, 0, out, outFeatures);
    values_.at(n.output(0)).flatRows = v.flatRows;
}

void ONNXNetBuilder::groupMatMulNBits()
{
    const opencv_onnx::GraphProto& g = f_.graph();
    std::map<std::string, const NodeProto*> firstOf;  // input|K|accuracy level -> first node
    for (int i : graph_.order)
    {
        const NodeProto& n = g.node(i);
        // (the logits' matmul reads the logit rows added in front of it: a group of its own; a
        // node whose weights come from other nodes may not be imported before its place)
        if (n.op_type() != "MatMulNBits" || n.input_size() < 1 || &n == graph_.logitsProducer)
            continue;
        bool weightsInFile = true;
        for (int input = 1; input < n.input_size(); input++)
            weightsInFile = weightsInFile && (n.input(input).empty() || f_.findInitializer(n.input(input)));
        if (!weightsInFile)
            continue;
        const bool integerInput = onnxIntAttribute(n, "accuracy_level", 0) == 4;
        const std::string key = n.input(0) + "|" + std::to_string(intAttribute(n, "K", -1)) + (integerInput ? "|int8" : "|float");
        auto first = firstOf.emplace(key, &n).first->second;
        matmulNBitsGroups_[first].push_back(&n);
    }
}

void ONNXNetBuilder::importMatMulNBits(const NodeProto& first)
{
    if (matmulNBitsImported_.count(&first))
        return;
    auto group = matmulNBitsGroups_.find(&first);
    const std::vector<const NodeProto*> nodes = group != matmulNBitsGroups_.end() ? group->second
                                                                                 : std::vector<const NodeProto*>{&first};
    std::vector<LLMMatMulWeight> weights;
    for (const NodeProto* node : nodes)
    {
        const NodeProto& n = *node;
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
        weights.push_back(LLMMatMulWeight{(int)w.type, w.rows, bias});
    }
    LayerParams lp = params(first.name(), "LLMMatMul");
    setLLMMatMulWeights(lp, weights);
    lp.set("in_features", width(first, 0));
    // accuracy_level 4 lets the input be quantized to int8 (ONNX Runtime does so too): our
    // integer dot products. Lower levels ask for float inputs: the exact float path.
    lp.set("integer_dot", integerDot_ && onnxIntAttribute(first, "accuracy_level", 0) == 4);
    lp.set("llama_activations", false);  // ONNX Runtime's int8 inputs have float scales
    const Pin layer = add(lp, {matmulInput(first)});
    for (size_t i = 0; i < nodes.size(); i++)
    {
        defineTensor(*nodes[i], 0, Pin{layer.layer, (int)i}, weights[i].rows.rows);
        matmulNBitsImported_.insert(nodes[i]);
    }
}

} // namespace onnx_import

using onnx_import::ONNXNetBuilder;
using opencv_onnx::NodeProto;

bool isONNXLanguageModel(const OnnxModelFile& file)
{
    std::set<std::string> graphInputs;
    for (const auto& in : file.graph().input())
        graphInputs.insert(in.name());
    // Hugging Face exports write attention out in operators: past_key_values.* in, present.* out.
    bool presentOutput = false;
    for (const auto& out : file.graph().output())
        presentOutput = presentOutput || out.name().compare(0, 7, "present") == 0;
    for (const std::string& in : graphInputs)
        if (presentOutput && in.compare(0, 15, "past_key_values") == 0)
            return true;
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
    // Every attention operator this importer knows has "Attention" in its type name, and graphs
    // with attention written out have "past_key_values" inputs; the serialized graph holds both
    // as plain bytes: without them, the file is not one of ours. Scanning the mapped bytes costs
    // far less than parsing the protobuf.
    const MappedFile file(path);
    const uchar* end = file.data() + file.size();
    for (const std::string marker : {"Attention", "past_key_values"})
        if (std::search(file.data(), end, marker.begin(), marker.end()) != end)
            return true;
    return false;
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
