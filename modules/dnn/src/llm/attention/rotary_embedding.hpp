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
    give Llama-3 style scaling (GGUF's rope_freqs.weight) and, divided by yarnAngleFactors(),
    YaRN's angles.

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

    /** The angles of `rows` positions, for rotate(): ropeDim() floats per position (cos and sin
        of each pair). Computing them is most of apply()'s work; rows of queries and keys at the
        same positions share them. */
    void angles(const int* positions, int rows, float* cosSin) const;
    //! apply() with the angles of each row's position from angles().
    void rotate(float* x, int rows, size_t rowStride, int heads, int headDim, const float* cosSin) const;

private:
    void angles(int position, float* cosSin) const;
    void rotateRow(float* row, int heads, int headDim, const float* cosSin) const;

    std::vector<float> invFreq_;  // per pair, scaling folded in (formula mode)
    Mat cosTable_, sinTable_;     // positions x pairs (table mode)
    int pairs_ = 0;
    bool neox_ = false;
    bool configured_ = false;
};

/** YaRN's settings as llama.cpp passes them to ggml_rope_ext (ext_factor, n_ctx_orig, beta_fast,
    beta_slow). extFactor 0: no YaRN (the pairs' angles are all scaled by freqScale). */
struct YarnSettings
{
    float extFactor = 0.f;    //!< llama.cpp: 1 when rope.scaling.type is yarn, else 0
    int originalContext = 0;  //!< rope.scaling.original_context_length (default: context_length)
    float betaFast = 32.f;    //!< llama.cpp's defaults; mistral3 reads rope.scaling.yarn_beta_fast
    float betaSlow = 1.f;     //!< ... and yarn_beta_slow
};

/** YaRN (ggml's rope_yarn, ggml_rope_yarn_corr_dims): per rotated pair i, the factor its
    unscaled angle pos * base^(-2i/ropeDim) is multiplied by: freqScale (interpolation) for the
    low-frequency pairs, 1 (extrapolation) for the high-frequency ones, a linear ramp between,
    i.e. freqScale * (1 - r_i) + r_i with r_i = extFactor * (1 - clamp((i - low) / max(0.001,
    high - low), 0, 1)), where low = max(0, floor(d(betaFast))), high = min(ropeDim - 1,
    ceil(d(betaSlow))) and d(b) = ropeDim * ln(originalContext / (2 pi b)) / (2 ln base): the pair
    that turns b times over the original context. With extFactor 0 every factor is freqScale.
    Dividing a pair's frequency factor by its value gives RotaryEmbedding YaRN's angles (with
    freqScale 1 there). Computed in float as ggml does. */
CV_EXPORTS std::vector<float> yarnAngleFactors(int ropeDim, float base, float freqScale, const YarnSettings& yarn);

/** The factor llama.cpp multiplies cos and sin by (ggml_rope_ext's attn_factor times rope_yarn's
    own magnitude correction) in a layer rotating with frequency scale `layerFreqScale`, for
    rope.scaling.attn_factor `attnFactor` and rope.scaling.yarn_log_multiplier `logMultiplier`
    (0: none): without YaRN attnFactor; with it, llama_context's yarn_attn_factor
    attnFactor * mscale(F, 1) / mscale(F, logMultiplier) / (1 + 0.1 ln F) (the division by
    mscale(F, logMultiplier) only when logMultiplier != 0; mscale(s, m) = 1 + 0.1 m ln s for
    s > 1, else 1; F = 1 / contextFreqScale, the model's scaling factor), times ggml's rope_yarn
    correction 1 + 0.1 ln(1 / layerFreqScale). Layers rotating at the model's frequency scale
    get attnFactor * mscale(F, 1) / mscale(F, logMultiplier); layers that keep scale 1 (gemma3's
    and olmo2's sliding-window layers) get attnFactor / (1 + 0.1 ln F), as in llama.cpp. */
CV_EXPORTS float yarnMagnitude(float contextFreqScale, float layerFreqScale, const YarnSettings& yarn,
                               float attnFactor, float logMultiplier);

}}} // namespace cv::dnn::llm

#endif
