// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_BATCH_GENERATION_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_BATCH_GENERATION_HPP

#include "completion.hpp"
#include "drafter.hpp"
#include "../kv_cache/paged_kv_cache.hpp"

#include <functional>

namespace cv {
namespace dnn {
namespace llm {

struct BatchCompletion
{
    String text;
    std::vector<int> generated;
    int drafted = 0, draftsKept = 0;  //!< speculative decoding's drafted and kept tokens
};

/** Generates one completion per prompt with continuous batching: up to `maxParallel`
    sequences decode together, one token each per forward; a finished sequence leaves and a
    waiting prompt joins between steps, when the cache's budget can hold its prompt and
    maxNewTokens. Each prompt is prefilled in a forward of its own (so its logits are those of
    a lone run); identical prompts are prefilled once and forked, sharing their pages.
    Completion i samples with seed config.seed + i. onPiece(i, piece) (optional) streams;
    returning false ends completion i. Uses sequence ids the cache does not hold and removes
    them at the end; other sequences are left as they are. With a `drafter`, each sequence
    drafts up to config.draftTokens tokens per step on its own and one forward checks them all.
    Prompts with images (negative ids: rows of an image table, per prompt) come with `images`:
    prepare(i) readies the Net for prompt i's prefill (its table, its non-causal spans), and
    keys[i] names its images, so that prompts with the same ids but other images are not
    prefilled once and shared. Decode steps feed text tokens only. */
struct BatchImages
{
    std::function<void(int)> prepare;
    std::vector<std::string> keys;
};

std::vector<BatchCompletion> generateBatch(Net& net, PagedKVCache& cache, const Tokenizer& tokenizer,
                                           const std::vector<std::vector<int>>& prompts,
                                           const GenerationConfig& config, int maxParallel,
                                           const std::function<bool(int, const String&)>& onPiece,
                                           Drafter* drafter = nullptr, const BatchImages* images = nullptr);

/** Feeds `tokens` (token i continues sequence sequenceIds[i]) and returns one row of logits per
    distinct sequence, in order of first appearance, or one per token named in `logitTokens`.
    `input`: the caller's reusable input Mat. */
Mat forwardTokens(Net& net, const std::vector<int>& tokens, const std::vector<int>& sequenceIds, Mat& input,
                  const std::vector<int>& logitTokens = std::vector<int>());

}}} // namespace cv::dnn::llm

#endif
