// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What the block functions of the architectures (architectures/*.cpp) and the Net's outer layers
// (gguf_net_builder.cpp) are built from, as llama.cpp's llm_graph_context (llama-graph.cpp) serves
// src/models/<arch>.cpp: a GGUF file's tensors, read as weights and marked used, and the dnn
// layers over them (norms, projections, attention with the architecture's rotary embedding and
// sliding windows, llama's attention and feed-forward sub-layers).

#ifndef OPENCV_DNN_SRC_LLM_GGUF_GGUF_GRAPH_BUILDER_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_GGUF_GRAPH_BUILDER_HPP

#include "gguf_model_file.hpp"
#include "gguf_hyper_parameters.hpp"
#include "../layers/llm_layers.hpp"
#include "../net/load_options.hpp"
#include "../net/net_assembly.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class GGUFGraphBuilder
{
public:
    using Pin = LayerPin;

    //! Reads the file's hyper-parameters (readGGUFHyperParameters); an unknown architecture or key
    //! is a cv::Exception.
    GGUFGraphBuilder(const GGUFModelFile& file, const LoadOptions& options);

    const GGUFHyperParameters& hp() const { return hp_; }
    const GGUFArchitecture& arch() const { return *hp_.architecture; }
    bool integerDot() const { return integerDot_; }
    bool hasTensor(const std::string& name) const { return f_.findTensor(name) != nullptr; }

    //! A tensor of the file, marked used (finish() refuses the tensors no layer read).
    const GGUFTensor& tensor(const std::string& name) const;
    //! A matrix with rows of `cols` elements (ggml ne[0]) and `rows` rows (ne[1]; -1: any),
    //! wrapped from the mapping in its stored type.
    Mat weight(const std::string& name, int cols, int rows) const;
    //! A 1-D tensor of n elements as a float32 row (a copy; these are small).
    Mat vectorF32(const std::string& name, int n) const;
    //! The matrices of a 3-D tensor [cols, rows, experts] (a mixture of experts' weights), one after
    //! another: experts x rows rows of `cols` elements, wrapped from the mapping in its stored type.
    Mat expertWeights(const std::string& name, int cols, int rows, int experts) const;
    //! A 2-D tensor [cols, rows] as a float32 matrix of rows x cols (a copy: biases).
    Mat matrixF32(const std::string& name, int cols, int rows) const;

    //! Parameters of a layer named `name` of type `type`.
    static LayerParams params(const std::string& name, const std::string& type);
    //! Adds a layer whose inputs are `inputs`; returns its first output.
    Pin add(LayerParams& lp, const std::vector<Pin>& inputs);
    //! RMSNorm of `size` features (default: n_embd) with the weights <name>.weight times `weightScale`.
    Pin rmsNorm(const std::string& name, Pin x, int size = -1, float weightScale = 1.f);
    //! RMSNorm of each head (headDim features, default hp().headDim) of a tokens x (heads * head size) projection.
    Pin headNorm(const std::string& name, Pin x, int headDim = -1);
    //! LayerNorm with bias: <name>.weight and <name>.bias.
    Pin layerNorm(const std::string& name, Pin x);
    Pin scaleBy(const std::string& name, float factor, Pin x);
    Pin elementwise(const std::string& name, const char* operation, const std::vector<Pin>& inputs);
    Pin residual(const std::string& name, Pin a, Pin b);

    //! The projection of x onto <prefix>.weight (`out` rows of `in`) and its optional
    //! <prefix>.bias, as a layer named `prefix`.
    Pin matmul(const std::string& prefix, int in, int out, Pin x);
    //! The projections of x onto the weights named by `prefixes` (prefix.weight and an optional
    //! prefix.bias each, `outs` rows) as one layer named `name`, which computes them in one
    //! parallel section: one output pin per weight.
    std::vector<Pin> matmuls(const std::string& name, const std::vector<std::string>& prefixes,
                             const std::vector<int>& outs, int in, Pin x);
    std::vector<Pin> projections(const std::string& name, const std::vector<LLMMatMulWeight>& weights, int in, Pin x);
    //! The weight `tensor` (rows of `in` elements) cut into consecutive parts of `rows[i]` rows
    //! each (a fused projection: LFM2's b|c|x, Qwen3.5's q|k|v, Mamba-2's z|x|B|C|dt), as mapped.
    std::vector<LLMMatMulWeight> rowParts(const std::string& tensor, int in, const std::vector<int>& rows) const;

    /** Block `layer`'s attention over `inputs` (q, k, v, or one packed q|k|v), with the
        architecture's rotary embedding and the layer's sliding window and shape (hp().shapeOf);
        it becomes the next KV-cache layer. A layer whose shape names a KV source (gemma4's
        shared KV) takes q only and reads the keys and values of that block's attention. */
    Pin attention(const std::string& name, int layer, const std::vector<Pin>& inputs);
    //! llama's attention sub-layer on normed input h of block `layer` (prefix "blk.N."): q, k, v
    //! projections, the row's Q/K norms, attention, output projection (llama.cpp's build_attn).
    Pin selfAttention(const std::string& prefix, int layer, Pin h);
    //! llama's feed-forward sub-layer on normed input h: down(act(gate(h)) * up(h)), act SiLU or
    //! the row's GELU (llama.cpp's build_ffn with LLM_FFN_PAR).
    Pin gatedFeedForward(const std::string& prefix, Pin h);
    //! The mixture-of-experts feed-forward sub-layer on normed input h (llama.cpp's build_moe_ffn):
    //! the router ffn_gate_inp (and its bias) as a matmul, then the experts ffn_{gate,up,down}_exps
    //! (and their biases) as one LLMExperts layer, routed as the hyper-parameters say.
    Pin expertFeedForward(const std::string& prefix, Pin h, const char* activation = "swiglu");
    //! expertFeedForward where the file has experts, else gatedFeedForward.
    Pin feedForward(const std::string& prefix, Pin h);

    /** A causal depthwise convolution over time (LLMShortConv: a recurrent layer) of the inputs'
        channels together, with the kernel <name>.weight (ne {K, sum of channels}) and the
        optional <name>.bias; SiLU after it when `silu`. One output pin per input. */
    std::vector<Pin> shortConvolution(const std::string& name, int kernel, const std::vector<int>& channels,
                                      const std::vector<Pin>& inputs, bool silu);
    //! Pins a block function computes once for all layers (gemma4: each layer's per-layer
    //! input, made in block 0), kept here for the later blocks.
    std::vector<Pin>& layerInputs() { return layerInputs_; }
    //! gpt2's learned positions (one row per position of the training context) added to x.
    Pin positionEmbedding(Pin x);
    //! Reads the per-pair rotary frequency factors of every layer (readRopeFactors); before the blocks.
    void loadRopeFactors();
    /** The Net, once its layers are added: refuses the file's tensors that no layer read, then
        installs the LLM state over the attention layers and `logitRowsLayer`. */
    Net finish(int logitRowsLayer);

private:
    [[noreturn]] void fail(const std::string& msg) const;
    Mat readRopeFactors() const;
    void setRotaryScaling(LayerParams& lp, float base, float freqScale, int ropeDim, bool withFactors) const;

    const GGUFModelFile& f_;
    const bool integerDot_;
    const GGUFHyperParameters hp_;
    Net net_;
    std::vector<int> attentionIds_;
    std::map<int, int> cacheLayerOfBlock_;                // block -> its attention's KV-cache layer
    std::vector<std::pair<int, int>> sharedAttention_;   // (Net layer id, block whose KV it reads)
    int cacheKVHeads_ = 0, cacheHeadDim_ = 0;             // the KV cache's rows: the largest layer's
    std::vector<Pin> layerInputs_;
    int positionLayer_ = -1;
    Mat ropeFactors_;                     // per-pair frequency factors of every layer (readRopeFactors)
    mutable std::set<std::string> used_;  // tensors the graph reads
};

}}} // namespace cv::dnn::llm

#endif
