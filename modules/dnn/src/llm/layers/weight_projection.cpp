// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "weight_projection.hpp"
#include "../common/mapped_file.hpp"
#include "../kernels/float_gemm.hpp"

namespace cv {
namespace dnn {
namespace llm {

ActivationRows ActivationRows::subset(int first, int count, int in) const
{
    const int blocks = in / 32;
    ActivationRows a;
    a.q = q + (size_t)first * in;
    a.qByBlock = qByBlock + (size_t)first * in;
    a.d = d + (size_t)first * blocks;
    a.sums = sums + (size_t)first * blocks;
    a.rows = count;
    return a;
}

void QuantizedActivations::reserveRows(int rows, int in)
{
    const size_t blocks = (size_t)rows * (in / 32);
    if (q.size() < (size_t)rows * in)
        q.resize((size_t)rows * in);
    if (d.size() < blocks)
    {
        d.resize(blocks);
        sums.resize(blocks);
    }
}

void QuantizedActivations::quantize(const float* x, int first, int rows, int in, ActivationQuantization kind)
{
    reserveRows(first + rows, in);
    const int blocks = in / 32;
    for (int t = first; t < first + rows; t++)
        quantizeActivationRow(kind, x + (size_t)(t - first) * in, &q[(size_t)t * in], &d[(size_t)t * blocks],
                              &sums[(size_t)t * blocks], in);
}

void QuantizedActivations::regroup(int first, int count, int in)
{
    if (qByBlock.size() < q.size())
        qByBlock.resize(q.size());
    if (count > 1)
        activationsByBlockForTiles(&q[(size_t)first * in], count, in / 32, &qByBlock[(size_t)first * in]);
    else if (count == 1)
        std::copy(q.begin() + (size_t)first * in, q.begin() + (size_t)(first + 1) * in, qByBlock.begin() + (size_t)first * in);
}

ActivationRows QuantizedActivations::view(int rows, bool regrouped) const
{
    ActivationRows a;
    a.q = q.data();
    a.qByBlock = regrouped ? qByBlock.data() : q.data();
    a.d = d.data();
    a.sums = sums.data();
    a.rows = rows;
    return a;
}

WeightProjection::WeightProjection(GGMLType type, const Mat& rows, const Mat& bias, int in, bool integerDotAllowed)
    : type_(type), traits_(&weightTypeTraits(type)), in_(in), out_(rows.rows), weights_(rows), bias_(bias)
{
    integerDot_ = integerDotAllowed && traits_->integerDot();
    roundTokens_ = integerDotAllowed;
    CV_CheckGT(out_, 0, "weight projection: no output rows");
    CV_Check(type, traits_->computable, "weight projection: unsupported ggml type");
    CV_CheckEQ((size_t)weights_.cols, ggmlRowBytes(type, in_), "weight projection: weight row size mismatch");
    CV_Assert(weights_.isContinuous() || weights_.rows == 1 || weights_.step[0] == (size_t)weights_.cols);
    if (!bias_.empty())
    {
        CV_CheckTypeEQ(bias_.type(), CV_32F, "weight projection: bias must be float32");
        CV_CheckEQ(bias_.total(), (size_t)out_, "weight projection: bias length != output rows");
    }
    // The integer kernel runs fastest on groups of 8 rows interleaved (repacked once, here); the
    // last out % 8 rows keep the row kernels.
    if (integerDot_ && traits_->interleaved)
    {
        groups_ = out_ / 8;
        if (groups_ > 0)
        {
            interleaved_ = interleaveRows8(*traits_->interleaved, weights_.ptr(), weights_.step[0], groups_, in_);
            // Only the last rows are read from the file's pages from now on.
            releaseMappedPages(weights_, weights_.ptr(), (size_t)8 * groups_ * weights_.step[0]);
        }
    }
}

void WeightProjection::computeIntegerUnits(const ActivationRows& a, float* y, int begin, int end) const
{
    const int blocks = in_ / 32;
    const WeightTypeTraits& traits = *traits_;
    const size_t groupBytes = interleaved_.empty() ? 0 : interleaved_.step[0];
    const int units = groupUnits(), perUnit = groupsPerUnit();
    const int groupEnd = std::min(std::min(end, units) * perUnit, groups_);
    int g = std::min(begin, units) * perUnit;
    // Where the CPU has AMX tiles, one call takes the stripe's pairs of groups.
    if (traits.dotQ8InterleavedAmx && groupEnd - g >= 2)
    {
        const int pairs = (groupEnd - g) / 2;
        traits.dotQ8InterleavedAmx(interleaved_.ptr<uchar>(g), groupBytes, pairs, a.q, a.qByBlock, a.d, a.sums, blocks,
                                   a.rows, y + 8 * g, out_);
        addBias(a, y, 8 * g, 16 * pairs);
        g += 2 * pairs;
    }
    while (g < groupEnd)
    {
        // Two groups at once where the CPU has a kernel for it (same results).
        const int pair = traits.dotQ8Interleaved16 && g + 1 < groupEnd ? 2 : 1;
        if (pair == 2)
            traits.dotQ8Interleaved16(interleaved_.ptr<uchar>(g), groupBytes, a.q, a.d, a.sums, blocks, a.rows, y + 8 * g,
                                      out_);
        else
            traits.dotQ8Interleaved8(interleaved_.ptr<uchar>(g), a.q, a.d, a.sums, blocks, a.rows, y + 8 * g, out_);
        addBias(a, y, 8 * g, 8 * pair);
        g += pair;
    }
    rowGemv(a, y, 8 * groups_ + std::max(begin - units, 0), 8 * groups_ + std::max(end - units, 0));
}

void WeightProjection::addBias(const ActivationRows& a, float* y, int first, int count) const
{
    if (bias_.empty())
        return;
    const float* bias = bias_.ptr<float>();
    for (int t = 0; t < a.rows; t++)
        for (int j = first; j < first + count; j++)
            y[(size_t)t * out_ + j] += bias[j];
}

// Output rows [begin, end) with the row kernels (two weight rows at a time where the type has a
// multi-row tile, which shares the activation loads).
void WeightProjection::rowGemv(const ActivationRows& a, float* y, int begin, int end) const
{
    const int blocks = in_ / 32;
    const WeightTypeTraits& traits = *traits_;
    const float* bias = bias_.empty() ? nullptr : bias_.ptr<float>();
    const size_t rowBytes = weights_.cols;
    const int step = traits.dotQ8Tile ? 2 : 1;
    constexpr int kRowsPerCall = 8;  // activation rows per weight-row kernel call
    for (int n = begin; n < end; n += step)
    {
        const int wRows = std::min(step, end - n);
        const uchar* src = weights_.ptr() + (size_t)n * rowBytes;
        float dots[2][kRowsPerCall];
        for (int t0 = 0; t0 < a.rows; t0 += kRowsPerCall)
        {
            const int count = std::min(kRowsPerCall, a.rows - t0);
            const signed char* q = a.q + (size_t)t0 * in_;
            const float* d = a.d + (size_t)t0 * blocks;
            const int* sums = a.sums + (size_t)t0 * blocks;
            if (traits.dotQ8Tile)
                traits.dotQ8Tile(src, rowBytes, wRows, q, d, sums, blocks, count, dots[0], kRowsPerCall);
            else
                for (int k = 0; k < count; k++)
                    dots[0][k] = traits.dotQ8(src, q + (size_t)k * in_, d + (size_t)k * blocks, sums + (size_t)k * blocks,
                                              blocks);
            for (int i = 0; i < wRows; i++)
            {
                const float b = bias ? bias[n + i] : 0.f;
                for (int t = 0; t < count; t++)
                    y[(size_t)(t0 + t) * out_ + n + i] = dots[i][t] + b;
            }
        }
    }
}

void WeightProjection::computeFloatRows(const float* x, int rows, float* y, int begin, int end, float* rowBuffer) const
{
    const size_t rowBytes = weights_.cols;
    const float* bias = bias_.empty() ? nullptr : bias_.ptr<float>();
    for (int n = begin; n < end; n++)
    {
        const uchar* src = weights_.ptr() + (size_t)n * rowBytes;
        const float b = bias ? bias[n] : 0.f;
        if (traits_->dotF32)  // F16 / BF16: decoded on the fly
        {
            for (int t = 0; t < rows; t++)
                y[(size_t)t * out_ + n] = traits_->dotF32(src, x + (size_t)t * in_, in_) + b;
            continue;
        }
        const float* wr;
        if (type_ == GGML_F32)
            wr = reinterpret_cast<const float*>(src);
        else
        {
            traits_->decodeRow(src, rowBuffer, in_);
            wr = rowBuffer;
        }
        for (int t = 0; t < rows; t++)
            y[(size_t)t * out_ + n] = dotF32Fast(wr, x + (size_t)t * in_, in_) + b;
    }
}

int WeightProjection::gemmTileRows() const
{
    // The fused GEMM's register tiles take 4 rows (a remainder of 3 slowed a 23-row tile by 20%);
    // a decoded tile holds up to 512 KB of floats.
    return traits_->gemmF32 ? 64 : std::max(8, std::min(64, (1 << 17) / in_));
}

void WeightProjection::gemmTile(const float* x, int rows, float* y, int n0, int n1, float* tileBuffer) const
{
    const size_t rowBytes = weights_.cols;
    const uchar* src = weights_.ptr() + (size_t)n0 * rowBytes;
    if (traits_->gemmF32)
        traits_->gemmF32(src, rowBytes, n1 - n0, x, in_, rows, in_, y + n0, out_, roundTokens_);
    else
    {
        const float* rowsOfTile = reinterpret_cast<const float*>(src);
        if (type_ != GGML_F32)
        {
            for (int n = n0; n < n1; n++)
                traits_->decodeRow(src + (size_t)(n - n0) * rowBytes, tileBuffer + (size_t)(n - n0) * in_, in_);
            rowsOfTile = tileBuffer;
        }
        gemmTokensByWeightRows(x, in_, rows, in_, rowsOfTile, in_, n1 - n0, y + n0, out_);
    }
    if (!bias_.empty())
    {
        const float* bias = bias_.ptr<float>();
        for (int t = 0; t < rows; t++)
            for (int n = n0; n < n1; n++)
                y[(size_t)t * out_ + n] += bias[n];
    }
}

}}} // namespace cv::dnn::llm
