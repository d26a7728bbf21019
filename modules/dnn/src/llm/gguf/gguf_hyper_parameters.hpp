// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What a GGUF language model's metadata says of its graph, read and range-checked as llama.cpp
// reads it (llama-model.cpp, src/models/<arch>.cpp): sizes, rotary embedding and its scaling,
// sliding windows, the architectures' scales and soft-caps. gguf_net_builder.cpp builds the Net
// from these and the tensors.

#ifndef OPENCV_DNN_SRC_LLM_GGUF_GGUF_HYPER_PARAMETERS_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_GGUF_HYPER_PARAMETERS_HPP

#include "gguf_model_file.hpp"
#include "../attention/rotary_embedding.hpp"

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

// What sets an architecture's graph apart, as llama.cpp's src/models/<arch>.cpp builds it.
// Q/K/V biases are used where the file has them (qwen2 always does).
enum class QKNorm
{
    None,
    PerHead,  // RMSNorm of every Q and K head before rotary (blk.N.attn_q_norm / attn_k_norm, head_dim each)
    Whole     // RMSNorm of the whole Q and K projections (olmo2: n_head * head_dim and n_head_kv * head_dim)
};

struct ArchInfo
{
    const char* name;
    bool neoxRope;  // rotary pairs (i, i + rope_dim/2) instead of (2i, 2i+1)
    QKNorm qkNorm;
    bool preNorms;  // attn_norm / ffn_norm on a block's inputs (olmo2 has none)
    bool postNorms; // post_attention_norm / post_ffw_norm on the attention and FFN outputs
    bool gelu;      // gated FFN with GELU (tanh) instead of SiLU
    int swaPeriod;  // sliding-window pattern when the file names none: of every swaPeriod layers
                    // the last is global (llama.cpp's set_swa_pattern); 0: no sliding window
};

struct GGUFHyperParameters
{
    std::string arch;               //!< general.architecture
    const ArchInfo* info = nullptr;
    int nCtxTrain = 0;              //!< context_length: the training context
    int nCtx = 0;                   //!< the context in use (the caller's choice, else nCtxTrain)
    int nEmbd = 0, nLayer = 0, nFF = 0, nHead = 0, nKV = 0, headDim = 0, ropeDim = 0;
    float eps = 1e-5f;              //!< RMSNorm (gpt2: LayerNorm) epsilon
    float ropeBase = 10000.f, ropeFreqScale = 1.f;
    float ropeAttnFactor = 1.f;     //!< rope.scaling.attn_factor (YaRN's magnitude is added per layer)
    bool phi3LongRope = false;      //!< phi3: rope_factors_long (else _short)
    std::vector<int> slidingWindow; //!< per layer, 0: global (empty: no sliding window)
    float ropeBaseLocal = 10000.f, ropeFreqScaleLocal = 1.f;  //!< of the sliding-window layers
    float embeddingScale = 1.f;     //!< gemma: sqrt(n_embd); granite: embedding_scale
    float attentionScale = 0.f;     //!< of the scores (0: 1/sqrt(head size))
    float attnSoftCap = 0.f, finalSoftCap = 0.f;  //!< gemma2 (final also gemma3): 0 = none
    YarnSettings yarn;              //!< extFactor 0: no YaRN
    float yarnLogMultiplier = 0.f;  //!< mistral3: rope.scaling.yarn_log_multiplier
    float residualScale = 0.f, logitScale = 0.f;  //!< granite: 0 = none
    bool ropeEnabled = true;        //!< granite: rope.scaling.finetuned
    int noRopeLayerStep = 0;        //!< smollm3: 4 (layers 3, 7, ... have no rotary); 0: every layer rotates
    float temperatureScale = 0.f;   //!< mistral3: attention.temperature_scale (0: none)
    int temperatureLength = 0;

    bool gpt2() const { return arch == "gpt2"; }
    //! Whether layer i rotates q and k (llama.cpp's has_rope / smollm3's n_no_rope_layer_step).
    bool ropeOnLayer(int i) const;
    //! Positions layer i attends to (0: all).
    int windowOf(int i) const { return slidingWindow.empty() ? 0 : slidingWindow[i]; }
};

/** The hyper-parameters of a GGUF file for a context of `contextLength` tokens (0: the file's
    training context). Unknown architectures, values out of range and keys that would change
    the result without being implemented are a cv::Exception naming them. */
GGUFHyperParameters readGGUFHyperParameters(const GGUFModelFile& file, int contextLength);

}}} // namespace cv::dnn::llm

#endif
