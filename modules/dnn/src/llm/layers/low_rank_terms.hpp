// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* The LoRA terms of one matmul layer (net/lora_adapter.hpp): for each row of a forward whose
   sequence runs with adapters, and each of those adapters' pairs for one of the layer's
   weights, scale * B (A x). A forward first computes every term's A x (prepare: a few dot
   products of `in` values per rank, rounded as llama.cpp's matmul rounds them), then the
   layer's stripes add B's part for the output rows they computed (addTo), so the terms cost no
   parallel section of their own. Each row's terms depend on that row only: a sequence gets the
   same numbers alone or in a batch with sequences of other adapters. */

#ifndef OPENCV_DNN_SRC_LLM_LAYERS_LOW_RANK_TERMS_HPP
#define OPENCV_DNN_SRC_LLM_LAYERS_LOW_RANK_TERMS_HPP

#include "../net/llm_net_state.hpp"

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

class LowRankTerms
{
public:
    //! Adapter `id`'s pair for weight w (owned by the Net's state).
    void add(int id, int weight, const LowRankWeight* pair);
    void remove(int id);
    bool empty() const { return pairs_.empty(); }

    /** Finds the terms of a forward of `rows` rows of x (stride in): rows are the plan's
        tokens, or its logit rows (the output projection after LLMLogitRows). Computes their
        A x. False when no row has a term. */
    bool prepare(const LLMNetState& state, const float* x, int rows, int in);
    //! Adds weight w's terms to its output columns [begin, end) of every row (y: rows x out).
    void addTo(int weight, float* y, int out, int begin, int end) const;

private:
    struct Pair
    {
        int id, weight;
        const LowRankWeight* w;
    };
    struct Term
    {
        int weight, row;
        const LowRankWeight* w;
        float scale;   //!< the sequence's scale times the pair's alpha / rank
        size_t t;      //!< its A x in t_ (rank values, scale applied)
    };
    void computeAx(const Term& term, const float* x, int in);

    std::vector<Pair> pairs_;
    std::vector<Term> terms_;   // of the forward being run (capacity kept: no allocation per step)
    std::vector<float> t_;
};

}}} // namespace cv::dnn::llm

#endif
