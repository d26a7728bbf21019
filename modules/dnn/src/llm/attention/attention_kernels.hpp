// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Inner loops of paged attention over a run of key/value rows, dispatched by CPU features
// (attention_kernels.simd.hpp: baseline, AVX2, AVX-512). A call covers a whole run of rows,
// so the dispatch costs nothing per key.

#ifndef OPENCV_DNN_SRC_LLM_ATTENTION_ATTENTION_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_ATTENTION_ATTENTION_KERNELS_HPP

#include <opencv2/core.hpp>

namespace cv {
namespace dnn {
namespace llm {

/** scores[h * ld + j] = scale * dot(q + h * headDim, k + j * kStride), for the `group` query
    heads h that share the keys and the n key rows j. */
void attentionScores(const float* q, int group, int headDim, const float* k, size_t kStride, int n,
                     float scale, float* scores, int ld);

/** attentionScores with keys stored in half precision: the same results as on the keys
    converted to float (the conversion is exact), without a converted copy. */
void attentionScores(const float* q, int group, int headDim, const hfloat* k, size_t kStride, int n,
                     float scale, float* scores, int ld);

/** For each of the `rows` rows of n scores (stride ld): subtracts the row's maximum, takes the
    exponentials in place, and returns the maximum and the sum of the exponentials. */
void attentionSoftmaxRows(float* scores, int rows, int n, int ld, float* maxOut, float* sumOut);

/** acc[h * accStride + i] += sum over j of p[h * ld + j] * v[j * vStride + i], for h < group,
    i < headDim, j < n. */
void attentionAccumulate(const float* p, int group, int n, int ld, const float* v, size_t vStride, int headDim,
                         float* acc, size_t accStride);

/** attentionAccumulate with values stored in half precision (same results as on the values
    converted to float). */
void attentionAccumulate(const float* p, int group, int n, int ld, const hfloat* v, size_t vStride, int headDim,
                         float* acc, size_t accStride);

/** attentionScores with keys stored in 8 bits (KVStorageCodec's CV_8S rows: headDim int8
    elements, then the row's float scale; kStride in bytes): the same results as on the rows
    decoded to float (KVStorageCodec::decode()), without a decoded copy. */
void attentionScores(const float* q, int group, int headDim, const schar* k, size_t kStride, int n,
                     float scale, float* scores, int ld);

/** attentionAccumulate with values stored in 8 bits (as the keys of the attentionScores above). */
void attentionAccumulate(const float* p, int group, int n, int ld, const schar* v, size_t vStride, int headDim,
                         float* acc, size_t accStride);

//! Head sizes the half-precision and 8-bit kernels take (they convert a row at a time on the stack).
static const int kMaxConvertedHeadDim = 512;

}}} // namespace cv::dnn::llm

#endif
