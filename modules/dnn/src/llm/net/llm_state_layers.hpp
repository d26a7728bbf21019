// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What installLLMState (net_assembly.hpp) needs of the layers that read a language model's Net
// state. The layers implement these interfaces (layers/llm_layers.hpp), so that net/ does not
// name their classes: the layers include net/ for the state they read, never the other way.

#ifndef OPENCV_DNN_SRC_LLM_NET_LLM_STATE_LAYERS_HPP
#define OPENCV_DNN_SRC_LLM_NET_LLM_STATE_LAYERS_HPP

#include <opencv2/core.hpp>

#include <string>

namespace cv {
namespace dnn {
namespace llm {

class LLMNetState;  // llm_net_state.hpp

//! An attention layer: it keeps its keys and values in the Net's KV cache, which is sized from it.
class KVCacheUser
{
public:
    virtual ~KVCacheUser() {}
    //! Makes the layer the `layerIndex`-th attention layer of a Net with this state (its KV cache layer).
    virtual void attachState(const Ptr<LLMNetState>& state, int layerIndex) = 0;
    //! KV heads and head size (what the Net's KV cache must hold per layer), and the context.
    virtual int kvHeads() const = 0;
    virtual int headDim() const = 0;
    virtual int maxContext() const = 0;
    //! Positions a token attends to, itself included (0: all; the KV cache releases the rest).
    virtual int slidingWindow() const = 0;
};

/** A recurrent layer (short convolution, gated delta net, Mamba-2 scan): it keeps a fixed-size
    state per sequence in the Net's KV cache (PagedKVCache::setRecurrentLayers) and reads each
    sequence's block from the batch plan. */
class RecurrentStateUser
{
public:
    virtual ~RecurrentStateUser() {}
    //! Floats of the layer's state per sequence.
    virtual size_t stateFloats() const = 0;
    //! Makes the layer the `index`-th recurrent layer of a Net with this state.
    virtual void attachState(const Ptr<LLMNetState>& state, int index) = 0;
};

//! The layer that keeps the rows whose logits a forward returns, as the Net's batch plan says.
class LogitRowsSelector
{
public:
    virtual ~LogitRowsSelector() {}
    virtual void attachState(const Ptr<LLMNetState>& state) = 0;
    //! Whether every token's row is kept (then a forward returns all logits).
    virtual bool allLogits() const = 0;
};

struct LowRankWeight;  // lora_adapter.hpp

/** A layer whose weights LoRA adapters may adapt (the matmul layer): each of its weights names
    the GGUF tensor it holds rows of. */
class LoRATarget
{
public:
    virtual ~LoRATarget() {}
    virtual void attachState(const Ptr<LLMNetState>& state) = 0;
    virtual int loraWeightCount() const = 0;
    //! The GGUF tensor weight w holds rows of ("" when it comes from elsewhere), and its first row there.
    virtual std::string loraTensor(int w) const = 0;
    virtual int loraTensorRow(int w) const = 0;
    virtual int loraRows(int w) const = 0;
    virtual int loraInputs() const = 0;
    //! Adds adapter `id`'s pair for weight w (the layer keeps the pointer: the state owns it).
    virtual void addLowRank(int id, int w, const LowRankWeight* pair) = 0;
    //! Removes adapter `id`'s pairs.
    virtual void removeLowRank(int id) = 0;
};

}}} // namespace cv::dnn::llm

#endif
