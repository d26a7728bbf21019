// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "rotary_embedding.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

RotaryEmbedding::RotaryEmbedding(int ropeDim, float base, bool neox, float freqScale,
                                 const std::vector<float>& freqFactors)
    : neox_(neox)
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

void RotaryEmbedding::apply(float* x, int rows, size_t rowStride, int heads, int headDim, const int* positions) const
{
    const int pairs = (int)invFreq_.size();
    CV_Assert(2 * pairs <= headDim);
    const int half = neox_ ? pairs : 1;   // distance between the two members of a pair
    const int step = neox_ ? 1 : 2;       // distance between consecutive pairs
    AutoBuffer<float> cosSin(2 * pairs);
    for (int r = 0; r < rows; r++)
    {
        for (int i = 0; i < pairs; i++)
        {
            const double theta = (double)positions[r] * invFreq_[i];
            cosSin[2 * i] = (float)std::cos(theta);
            cosSin[2 * i + 1] = (float)std::sin(theta);
        }
        float* row = x + r * rowStride;
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
}

}}} // namespace cv::dnn::llm
