// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_LLM_HPP
#define OPENCV_DNN_LLM_HPP

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/kv_cache.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/* The state of a language-model Net, whichever file it came from (readNet on a GGUF file or an
   ONNX decoder): its KV cache and the plan of its next forward. */

/** @brief The KV cache of a Net made by readNet()/readNetFromGGUF() for a language model. */
CV_EXPORTS_W Ptr<KVCache> getLLMKVCache(Net& net);

/** @brief Plans the next forward of a language-model Net as a ragged batch.

`sequenceIds[i]` is the sequence that input token i continues (one id per token of the next
setInput(); a sequence's tokens in input order, each after that sequence's cached tokens).
Sequences absent from the cache start empty. The forward then returns one row of logits per
distinct sequence, in order of first appearance, for its last token (every token's row when the
Net was read with allLogits). Without a plan, a forward continues sequence 0 with all its tokens.
*/
CV_EXPORTS_W void setLLMBatch(Net& net, const std::vector<int>& sequenceIds);

/** @brief setLLMBatch() naming the tokens whose logits the next forward returns.

`logitTokens` are indices into the batch's tokens, strictly ascending; the forward returns one
row of logits per index, in that order (speculative decoding verifies every drafted token of a
sequence in one forward). Empty: the last token of each sequence. A Net read with allLogits
returns every token's row regardless.
*/
CV_EXPORTS_W void setLLMBatch(Net& net, const std::vector<int>& sequenceIds, const std::vector<int>& logitTokens);

/** @brief Starts over: removes every sequence from the Net's KV cache. */
CV_EXPORTS_W void resetLLMState(Net& net);

/** @brief Rewinds sequence 0 to its first `length` tokens (the next forward continues from
there). A length beyond the cached one changes nothing. */
CV_EXPORTS_W void truncateLLMState(Net& net, int length);

/** @brief The number of tokens sequence 0 holds in the Net's KV cache (0 after resetLLMState()). */
CV_EXPORTS_W int getLLMSequenceLength(Net& net);

/** @brief Loads a LoRA adapter (a GGUF adapter file, as llama.cpp's `--lora` takes) for a Net read
from a GGUF file of the same architecture, and returns its id. The adapter changes nothing until
a sequence is given it (setLLMSequenceAdapters()): its low-rank terms are added to the base
weights' results without merging (quantized weights stay as they are), for that sequence's
tokens only, so sequences with different adapters share one forward. A file that does not fit the
model (another architecture, a tensor the model has no projection of, a wrong shape, a truncated
file) throws a cv::Exception naming the problem and leaves the Net as it was. */
CV_EXPORTS_W int loadLLMAdapter(Net& net, const String& path);

/** @brief Removes a loaded adapter from the Net (and from the sequences that used it). */
CV_EXPORTS_W void unloadLLMAdapter(Net& net, int adapterId);

/** @brief The adapters (ids of loadLLMAdapter()) and scales a sequence's tokens run with from the
next forward on: each adds scale * alpha / rank * B (A x) to the weights it adapts (llama.cpp's
effective scale; without alpha in the file, scale * B (A x)). Empty: none; empty scales: 1 each;
zero scales are dropped. A sequence keeps its adapters until they are set again or
resetLLMState(). Keys and values the cache already holds for the sequence stay as they were
computed. */
CV_EXPORTS_W void setLLMSequenceAdapters(Net& net, int sequenceId, const std::vector<int>& adapterIds,
                                         const std::vector<float>& scales = std::vector<float>());

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
