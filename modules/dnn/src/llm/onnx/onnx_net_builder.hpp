// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer's state while it builds a Net (onnx_llm_importer.cpp: the graph walk,
// values, embeddings and matmuls; onnx_import_operator_tables.cpp: which importer or folder
// takes a node; onnx_import_elementwise.cpp: element-wise operators and norms;
// onnx_import_attention.cpp: rotary embeddings and attention). Private to the importer.
// The mapping of operators to layers is described in onnx_llm_importer.cpp.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_ONNX_NET_BUILDER_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_ONNX_NET_BUILDER_HPP

#include "onnx_proto.hpp"

#include "../layers/llm_layers.hpp"
#include "../ggml/ggml_types.hpp"
#include "../net/load_options.hpp"
#include "onnx_model_file.hpp"
#include "genai_config.hpp"
#include "decoder_graph.hpp"
#include "onnx_constant_folding.hpp"
#include "../net/net_assembly.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

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

struct Value;

// The parts of an attention written out in operators (Hugging Face / optimum exports) while its
// nodes are imported: q @ k^T, scaled, masked, soft-capped, softmax, @ v
// (onnx_import_written_attention.cpp).
struct WrittenAttention
{
    enum MaskKind
    {
        Additive,   // Add(scores, mask): 0 keeps a score, a large negative number drops it
        KeepWhere,  // Where(cond, scores, large negative): cond keeps
        DropWhere   // Where(cond, large negative, scores): cond drops
    };
    std::shared_ptr<const Value> query, key;
    float scale = 1.f;       // product of the scalar factors applied to q, k^T and the scores
    float tanhScale = 0.f;   // the scale when a Tanh was applied (soft-capping), 0: none
    float softcap = 0.f;
    bool pendingTanh = false;
    std::vector<std::pair<int, std::string>> masks;  // (MaskKind, name of the Derived value)
    std::string firstMaskNode;  // a node that masks the scores, for error messages
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
        Silu,        // pin * sigmoid(pin), not computed unless something other than SwiGLU needs it
        Square,      // pin * pin (Pow(x, 2)), not computed unless something other than an RMS norm needs it
        MeanSquare,  // mean over the features of pin^2 (+ `eps`): an RMS norm written out (ReduceMean)
        RootMeanSquare,     // sqrt of MeanSquare
        InvRootMeanSquare,  // 1 / RootMeanSquare: x * it is RMSNorm(x) with a unit scale
        // Computed from the graph's non-token inputs (attention mask, positions, past lengths) and
        // run-time sizes without any activation: evaluated at import where a rotary table, a
        // position lookup or an attention mask needs its values (onnx_derived_values.cpp).
        Derived,
        // Written-out rotary embedding (rotate_half): a half of the rows of `pin` (`half` 0 or 1,
        // `negated`), the two halves swapped with the first negated, x * cos, rotate_half(x) * sin.
        HalfRow,
        RotateHalf,
        RotaryCos,
        RotarySin,
        CacheKV,          // Concat(past key or value, new one): the paged cache's keys / values
        Scores,           // q @ k^T and what is applied to it before the softmax (`attention`)
        Probabilities     // Softmax of Scores
    };
    Kind kind = Tensor;
    Pin pin;
    int width = 0;
    // The ONNX tensor's last dimension when a Reshape viewed the token's `width` features as
    // rows of fewer (Qwen3's per-head norms: [batch, seq * heads, head_dim]); 0: `width` itself.
    int inner = 0;
    // A constant shape tensor some of whose entries stand for the batch size or the token count
    // (kBatchDim, kTokenDim: a Shape of an activation and what moved those entries around).
    bool symbolic = false;
    float eps = 0.f;  // MeanSquare and what follows: the epsilon added to the mean
    // A 4-D view [batch, seq, heads, inner] (heads > 0); `headsMajor`: transposed to
    // [batch, heads, seq, inner] while the Net still holds the token's rows.
    int heads = 0;
    bool headsMajor = false;
    // Columns [columnOffset, columnOffset + width) of `pin`'s `sourceWidth` features (a Split of
    // a packed q|k|v); -1: all of them.
    int columnOffset = -1, sourceWidth = 0;
    // [batch * seq, features] (a Reshape to [-1, features]): the same rows, a 2-D ONNX shape.
    bool flatRows = false;
    // The output of an attention whose heads the graph padded (a builder's unsupported head
    // size): ONNX sees each head `paddedHeadSize` long, the Net holds only its first `inner`
    // (the unpad Slice that follows is folded into the attention layer: findUnpadSlices).
    int paddedHeadSize = 0;
    // HalfRow, RotateHalf, RotaryCos / RotarySin, Rotated: the values [partStart, partEnd) of
    // each head of `inner` (0, 0: the whole head). A partial rotary embedding written out
    // (GPT-NeoX, Phi-2) rotates [0, r) and Concats the rest back: a Rotated part [0, r), then a
    // whole Rotated head. HalfRow: a Slice of the head (`negated` by a Neg).
    int partStart = 0, partEnd = 0;
    bool negated = false;
    // GPT-J's rotate_every_two (interleaved pairs (2i, 2i + 1)): HalfRow `everyOther` 1 / 2 is
    // x[..., ::2] / x[..., 1::2] of the part; `pairAxis`: with the trailing axis of 2 that
    // Unsqueeze(-1) and stack((-x2, x1), -1) add before flatten(-2)'s Reshape. RotateHalf,
    // RotarySin: `interleaved` for rotate_every_two instead of rotate_half.
    int everyOther = 0;
    bool pairAxis = false, interleaved = false;
    // Tensor: a fused q|k|v projection whose columns were permuted from each head's q | k | v to
    // [q of all heads | k | v] (findPerHeadQKV): heads, head size; 0 otherwise.
    int qkvHeads = 0, qkvHeadDim = 0;
    // CacheKV: the new keys / values `pin` (with `rotary` if rotated) appended to `pastName`;
    // `transposed`: k^T; `repeat`: heads repeated (repeat_kv); `scale`: a scalar factor on it.
    std::string pastName;
    bool transposed = false;
    int repeat = 1;
    int repeatStage = 0;  // repeat_kv in progress: 1 after Unsqueeze(2), 2 after Expand
    float scale = 1.f;
    // RotaryCos / RotarySin: the Derived cos or sin table multiplied in.
    std::string tableName;
    // Derived: the node that first computed with a run-time size (for messages).
    std::string origin;
    std::shared_ptr<WrittenAttention> attention;
    std::shared_ptr<const OnnxTensor> constant;
    std::shared_ptr<RotaryTables> rotary;
    std::string name;
};

// GPT-NeoX's per-head q | k | v columns regrouped as [q | k | v] (findPerHeadQKV): for each new
// column, the old one.
std::vector<int> perHeadQKVColumns(int heads, int headDim);

inline bool isOp(const NodeProto& n, const char* type)
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

    Net build();

    // ---- the operator table (onnx_import_operator_tables.cpp) --------------------------

    // The node domains an importer takes. Most operators are matched by name in any domain;
    // ai.onnx's LayerNormalization and the contrib SkipLayerNormalization are told apart by it.
    enum class Domain
    {
        Any,
        Onnx,          // "" or "ai.onnx"
        NotMicrosoft,  // any but "com.microsoft"
        Microsoft      // "com.microsoft"
    };

    struct OperatorImporter
    {
        const char* op;
        Domain domain;
        void (ONNXNetBuilder::*import)(const NodeProto& n);
        // Imported before the patterns over several nodes (importPattern), not after them.
        bool beforePatterns;
        const char* note;  // where it is supported, for the error message; "" for everywhere
    };

    // The importer table, in the order the "not supported" error lists it.
    static const std::vector<OperatorImporter>& operatorImporters();

private:
    // ---- graph structure -------------------------------------------------------------

    void defineGraphInputs(const opencv_onnx::GraphProto& g);

    std::string logitsName(const opencv_onnx::GraphProto& g) const;

    // ---- values ----------------------------------------------------------------------

    [[noreturn]] void failNode(const NodeProto& n, const std::string& msg) const
    {
        f_.fail("node " + onnxNodeLabel(n) + ": " + msg);
    }

    // An integer attribute that must fit an int (head counts, sizes): larger values are an
    // error, not silently truncated.
    int intAttribute(const NodeProto& n, const char* name, int def) const;

    bool hasInput(const NodeProto& n, int i) const
    {
        return i < n.input_size() && !n.input(i).empty();
    }

    const Value& input(const NodeProto& n, int i);

    // An activation input; a pending sigmoid or SiLU is computed now.
    // A view (Value::inner) is accepted only where `allowView` says so (element-wise operators,
    // norms, reshapes); elsewhere the input must be [batch, seq, features].
    Pin tensorInput(const NodeProto& n, int i, bool allowView = false);

    Pin tensor(const Value& v, const std::string& where);

    const OnnxTensor& constantInput(const NodeProto& n, int i);

    int width(const NodeProto& n, int i);

    void define(const NodeProto& n, int output, Value v);

    void defineTensor(const NodeProto& n, int output, Pin pin, int width, int inner = 0);

    // An activation `pin` of the same shape (view) as `v`.
    static Value viewLike(const Value& v, Pin pin)
    {
        Value out;
        out.kind = Value::Tensor;
        out.pin = pin;
        out.width = v.width;
        out.inner = v.inner;
        out.heads = v.heads;
        out.headsMajor = v.headsMajor;
        return out;
    }

    // Last dimension of an activation value (its `inner` or else its `width`).
    static int innerOf(const Value& v)
    {
        return v.inner > 0 ? v.inner : v.width;
    }

    bool outputNeeded(const NodeProto& n, int output) const;

    // ---- layers ----------------------------------------------------------------------

    LayerParams params(const std::string& name, const std::string& type);

    Pin add(LayerParams& lp, const std::vector<Pin>& inputs);

    Pin addLogitRows(Pin x);

    // x + bias (one value per feature, 1 x width float32): an LLMElementwise add named `name`.
    Pin addBias(const std::string& name, Pin x, const Mat& bias);

    // LLMLayerNorm of x with gamma and beta (1 x width float32 each).
    Pin addLayerNorm(const NodeProto& n, Pin x, const Mat& gamma, const Mat& beta, float epsilon);

    // ---- nodes -----------------------------------------------------------------------

    // The importer of the node's (domain, operator), or nullptr.
    static const OperatorImporter* findOperatorImporter(const NodeProto& n);

    void importNode(const NodeProto& n);

    // Patterns over several nodes: true if one of them took the node.
    bool importPattern(const NodeProto& n);

    void importConstant(const NodeProto& n);

    // Cast and Identity (also of a constant whose values they change: folded).
    void importCast(const NodeProto& n);

    bool castPassesThrough(const NodeProto& n);

    static GGMLType ggmlFloatType(int onnxType)
    {
        return onnxType == ONNX_FLOAT ? GGML_F32 : onnxType == ONNX_FLOAT16 ? GGML_F16 : GGML_BF16;
    }

    void importGather(const NodeProto& n);

    Pin addEmbedding(const NodeProto& n, const std::string& name, const char* type, Pin x, const OnnxTensor& table,
                     int& dim);

    // The activation input of a matmul; the logit-row selection goes in front of the logits' one.
    Pin matmulInput(const NodeProto& n);

    void importMatMul(const NodeProto& n);

    // `transposed`: w is [N, k] (Gemm's transB) instead of [k, N].
    Pin addMatMul(const NodeProto& n, const std::string& name, Pin x, int k, const OnnxTensor& w, bool transposed = false);

    void importMatMulNBits(const NodeProto& n);

    /* MatMulNBits nodes that read one input with the same K and accuracy level (a block's q, k,
       v; gate, up) become one LLMMatMul with an output per node, imported with the first of
       them: one quantization of the input and one parallel section (llm_layers.hpp). */
    void groupMatMulNBits();
    std::map<const NodeProto*, std::vector<const NodeProto*>> matmulNBitsGroups_;  //!< first node -> all
    std::set<const NodeProto*> matmulNBitsImported_;  //!< imported with the first of their group

    void importGemm(const NodeProto& n);

    void importBinary(const NodeProto& n);

    void importSigmoid(const NodeProto& n);

    void importUnary(const NodeProto& n);

    int normAxisCheck(const NodeProto& n);

    // RMSNorm of x with the node's scale input; returns the layer (output 1: inv_std_var).
    int rmsNorm(const NodeProto& n, Pin x, int w, int scaleInput, int group = 0);

    void importRMSNorm(const NodeProto& n);

    Pin skipSum(const NodeProto& n, int biasInput);
    void importSkipRMSNorm(const NodeProto& n);

    void importSkipLayerNorm(const NodeProto& n);

    void importEmbedLayerNorm(const NodeProto& n);

    void importGelu(const NodeProto& n);

    void importPow(const NodeProto& n);

    void importReduceMean(const NodeProto& n);

    // RMS norm written out (x * 1 / sqrt(mean(x^2) + eps)): Div / Mul / Add / Sqrt / Reciprocal
    // on the MeanSquare kinds; true if the node was one of those steps.
    bool importWrittenOutRMSNorm(const NodeProto& n);

    void importLayerNorm(const NodeProto& n);

    // ---- shapes and constants (onnx_import_shapes.cpp) -------------------------------

    // Folds a node whose inputs are all constants into constant outputs; false if the operator
    // is not one that folds or an input is not constant.
    bool foldConstantNode(const NodeProto& n);
    bool foldShapeOfActivation(const NodeProto& n);
    void defineConstant(const NodeProto& n, int dataType, const std::vector<int64>& shape,
                        const std::shared_ptr<std::vector<uchar>>& bytes, bool symbolic);

    Folded foldedOf(const NodeProto& n, int i, const OnnxTensor& t);

    // Reshape / Squeeze / Unsqueeze / Flatten of an activation: a view of the same rows.
    void importReshape(const NodeProto& n);
    void importTokenIdsReshape(const NodeProto& n);

    std::shared_ptr<RotaryTables> rotaryTables(const NodeProto& n, int cosInput, int sinInput, bool interleaved);

    void importRotary(const NodeProto& n);

    // ---- values derived from the cache's inputs (onnx_derived_values.cpp) -------------

    // A node without activation inputs that reads the mask, positions or run-time sizes: its
    // outputs become Derived values; false for other nodes.
    bool importDerived(const NodeProto& n);

    // Where a Derived value is evaluated: `past` cached and `tokens` new tokens of one sequence.
    struct EvalPoint
    {
        int64 past = 0, tokens = 1;
    };
    Folded evaluate(const std::string& name, const EvalPoint& at);
    // Rows of a Derived value that depends on the positions only: [positions, width] for
    // positions 0..count-1, checked against an evaluation after a cached prefix.
    Mat positionTable(const NodeProto& n, const std::string& name, int width, int count);
    // Token positions a Derived value holds, as an offset added to 0, 1, 2, ... (checked).
    int positionOffset(const NodeProto& n, const std::string& name);
    void checkCausalMask(const NodeProto& n, const WrittenAttention& a);

    // ---- attention written out in operators (onnx_import_written_attention.cpp) --------

    // Nodes on the written-out attention's kinds; false if `n` is none of them. Transpose,
    // Split, Slice and Concat of activations have importers of their own (the operator table).
    bool importWrittenAttention(const NodeProto& n);
    void importTranspose(const NodeProto& n);
    void importSplit(const NodeProto& n);
    void importSlice(const NodeProto& n);
    void importConcat(const NodeProto& n);
    void importSoftmax(const NodeProto& n);
    void importRotateEveryTwoStep(const NodeProto& n);
    bool importRotaryStep(const NodeProto& n);
    void importScoresMatMul(const NodeProto& n);
    void importAttentionOutputMatMul(const NodeProto& n);
    bool importScoresStep(const NodeProto& n);
    void importCacheKVStep(const NodeProto& n);
    bool importPositionEmbedding(const NodeProto& n);
    // Positions a rotary table of a written-out attention covers (the context, at most
    // kMaxDerivedPositions: tables are evaluated at import).
    static constexpr int kMaxDerivedPositions = 16384;

    void importAttention(const NodeProto& n);

    /* Attention nodes whose output is only Reshape'd to [batch, seq, heads, d] and Sliced to
       [0, keep) on the last axis: a graph that padded each head for the attention operator
       slices the padding off after it. Their layers output the first `keep` values of each head
       (LLMAttention's output_head_dim), so the Slice is not a part of a rotary embedding. */
    void findUnpadSlices();
    /* GPT-NeoX's fused query_key_value: MatMul(x, W) (+ bias) Reshape'd to [batch, seq, heads,
       3 * d] and Sliced into q, k, v ([0, d), [d, 2d), [2d, 3d) of the last axis: each head's
       q | k | v adjacent). The MatMul's output columns (and the bias) are permuted at import to
       [q of all heads | k | v], so the Slices are column ranges as a packed q|k|v's Split. Also
       the view Transpose'd to [batch, heads, seq, 3 * d] first, and one Split into three for the
       Slices (transformers >= 4.48: qkv.chunk(3, dim=-1)). */
    void findPerHeadQKV();
    std::map<std::string, std::pair<int, int>> perHeadQKV_;  //!< MatMul output -> (heads, head size)
    Value perHeadQKVPart(const NodeProto& n, const Value& x, int64 start) const;  //!< its Slice / Split
    std::map<std::string, int> unpaddedHeadSize_;  //!< attention output name -> values kept per head
    void importPaddedHeadsReshape(const NodeProto& n);

    void importMicrosoftAttention(const NodeProto& n);

    // `scale` 0: the layer's default 1 / sqrt(headDim); `softcap` 0: none; `window`: positions a
    // token attends to, itself included (0: all).
    void addAttentionLayer(const NodeProto& n, const std::vector<Pin>& inputs, int heads, int kvHeads, int headDim,
                           const std::shared_ptr<RotaryTables>& rotary, float scale, float softcap = 0.f, int window = 0);

    // The caller's choice, else genai_config.json's.
    int contextLength() const
    {
        return contextLength_ > 0 ? contextLength_ : config_.contextLength > 0 ? config_.contextLength : kDefaultContext;
    }

    void attachCache();

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
    std::vector<int> positionLayers_;  // LLMPositionEmbedding layers (EmbedLayerNormalization)
    std::map<std::string, Folded> evaluated_;  // Derived values at the current EvalPoint
    EvalPoint evaluatedAt_{-1, -1};
    std::set<std::string> checkedMasks_;  // mask sets already found causal
    std::map<std::string, Mat> positionTables_;  // Derived rotary tables by name
};

}}}} // namespace cv::dnn::llm::onnx_import

#endif
