// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What a GGUF language model's metadata says of its graph, read and range-checked as llama.cpp
// reads it (llama-model.cpp, src/models/<arch>.cpp): sizes, rotary embedding and its scaling,
// sliding windows as the architecture's row sets them, then the keys of the architecture's own
// hook (architectures/*.cpp: scales, soft-caps, ...). gguf_net_builder.cpp builds the Net from
// these and the tensors.

#ifndef OPENCV_DNN_SRC_LLM_GGUF_GGUF_HYPER_PARAMETERS_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_GGUF_HYPER_PARAMETERS_HPP

#include "gguf_model_file.hpp"
#include "gguf_architecture.hpp"
#include "../attention/rotary_embedding.hpp"

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

struct GGUFHyperParameters
{
    std::string arch;               //!< general.architecture
    const GGUFArchitecture* architecture = nullptr;  //!< its row of the architecture table
    int nCtxTrain = 0;              //!< context_length: the training context
    int nCtx = 0;                   //!< the context in use (the caller's choice, else nCtxTrain)
    int nEmbd = 0, nLayer = 0, nFF = 0, nHead = 0, nKV = 0, headDim = 0, ropeDim = 0;
    float eps = 1e-5f;              //!< RMSNorm (gpt2: LayerNorm) epsilon
    float ropeBase = 10000.f, ropeFreqScale = 1.f;
    float ropeAttnFactor = 1.f;     //!< rope.scaling.attn_factor (YaRN's magnitude is added per layer)
    bool longRopeFactors = false;   //!< RopeFactors::LongRoPE: rope_factors_long (else _short)
    std::vector<int> slidingWindow; //!< per layer, 0: global (empty: no sliding window)
    float ropeBaseLocal = 10000.f, ropeFreqScaleLocal = 1.f;  //!< of the sliding-window layers
    float embeddingScale = 1.f;     //!< gemma: sqrt(n_embd); granite: embedding_scale
    float attentionScale = 0.f;     //!< of the scores (0: 1/sqrt(head size))
    float attnSoftCap = 0.f, finalSoftCap = 0.f;  //!< gemma2 (final also gemma3): 0 = none
    YarnSettings yarn;              //!< extFactor 0: no YaRN
    float yarnLogMultiplier = 0.f;  //!< mistral3: rope.scaling.yarn_log_multiplier
    float residualScale = 0.f, logitScale = 0.f;  //!< granite: 0 = none
    bool ropeEnabled = true;        //!< granite: rope.scaling.finetuned
    float temperatureScale = 0.f;   //!< mistral3: attention.temperature_scale (0: none)
    int temperatureLength = 0;
    int nExpert = 0, nExpertUsed = 0, nFFExpert = 0;  //!< mixture of experts (nExpert 0: dense)
    int nFFShared = 0;              //!< qwen35moe: the shared expert's size (expert_shared_feed_forward_length)
    std::string expertGating = "softmax";  //!< LLMExperts' gating (build_moe_ffn's gating_op)
    bool expertWeightsNorm = true;         //!< the chosen experts' weights divided by their sum
    float expertWeightsScale = 0.f;        //!< 0: not scaled
    //! Hybrid models: per layer, whether it is recurrent (no attention; empty: none is).
    std::vector<bool> recurrent;
    int shortConvKernel = 0;        //!< lfm2: shortconv.l_cache; qwen35, granitehybrid: ssm.conv_kernel (the convolution's taps)
    //! ssm.inner_size, ssm.state_size, ssm.time_step_rank, ssm.group_count (qwen35: value width,
    //! key head size, value heads, key heads; granitehybrid: Mamba-2's d_inner, d_state, heads, groups)
    int ssmInner = 0, ssmState = 0, ssmDtRank = 0, ssmGroups = 0;
    bool parallelResidual = false;  //!< gptneox: use_parallel_residual (attention and FFN on the same input)
    /** Per layer where the layers differ in shape (gemma4: local and global layers have their
        own head size, KV heads and rotary dimensions, the KV-sharing layers a wider FFN); empty:
        nHead, nKV, headDim, ropeDim, nFF on every layer. */
    struct LayerShape
    {
        int heads, kvHeads, headDim, ropeDim, ff;
        int kvSource;  //!< the layer whose keys and values this one reads (gemma4's shared KV), -1: its own
    };
    std::vector<LayerShape> layerShapes;
    bool ropeFactorsOnLocalLayers = true;  //!< gemma4: rope_freqs.weight turns the global layers only
    int nEmbdPerLayer = 0;          //!< gemma4: embedding_length_per_layer_input (0: no per-layer embeddings)

    //! Whether layer i rotates q and k (llama.cpp's rope type and has_rope, smollm3's n_no_rope_layer_step).
    bool ropeOnLayer(int i) const;
    //! Positions layer i attends to (0: all).
    int windowOf(int i) const { return slidingWindow.empty() ? 0 : slidingWindow[i]; }
    //! Layer i's shape (layerShapes, else the model's sizes).
    LayerShape shapeOf(int i) const
    {
        return layerShapes.empty() ? LayerShape{nHead, nKV, headDim, ropeDim, nFF, -1} : layerShapes[i];
    }
    bool isRecurrent(int i) const { return !recurrent.empty() && recurrent[i]; }
};

/** The metadata of a GGUF file as the architecture hooks read it: keys are `<arch>.<key>`, and
    errors a cv::Exception naming the file. */
class GGUFMetadataReader
{
public:
    GGUFMetadataReader(const GGUFModelFile& file, const std::string& arch) : f_(file), arch_(arch) {}

    const GGUFModelFile& file() const { return f_; }
    //! `<arch>.<key>`
    std::string key(const std::string& key) const { return arch_ + "." + key; }
    bool has(const std::string& key) const { return f_.hasMetadata(this->key(key)); }
    //! A positive integer; `def` when absent (def < 0: the key is required).
    int hparam(const std::string& key, int def = -1) const;
    //! A number as a float; `def` when absent.
    float hparamFloat(const std::string& key, float def) const;
    //! A float that must be finite; 0 when absent.
    float finiteHparam(const std::string& key) const;
    [[noreturn]] void fail(const std::string& msg) const;

private:
    const GGUFModelFile& f_;
    std::string arch_;
};

/** The hyper-parameters of a GGUF file for a context of `contextLength` tokens (0: the file's
    training context). Unknown architectures, values out of range and keys that would change
    the result without being implemented are a cv::Exception naming them. */
GGUFHyperParameters readGGUFHyperParameters(const GGUFModelFile& file, int contextLength);

}}} // namespace cv::dnn::llm

#endif
