// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_SAMPLER_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_SAMPLER_HPP

#include <opencv2/core.hpp>
#include <utility>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

struct SamplingParams
{
    float temperature = 0.f;        //!< <= 0: greedy
    int topK = 0;                   //!< 0: off
    float topP = 1.f;               //!< 1: off
    float minP = 0.f;               //!< 0: off
    float repetitionPenalty = 1.f;  //!< 1: off
    float frequencyPenalty = 0.f;   //!< subtracted once per occurrence of a recent token (0: off)
    float presencePenalty = 0.f;    //!< subtracted once from every recent token (0: off)
    int repetitionWindow = 64;      //!< how many recent tokens the penalties look at (-1: all)
};

/** Picks the next token from logits. The chain is llama.cpp's default order: penalties
    (repetition, frequency, presence), then (unless greedy) top-k, top-p and min-p on the distribution at temperature
    1, then temperature, then a draw from the seeded generator. */
class CV_EXPORTS Sampler  // exported (though internal) for the C++ tests
{
public:
    Sampler(const SamplingParams& params, uint64 seed);

    //! logits of n tokens; history: the tokens so far (prompt and generated), for the penalty.
    int sample(const float* logits, int n, const std::vector<int>& history);
    /** Speculative decoding: the next token given a drafted one (chosen without this
        distribution, e.g. greedily by a draft model or by prompt lookup). Returns `draft` when
        it is kept: always when greedy and it is the best token, otherwise with its probability
        p(draft); else a draw from the distribution without it, so that the token follows the
        same distribution as sample(). draft < 0: sample(). */
    int sample(const float* logits, int n, const std::vector<int>& history, int draft);

    /** The logits after the penalties (`logits` itself when there are none; valid until the
        next call). A token seen c > 0 times in the window: its logit divided by the repetition
        penalty when positive, multiplied when not, then less c * frequency + presence
        (llama.cpp's penalties sampler, OpenAI's frequency and presence penalties). */
    const float* penalize(const float* logits, int n, const std::vector<int>& history);

private:
    //! Sorts the tokens into candidates_, cuts top-k / top-p / min-p, sets weights_ at the
    //! temperature; returns how many survive.
    size_t keepSurvivors(const float* z, int n);
    //! Draws among the first `keep` candidates (weights summing to `total`) except `excluded`.
    int draw(size_t keep, double total, int excluded);

    SamplingParams params_;
    RNG rng_;
    // Scratch reused across calls: sampling a token allocates nothing once warmed up.
    std::vector<float> penalized_;
    std::vector<int> counts_;  // occurrences of each token in the window
    std::vector<std::pair<float, int>> candidates_;  // (logit, token)
    std::vector<double> weights_;
};

}}} // namespace cv::dnn::llm

#endif
