// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Inner loops of the gated delta rule (gated_delta_rule.hpp), dispatched by CPU features
// (gated_delta_rule_kernels.simd.hpp: baseline, AVX2, AVX-512). Each call covers a head's tokens
// or a whole chunk matrix, so the dispatch costs nothing per row.

#ifndef OPENCV_DNN_SRC_LLM_RECURRENT_GATED_DELTA_RULE_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_RECURRENT_GATED_DELTA_RULE_KERNELS_HPP

#include <opencv2/core.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** One value head's tokens for the recurrent form: token t's rows at q + t * qStride, ...; g and
    beta one float per token. */
struct DeltaRuleHeadTokens
{
    const float* q; size_t qStride;
    const float* k; size_t kStride;
    const float* v; size_t vStride;
    const float* g; size_t gStride;
    const float* beta; size_t betaStride;
    float* o; size_t oStride;
    int tokens, keyDim, valueDim;
    float scale;
};

/** The recurrence token by token on one head's state (valueDim rows of keyDim floats, row j =
    column j of S): per token and row, both dot products (with k and q) in one pass over the
    row, then the row's update; o[j] = scale * (exp(g) S_j.q + d_j k.q), which is the updated
    row's product with q. */
void deltaRuleRecurrentHead(const DeltaRuleHeadTokens& head, float* state);

//! Which terms addWeightedRows adds to row r.
enum WeightedRowsTerms
{
    kAllTerms = 0,        //!< s < terms
    kTermsBelowRow = 1,   //!< s < r (y may be x itself: a forward substitution)
    kTermsThroughRow = 2  //!< s <= r
};

/** y[r] += sum over the terms s of c[r * cRowStride + s * cTermStride] * x[s], for rows of
    `width` floats (row r of y at y + r * yStride, row s of x at x + s * xStride), r < rows. With
    kTermsBelowRow y may equal x: rows are finished in order, each from the finished rows above. */
void addWeightedRows(const float* c, size_t cRowStride, size_t cTermStride, const float* x, size_t xStride,
                     int rows, int terms, WeightedRowsTerms which, int width, float* y, size_t yStride);

}}} // namespace cv::dnn::llm

#endif
