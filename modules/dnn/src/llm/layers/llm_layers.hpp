// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Layers of the LLM extension. Each is created by dnn's layer factory from LayerParams
// (see ../llm_layer_factory.cpp for the type names); the implementations are beside this file.

#ifndef OPENCV_DNN_SRC_LLM_LAYERS_LLM_LAYERS_HPP
#define OPENCV_DNN_SRC_LLM_LAYERS_LLM_LAYERS_HPP

#include <opencv2/dnn.hpp>

#include "../net/llm_state_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

/** Root-mean-square normalization: y = x / sqrt(mean(x^2) + epsilon) * scale.

    The mean runs over the axes from `axis` (default -1) to the last one. `scale` (a constant
    blob or a second input) has the normalized shape, or a suffix of it, and is broadcast.
    Parameters: `epsilon` (default 1e-5), `axis`, `group_size` (default 0: off; otherwise each
    consecutive group of that many elements of the normalized axes is normalized on its own
    with a scale of group_size elements, e.g. per-head Q/K norm over heads * head_dim).
    A second output, when requested (not with group_size), holds 1/sqrt(mean(x^2) + epsilon)
    per row (ONNX Runtime's inv_std_var).
*/
class RMSNormLayer : public Layer
{
public:
    static Ptr<RMSNormLayer> create(const LayerParams& params);
};

/** Token embedding lookup on (possibly quantized) rows.

    Input: token ids (any shape, as float; T ids in all). Output: T x embedding_length.
    blobs[0]: the table's raw rows (vocab_size x row bytes, CV_8U). Parameters: `ggml_type`,
    `embedding_length`, `vocab_size`. An id outside [0, vocab_size) is an error, except that
    ids -1 .. -n select rows 0 .. n-1 of the external rows set with setExternalRows() (image
    embeddings: vision/multimodal_prompt.cpp). `token_scale` (default 1): the table's rows are
    multiplied by it, the external rows are not (gemma3's sqrt(n_embd), as llama.cpp).
*/
class LLMTokenEmbeddingLayer : public Layer
{
public:
    static Ptr<LLMTokenEmbeddingLayer> create(const LayerParams& params);
    virtual int embeddingLength() const = 0;
    //! Rows (n x embedding_length, float32) that ids -1 .. -n stand for; empty: none.
    virtual void setExternalRows(const Mat& rows) = 0;
};

/** y = x W^T (+ b) with W in a ggml type (F32, F16, BF16, Q4_0 ... Q6_K), kept as stored; or
    y_i = x W_i^T (+ b_i) for several weights of one input (one output each, computed together).

    Input: T x in_features. Output i: T x out_features[i]. blobs[i]: W_i's raw rows
    (out_features[i] x row bytes, CV_8U), then optionally one float32 bias per weight.
    Parameters: `ggml_type` and `out_features` (one value per weight), `in_features`,
    `gemv_max_rows` (up to this many tokens, each token's row
    is computed on its own, so results do not depend on the batch; default 32), `integer_dot`
    (on that path, quantize activations to 8 bits for integer dot products where a kernel
    exists, and beyond it, round BF16 weights' tokens to bfloat16 where the CPU has AVX512_BF16's
    dot, as llama.cpp does; default true; false keeps the exact float path).
*/
class LLMMatMulLayer : public Layer
{
public:
    static Ptr<LLMMatMulLayer> create(const LayerParams& params);
};

/** One weight of an LLMMatMul layer: its ggml type, raw rows (CV_8U) and float32 bias (or empty),
    and the GGUF tensor it holds rows of from row tensorRow on (what LoRA adapters name; "": none). */
struct LLMMatMulWeight
{
    int type;
    Mat rows, bias;
    std::string tensor = std::string();
    int tensorRow = 0;
};

/** Sets an LLMMatMul layer's `ggml_type`, `out_features` and blobs for these weights, in order:
    biases for all of them when any has one (zeros for a missing one: adding them changes
    nothing). How the builders make a layer of several weights (inline: the fuzz targets compile
    the builders against the library, whose own symbols are hidden). */
inline void setLLMMatMulWeights(LayerParams& lp, const std::vector<LLMMatMulWeight>& weights)
{
    std::vector<int> types, outs, tensorRows;
    std::vector<String> tensors;
    bool anyBias = false, anyTensor = false;
    lp.blobs.clear();
    for (const LLMMatMulWeight& w : weights)
    {
        types.push_back(w.type);
        outs.push_back(w.rows.rows);
        tensors.push_back(w.tensor);
        tensorRows.push_back(w.tensorRow);
        anyTensor = anyTensor || !w.tensor.empty();
        lp.blobs.push_back(w.rows);
        anyBias = anyBias || !w.bias.empty();
    }
    for (size_t i = 0; anyBias && i < weights.size(); i++)
        lp.blobs.push_back(weights[i].bias.empty() ? Mat(Mat::zeros(1, outs[i], CV_32F)) : weights[i].bias);
    lp.set("ggml_type", DictValue::arrayInt(types.data(), (int)types.size()));
    lp.set("out_features", DictValue::arrayInt(outs.data(), (int)outs.size()));
    if (anyTensor)
    {
        lp.set("weight_tensors", DictValue::arrayString(tensors.begin(), (int)tensors.size()));
        lp.set("weight_tensor_rows", DictValue::arrayInt(tensorRows.data(), (int)tensorRows.size()));
    }
}

/** A mixture-of-experts feed-forward block (llama.cpp's build_moe_ffn) as one layer:
    y[t] = sum over the experts_used experts chosen for token t of w(t, e) * down_e(act(gate_e(x[t]), up_e(x[t]))).

    Inputs: x (T x in_features) and the router's logits (T x num_experts). Output: T x in_features.
    blobs[0..2]: the experts' gate, up and down weights, each the raw rows of all experts one
    after another (gate, up: num_experts * expert_ff rows of in_features elements; down:
    num_experts * in_features rows of expert_ff elements, CV_8U), then optionally their float32
    biases (num_experts x out each). Parameters: `in_features`, `expert_ff`, `num_experts`,
    `experts_used`, `ggml_type` (three values), `gating` ("softmax": over all experts, then the
    top k; "softmax_weight": over the chosen k logits; "sigmoid"), `normalize_weights` (the
    chosen weights divided by their sum), `weights_scale` (0: none), `activation` ("swiglu", or
    gpt-oss's "swiglu_oai" with `alpha` 1.702 and `limit` 7), `integer_dot` (as LLMMatMul).
    Tokens are grouped by expert, so each active expert's weights are read once per forward;
    each token's result is the same alone or in a batch.
*/
class LLMExpertsLayer : public Layer
{
public:
    static Ptr<LLMExpertsLayer> create(const LayerParams& params);
};

/** Element-wise operation. Parameter `operation`: binary "add" (a transformer block's residual
    connections), "sub", "mul", "div", "swiglu" (silu(a) * b: the gated part of a SwiGLU MLP),
    "geglu_f16" (gelu_tanh_f16(a) * b: Gemma's gated MLP, as ggml_geglu;
    two inputs of the same shape, a 2-D input and one value per row (T x 1, not for the gated
    ones: a per-token gate), or one input and a constant blobs[0] that is a scalar or has
    one value per feature; `constant_first` puts the constant on the left) or unary "sigmoid",
    "silu", "relu", "tanh", "neg", "gelu_tanh" (GELU's tanh approximation,
    0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))), "gelu_tanh_f16" (the same as ggml_gelu
    computes it on the CPU, llama.cpp's numbers: x rounded to float16, the result rounded to
    float16, 0 below -10 and x above 10), "softcap" (`cap` * tanh(x / `cap`): Gemma 2's logit
    soft-capping). */
class LLMElementwiseLayer : public Layer
{
public:
    static Ptr<LLMElementwiseLayer> create(const LayerParams& params);
};

/** Causal grouped-query attention with rotary embedding over the Net's paged KV cache: a
    forward's tokens continue their sequences as the Net's batch plan says (net/llm_net_state.hpp,
    made before the forward; by default all tokens continue sequence 0).

    Inputs: q (T x num_heads*head_dim), k and v (T x num_kv_heads*head_dim), before rotary;
    or one packed input whose rows are q|k|v. Output: T x num_heads*head_dim. Parameters:
    `num_heads`, `num_kv_heads`, `head_dim`, `max_context`, `scale` (of the scores; default
    1/sqrt(head_dim)), `logit_softcap` (c > 0: scores become c * tanh(score / c)),
    `sliding_window` (attend to the last n positions only; 0: all), `sinks` (one logit per query head joining the softmax's denominator: gpt-oss),
    `input_head_dim` / `input_kv_heads` (q, k, v come with heads of that size, zero-padded to
    head_dim, and that many KV heads, each stored num_kv_heads / input_kv_heads times: layers
    smaller than the Net's KV cache rows, gemma4), `kv_shared` (q is the only input: the layer
    reads the keys and values of the KV-cache layer attachState names, gemma4), and the rotary ones (see RotaryEmbedding): `rope_mode` "formula"
    (default: `rope_dim`, `rope_base`, `rope_neox`, `rope_freq_scale`; blobs[0], optional:
    per-pair frequency factors), "table" (blobs[0], blobs[1]: cos and sin, positions x pairs;
    `rope_neox`; max_context is capped at the tables' positions) or "none".
*/
class LLMAttentionLayer : public Layer, public llm::KVCacheUser
{
public:
    static Ptr<LLMAttentionLayer> create(const LayerParams& params);
};

/** Selects the rows whose logits a forward returns: the last token of each sequence of the batch
    plan, in plan order (or every row with `all_logits`). Input: T x features. */
class LLMLogitRowsLayer : public Layer, public llm::LogitRowsSelector
{
public:
    static Ptr<LLMLogitRowsLayer> create(const LayerParams& params);
};

/** LayerNorm over the last axis with a per-feature weight and bias (GPT-2):
    y = (x - mean) / sqrt(var + epsilon) * blobs[0] + blobs[1], as ggml_norm + mul + add.
    Input: T x features. Parameters: `epsilon` (default 1e-5), `group_size` (each group of that
    many features normalized on its own, blobs still one value per feature: a per-head norm with
    a weight per head; default 0: the whole row). Allocation-free. */
class LLMLayerNormLayer : public Layer
{
public:
    static Ptr<LLMLayerNormLayer> create(const LayerParams& params);
};

/** Learned absolute position embedding (GPT-2's position_embd): y[t] = x[t] + table[p(t)],
    p(t) the position of token t in its sequence from the Net's batch plan (0..T-1 without a
    state). blobs[0]: the table's raw rows (max_positions x row bytes, CV_8U). Parameters:
    `ggml_type`, `embedding_length`, `max_positions`; a position beyond the table is an error. */
class LLMPositionEmbeddingLayer : public Layer
{
public:
    static Ptr<LLMPositionEmbeddingLayer> create(const LayerParams& params);
    virtual void attachState(const Ptr<llm::LLMNetState>& state) = 0;
};

/** Causal depthwise convolution over time with a per-sequence state (ggml_ssm_conv): LFM2's
    short convolution, the convolutions before Qwen3.5's delta net and Mamba-2's scan. Each
    channel of token t of a sequence sees that sequence's last K inputs (the K - 1 before t are
    kept in the Net's KV cache between forwards, zeros at a sequence's start).

    Inputs: N tensors T x channels_i (channels of one convolution, e.g. q / k / v or x / B / C);
    outputs: N tensors of the same shapes. blobs[0]: the kernel, float32, one row of K taps per
    channel (sum of channels_i rows; GGUF's ssm_conv1d / shortconv.conv, ne {K, channels});
    blobs[1] (optional): a bias per channel. Parameters: `kernel_size` K (>= 2),
    `input_channels` (one value per input), `silu` (default false: applied after the bias). */
class LLMShortConvLayer : public Layer, public llm::RecurrentStateUser
{
public:
    static Ptr<LLMShortConvLayer> create(const LayerParams& params);
};

/** Qwen3.5's gated delta net (linear attention) over a per-sequence state in the Net's KV
    cache: q and k l2-normalized per head (`epsilon`), beta = sigmoid(b), the log decay
    g = softplus(a + dt_bias) * ssm_a, then the gated delta rule of recurrent/gated_delta_rule.hpp
    over each sequence's tokens in order (value head h reads key head h % key_heads).

    Inputs: q, k (T x key_heads * key_dim, after the convolution), v (T x value_heads *
    value_dim), a and b (T x value_heads). Output: T x value_heads * value_dim. blobs[0]:
    dt_bias, blobs[1]: ssm_a (= -exp(A_log)), value_heads floats each. Parameters: `key_heads`,
    `value_heads`, `key_dim`, `value_dim`, `epsilon`. */
class LLMGatedDeltaNetLayer : public Layer, public llm::RecurrentStateUser
{
public:
    static Ptr<LLMGatedDeltaNetLayer> create(const LayerParams& params);
};

/** Mamba-2's selective scan with its gated group RMS norm (Granite 4 hybrids) over a
    per-sequence state in the Net's KV cache (recurrent/selective_scan.hpp): each sequence's
    tokens in order, then y * silu(z) RMS-normed per group of heads * head_dim / groups.

    Inputs: x (T x heads * head_dim), B and C (T x groups * state_size), dt (T x heads, raw),
    z (T x heads * head_dim). Output: T x heads * head_dim. blobs: dt_bias, A (= -exp(A_log)),
    D (heads floats each), the norm's weight (heads * head_dim). Parameters: `heads`,
    `head_dim`, `groups`, `state_size`, `epsilon`. */
class LLMSelectiveScanLayer : public Layer, public llm::RecurrentStateUser
{
public:
    static Ptr<LLMSelectiveScanLayer> create(const LayerParams& params);
};

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
