// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* What sets a GGUF architecture apart, as one row of the architecture table
   (architectures/architecture_table.cpp): llama.cpp's per-architecture switches of
   llama-model.cpp (rope type, hyper-parameter keys) and its graph, src/models/<arch>.cpp.
   A row starts from llama's graph and names only what differs; a new architecture is one row,
   plus a function in architectures/ where it reads keys of its own (its hyper-parameter hook)
   or has a block of its own (its block function, assembled from GGUFGraphBuilder's shared
   norm / attention / feed-forward helpers).
   A mixture-of-experts feed-forward (a router and experts: GGUFGraphBuilder::expertFeedForward)
   replaces the dense one where the row allows experts and the file has expert_count. Block kinds
   to come fit the same place: a hybrid block is a block function that chooses per layer between
   selfAttention and a recurrent-state helper. */

#ifndef OPENCV_DNN_SRC_LLM_GGUF_GGUF_ARCHITECTURE_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_GGUF_ARCHITECTURE_HPP

#include <opencv2/core.hpp>

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

struct LayerPin;
struct GGUFHyperParameters;
class GGUFMetadataReader;
class GGUFGraphBuilder;

//! llama.cpp's llama_rope_type: how q and k rotate.
enum class RopeType
{
    None,  // no rotary (gpt2: learned positions)
    Norm,  // pairs (2i, 2i+1)
    Neox   // pairs (i, i + rope_dim/2)
};

//! Where the per-pair rotary frequency factors come from (GGUFGraphBuilder::readRopeFactors).
enum class RopeFactors
{
    FreqsTensor,  // rope_freqs.weight where present (Llama 3)
    LongRoPE,     // rope_factors_long / _short.weight for the context in use (phi3); rope_freqs.weight if present
    None          // none (smollm3: a rope_freqs tensor is refused as unused)
};

enum class QKNorm
{
    None,
    PerHead,  // RMSNorm of every Q and K head before rotary (blk.N.attn_q_norm / attn_k_norm, head_dim each)
    Whole     // RMSNorm of the whole Q and K projections (olmo2: n_head * head_dim and n_head_kv * head_dim)
};

enum class NormKind
{
    RMS,       // RMSNorm: <name>.weight
    LayerNorm  // LayerNorm with bias (gpt2): <name>.weight and <name>.bias
};

//! Whether an architecture's feed-forward blocks are mixtures of experts (expert_count).
enum class Experts
{
    None,      // dense only: a file with expert_count > 0 is refused
    Optional,  // dense, or experts of feed_forward_length rows where expert_count > 0 (llama: Mixtral)
    Required   // experts of expert_feed_forward_length rows (default feed_forward_length / expert_used_count)
};

//! Sliding-window attention as an architecture reads it (GGUFHyperParameters::slidingWindow).
struct SlidingWindowDefaults
{
    int period = 0;             //!< when the file names no pattern: of every `period` layers the last is global; 0: no sliding window
    int window = 0;             //!< positions when attention.sliding_window is absent (0: then none, and 0 in the file means none)
    float localRopeBase = 0.f;  //!< rope.freq_base_swa when absent (0: the global base)
    bool localFreqScaleIsGlobal = false;  //!< local layers scale frequencies as global ones do (else 1: no linear / YaRN scaling)
};

//! Reads the keys only this architecture has into h, after the common ones (null: none).
using HyperParameterHook = void (*)(const GGUFMetadataReader& reader, GGUFHyperParameters& h);
//! Adds block `layer` on the residual stream x to the Net; returns the new stream.
using BlockFunction = LayerPin (*)(GGUFGraphBuilder& g, int layer, LayerPin x);
//! What a hybrid model's recurrent layers compute in place of attention, on the normed input h of
//! block prefix "blk.N." (llamaBlock calls it on the layers the hyper-parameters mark recurrent).
using RecurrentMixer = LayerPin (*)(GGUFGraphBuilder& g, const std::string& prefix, LayerPin h);

//! The block of llama and of the architectures that differ from it only by the row's switches.
LayerPin llamaBlock(GGUFGraphBuilder& g, int layer, LayerPin x);

/** One row of the architecture table. Defaults are llama's; each setter returns a copy with one
    switch changed, so that a row reads as the list of what its architecture changes. */
struct GGUFArchitecture
{
    const char* name;
    RopeType rope = RopeType::Norm;
    RopeFactors ropeFactors = RopeFactors::FreqsTensor;
    int noRopeLayerStep = 0;         //!< layers step-1, 2*step-1, ... do not rotate (smollm3: 4); 0: all rotate
    bool ropeDimIsHeadDim = false;   //!< rope.dimension_count must equal the head size (llama.cpp's graph assumes it)
    NormKind norm = NormKind::RMS;   //!< of the output (and of the blocks that ask for the architecture's norm)
    bool preNorms = true;            //!< attn_norm / ffn_norm on a block's inputs (olmo2 has none)
    bool postNorms = false;          //!< post_attention_norm / post_ffw_norm on the attention and FFN outputs
    QKNorm qkNorm = QKNorm::None;
    bool geluFFN = false;            //!< gated FFN with GELU (tanh) instead of SiLU
    SlidingWindowDefaults slidingWindow;
    bool learnedPositions = false;   //!< position_embd.weight added to the token embeddings (gpt2)
    bool embeddingScaleOnTokensOnly = false;  //!< the embedding scale applies to token rows, not fed embeddings (gemma3)
    bool alwaysTiedOutput = false;   //!< the output projection is token_embd even where output.weight exists (gemma2)
    Experts experts = Experts::None; //!< mixture-of-experts feed-forward blocks
    bool attentionSinks = false;     //!< blk.N.attn_sinks.weight: a logit per head in the softmax (gpt-oss)
    bool outputBias = false;         //!< output.bias added to the logits (phi2)
    //! Attention and FFN shapes differ by layer (gemma4): feed_forward_length and head_count_kv
    //! may be per-layer arrays, which the hook reads (GGUFHyperParameters::layerShapes).
    bool perLayerShapes = false;
    //! Some layers are recurrent (hybrid models): attention.head_count_kv may be per layer, 0 on
    //! those layers (llama.cpp's is_recr for lfm2, granitehybrid), or the hook says which.
    bool recurrentLayers = false;
    RecurrentMixer recurrentMixer = nullptr;  //!< llamaBlock's sub-layer on recurrent layers (lfm2, granitehybrid)
    const char* outputNorm = "output_norm";  //!< the final norm's tensor (lfm2: token_embd_norm)
    HyperParameterHook readHyperParameters = nullptr;
    BlockFunction block = llamaBlock;

    constexpr explicit GGUFArchitecture(const char* archName) : name(archName) {}

    constexpr GGUFArchitecture neoxRope() const { GGUFArchitecture a = *this; a.rope = RopeType::Neox; return a; }
    constexpr GGUFArchitecture withoutRope() const { GGUFArchitecture a = *this; a.rope = RopeType::None; return a; }
    constexpr GGUFArchitecture withRopeFactors(RopeFactors f) const { GGUFArchitecture a = *this; a.ropeFactors = f; return a; }
    constexpr GGUFArchitecture withoutRopeEvery(int step) const { GGUFArchitecture a = *this; a.noRopeLayerStep = step; return a; }
    constexpr GGUFArchitecture requiringFullRope() const { GGUFArchitecture a = *this; a.ropeDimIsHeadDim = true; return a; }
    constexpr GGUFArchitecture withLayerNorm() const { GGUFArchitecture a = *this; a.norm = NormKind::LayerNorm; return a; }
    constexpr GGUFArchitecture withoutPreNorms() const { GGUFArchitecture a = *this; a.preNorms = false; return a; }
    constexpr GGUFArchitecture withPostNorms() const { GGUFArchitecture a = *this; a.postNorms = true; return a; }
    constexpr GGUFArchitecture withQKNorm(QKNorm n) const { GGUFArchitecture a = *this; a.qkNorm = n; return a; }
    constexpr GGUFArchitecture withGeluFFN() const { GGUFArchitecture a = *this; a.geluFFN = true; return a; }
    constexpr GGUFArchitecture withSlidingWindow(SlidingWindowDefaults s) const { GGUFArchitecture a = *this; a.slidingWindow = s; return a; }
    constexpr GGUFArchitecture withLearnedPositions() const { GGUFArchitecture a = *this; a.learnedPositions = true; return a; }
    constexpr GGUFArchitecture scalingTokenRowsOnly() const { GGUFArchitecture a = *this; a.embeddingScaleOnTokensOnly = true; return a; }
    constexpr GGUFArchitecture withTiedOutput() const { GGUFArchitecture a = *this; a.alwaysTiedOutput = true; return a; }
    constexpr GGUFArchitecture withOutputBias() const { GGUFArchitecture a = *this; a.outputBias = true; return a; }
    constexpr GGUFArchitecture withPerLayerShapes() const { GGUFArchitecture a = *this; a.perLayerShapes = true; return a; }
    constexpr GGUFArchitecture withAttentionSinks() const { GGUFArchitecture a = *this; a.attentionSinks = true; return a; }
    constexpr GGUFArchitecture withOutputNorm(const char* tensor) const { GGUFArchitecture a = *this; a.outputNorm = tensor; return a; }
    constexpr GGUFArchitecture withRecurrentLayers() const { GGUFArchitecture a = *this; a.recurrentLayers = true; return a; }
    constexpr GGUFArchitecture withRecurrentMixer(RecurrentMixer m) const
    {
        GGUFArchitecture a = *this;
        a.recurrentLayers = true;
        a.recurrentMixer = m;
        return a;
    }
    constexpr GGUFArchitecture withExperts(Experts e) const { GGUFArchitecture a = *this; a.experts = e; return a; }
    constexpr GGUFArchitecture readingKeys(HyperParameterHook hook) const { GGUFArchitecture a = *this; a.readHyperParameters = hook; return a; }
    constexpr GGUFArchitecture withBlock(BlockFunction f) const { GGUFArchitecture a = *this; a.block = f; return a; }
};

//! The row of general.architecture `name`; null when the table has none.
const GGUFArchitecture* findGGUFArchitecture(const std::string& name);

//! The architectures of the table, in its order (exported for the C++ tests, which check that
//! the lists users read name the same ones).
CV_EXPORTS std::vector<std::string> ggufArchitectureNames();

}}} // namespace cv::dnn::llm

#endif
