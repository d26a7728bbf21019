// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "rotary_embedding.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

RotaryEmbedding::RotaryEmbedding(int ropeDim, float base, bool neox, float freqScale,
                                 const std::vector<float>& freqFactors)
    : pairs_(ropeDim / 2), neox_(neox), configured_(true)
{
    CV_CheckGT(ropeDim, 0, "RotaryEmbedding: rotary dimension must be positive");
    CV_CheckEQ(ropeDim % 2, 0, "RotaryEmbedding: rotary dimension must be even");
    CV_CheckGT(base, 0.f, "RotaryEmbedding: frequency base must be positive");
    CV_CheckGT(freqScale, 0.f, "RotaryEmbedding: frequency scale must be positive");
    const int pairs = ropeDim / 2;
    CV_Check(freqFactors.size(), freqFactors.empty() || (int)freqFactors.size() >= pairs,
             "RotaryEmbedding: need one frequency factor per rotated pair");
    invFreq_.resize(pairs);
    for (int i = 0; i < pairs; i++)
    {
        double f = freqScale * std::pow((double)base, -2.0 * i / ropeDim);
        if (!freqFactors.empty())
        {
            CV_CheckGT(freqFactors[i], 0.f, "RotaryEmbedding: frequency factors must be positive");
            f /= freqFactors[i];
        }
        invFreq_[i] = (float)f;
    }
}

RotaryEmbedding::RotaryEmbedding(const Mat& cosTable, const Mat& sinTable, bool neox)
    : neox_(neox), configured_(true)
{
    CV_CheckTypeEQ(cosTable.type(), CV_32F, "RotaryEmbedding: the cos table must be float32");
    CV_CheckTypeEQ(sinTable.type(), CV_32F, "RotaryEmbedding: the sin table must be float32");
    CV_CheckEQ(cosTable.dims, 2, "RotaryEmbedding: the cos table must be 2-D (positions x pairs)");
    CV_Check(sinTable.rows, cosTable.size == sinTable.size, "RotaryEmbedding: cos and sin tables differ in shape");
    CV_CheckGT(cosTable.rows, 0, "RotaryEmbedding: empty angle tables");
    CV_CheckGT(cosTable.cols, 0, "RotaryEmbedding: empty angle tables");
    cosTable_ = cosTable.isContinuous() ? cosTable : cosTable.clone();
    sinTable_ = sinTable.isContinuous() ? sinTable : sinTable.clone();
    pairs_ = cosTable.cols;
}

RotaryEmbedding RotaryEmbedding::none()
{
    RotaryEmbedding r;
    r.configured_ = true;
    return r;
}

void RotaryEmbedding::angles(int position, float* cosSin) const
{
    if (cosTable_.empty())
    {
        for (int i = 0; i < pairs_; i++)
        {
            const double theta = (double)position * invFreq_[i];
            cosSin[2 * i] = (float)std::cos(theta);
            cosSin[2 * i + 1] = (float)std::sin(theta);
        }
        return;
    }
    // A rotation by -p is the transpose of the rotation by p.
    const int p = std::abs(position);
    if (position == INT_MIN || p >= cosTable_.rows)
        CV_Error(Error::StsOutOfRange, format("RotaryEmbedding: position %d is outside the rotary tables (%d positions)",
                                              position, cosTable_.rows));
    const float* c = cosTable_.ptr<float>(p);
    const float* s = sinTable_.ptr<float>(p);
    const float sign = position < 0 ? -1.f : 1.f;
    for (int i = 0; i < pairs_; i++)
    {
        cosSin[2 * i] = c[i];
        cosSin[2 * i + 1] = sign * s[i];
    }
}

void RotaryEmbedding::angles(const int* positions, int rows, float* cosSin) const
{
    for (int r = 0; r < rows; r++)
        angles(positions[r], cosSin + (size_t)r * 2 * pairs_);
}

void RotaryEmbedding::rotateRow(float* row, int heads, int headDim, const float* cosSin) const
{
    const int pairs = pairs_;
    const int half = neox_ ? pairs : 1;   // distance between the two members of a pair
    const int step = neox_ ? 1 : 2;       // distance between consecutive pairs
    for (int h = 0; h < heads; h++)
    {
        float* v = row + (size_t)h * headDim;
        for (int i = 0; i < pairs; i++)
        {
            float& a = v[i * step];
            float& b = v[i * step + half];
            const float c = cosSin[2 * i], s = cosSin[2 * i + 1];
            const float a0 = a, b0 = b;
            a = a0 * c - b0 * s;
            b = a0 * s + b0 * c;
        }
    }
}

void RotaryEmbedding::apply(float* x, int rows, size_t rowStride, int heads, int headDim, const int* positions) const
{
    AutoBuffer<float> cosSin((size_t)rows * 2 * pairs_);
    angles(positions, rows, cosSin.data());
    rotate(x, rows, rowStride, heads, headDim, cosSin.data());
}

void RotaryEmbedding::rotate(float* x, int rows, size_t rowStride, int heads, int headDim, const float* cosSin) const
{
    if (pairs_ == 0)
        return;
    CV_Assert(2 * pairs_ <= headDim);
    for (int r = 0; r < rows; r++)
        rotateRow(x + r * rowStride, heads, headDim, cosSin + (size_t)r * 2 * pairs_);
}

std::vector<float> yarnAngleFactors(int ropeDim, float base, float freqScale, const YarnSettings& yarn)
{
    CV_CheckGT(ropeDim, 0, "YaRN: rotary dimension must be positive");
    CV_CheckGT(base, 1.f, "YaRN: frequency base must be above 1");
    CV_CheckGT(freqScale, 0.f, "YaRN: frequency scale must be positive");
    const int pairs = ropeDim / 2;
    std::vector<float> factors(pairs, freqScale);
    if (yarn.extFactor == 0.f)
        return factors;
    CV_CheckGT(yarn.originalContext, 0, "YaRN: the original context length must be positive");
    CV_CheckGT(yarn.betaFast, 0.f, "YaRN: beta_fast must be positive");
    CV_CheckGT(yarn.betaSlow, 0.f, "YaRN: beta_slow must be positive");
    // ggml_rope_yarn_corr_dim, in float as ggml computes it
    const auto corrDim = [&](float beta) {
        return ropeDim * std::log(yarn.originalContext / (beta * 2 * (float)CV_PI)) / (2 * std::log(base));
    };
    const float low = std::max(0.f, std::floor(corrDim(yarn.betaFast)));
    const float high = std::min((float)(ropeDim - 1), std::ceil(corrDim(yarn.betaSlow)));
    for (int i = 0; i < pairs; i++)
    {
        const float y = (i - low) / std::max(0.001f, high - low);  // rope_yarn_ramp
        const float mix = (1 - std::min(1.f, std::max(0.f, y))) * yarn.extFactor;
        factors[i] = freqScale * (1 - mix) + mix;
    }
    return factors;
}

float yarnMagnitude(float contextFreqScale, float layerFreqScale, const YarnSettings& yarn,
                    float attnFactor, float logMultiplier)
{
    CV_CheckGT(contextFreqScale, 0.f, "YaRN: frequency scale must be positive");
    CV_CheckGT(layerFreqScale, 0.f, "YaRN: frequency scale must be positive");
    if (yarn.extFactor == 0.f)
        return attnFactor;
    const auto mscale = [](float s, float m) { return s <= 1.f ? 1.f : 0.1f * m * std::log(s) + 1.f; };
    const float factor = 1.f / contextFreqScale;
    float f = logMultiplier != 0.f ? mscale(factor, 1.f) / mscale(factor, logMultiplier) : mscale(factor, 1.f);
    f *= 1.f / (1.f + 0.1f * std::log(factor));  // llama_context cancels rope_yarn's correction ...
    f *= attnFactor;
    return f * (1.f + 0.1f * std::log(1.f / layerFreqScale));  // ... which ggml's rope_yarn applies
}

}}} // namespace cv::dnn::llm
