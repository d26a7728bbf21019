// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_ATTENTION_ROTARY_EMBEDDING_HPP
#define OPENCV_DNN_SRC_LLM_ATTENTION_ROTARY_EMBEDDING_HPP

#include <opencv2/core.hpp>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Rotary position embedding (RoPE) of the first `ropeDim` dimensions of each head.

    Pair i (0 <= i < ropeDim/2) turns by pos * freqScale * base^(-2i/ropeDim) / freqFactors[i].
    NORM style pairs adjacent dimensions (2i, 2i+1), as Llama GGUFs need (their converter
    permuted the Q/K rows); NEOX style pairs i and i + ropeDim/2 (Qwen2, Phi-3, Gemma, and
    Hugging Face checkpoints). freqScale = 1/factor gives linear scaling; frequency factors
    give Llama-3 style scaling (GGUF's rope_freqs.weight).

    Instead of a frequency formula, the angles may come as tables cos[p][i] and sin[p][i] of
    positions p (ONNX Runtime's cos_cache / sin_cache): those are used exactly as stored, and
    a position outside the tables is an error. A negative position turns backwards (as the
    KV cache's context shift needs). An embedding of rotary dimension 0 rotates nothing (a
    model without RoPE); a default-constructed one is "not configured".
*/
class RotaryEmbedding
{
public:
    RotaryEmbedding() {}
    RotaryEmbedding(int ropeDim, float base, bool neox, float freqScale = 1.f,
                    const std::vector<float>& freqFactors = std::vector<float>());
    //! From angle tables: cosTable and sinTable are positions x (ropeDim/2) float32.
    RotaryEmbedding(const Mat& cosTable, const Mat& sinTable, bool neox);
    //! The identity (no rotary embedding).
    static RotaryEmbedding none();

    bool isConfigured() const { return configured_; }
    int ropeDim() const { return pairs_ * 2; }
    //! Positions must be below this (INT_MAX without tables).
    int positionLimit() const { return cosTable_.empty() ? INT_MAX : cosTable_.rows; }

    /** Rotates rows of heads in place: `rows` rows of `heads` heads of `headDim` floats each
        (row r at x + r * rowStride, at position positions[r]). */
    void apply(float* x, int rows, size_t rowStride, int heads, int headDim, const int* positions) const;

private:
    void angles(int position, float* cosSin) const;

    std::vector<float> invFreq_;  // per pair, scaling folded in (formula mode)
    Mat cosTable_, sinTable_;     // positions x pairs (table mode)
    int pairs_ = 0;
    bool neox_ = false;
    bool configured_ = false;
};

}}} // namespace cv::dnn::llm

#endif
