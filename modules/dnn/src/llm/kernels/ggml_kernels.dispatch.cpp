// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "ggml_kernels.hpp"
#include "amx_tiles.hpp"
#include "../ggml/ggml_blocks.hpp"

#include "ggml_kernels.simd.hpp"
#include "llm/kernels/ggml_kernels.simd_declarations.hpp"

namespace cv {
namespace dnn {
namespace llm {

static const WeightKernels* kernelTableOfThisCpu(int& count)
{
    CV_CPU_DISPATCH(weightKernelTableSimd, (count), CV_CPU_DISPATCH_MODES_ALL);
}

namespace {

struct WeightTypeTable
{
    WeightTypeTraits rows[GGML_TYPE_COUNT + 1];  // the last: any id beyond ggml's

    WeightTypeTable()
    {
        for (int id = 0; id <= GGML_TYPE_COUNT; id++)
        {
            const GGMLTypeTraits& s = ggmlTypeTraits((uint32_t)id);
            rows[id] = {(GGMLType)id, s.name, s.blockSize, s.typeSize, s.dequantizable, s.toFloat,
                        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                        s.blockSize == QK_K ? ACTIVATIONS_Q8_K : ACTIVATIONS_Q8_0};
        }
        int count = 0;
        const WeightKernels* kernels = kernelTableOfThisCpu(count);
        for (int i = 0; i < count; i++)
        {
            const WeightKernels& k = kernels[i];
            CV_Assert(0 <= k.type && k.type < GGML_TYPE_COUNT);
            WeightTypeTraits& row = rows[k.type];
            // Kernels come with a scalar decoder (the reference, and the float path's fallback),
            // the tile with the single-row dot, a layout with its kernel.
            CV_Assert(row.computable && (k.dotQ8 || !k.dotQ8Tile) && (k.dotQ8 || !k.dotQ8Interleaved8) &&
                      !k.dotQ8Interleaved8 == !k.interleaved && (k.dotQ8Interleaved8 || !k.dotQ8Interleaved16));
            if (k.decodeRow)
                row.decodeRow = k.decodeRow;
            row.dotQ8 = k.dotQ8;
            row.dotQ8Tile = k.dotQ8Tile;
            row.dotQ8Interleaved8 = k.dotQ8Interleaved8;
            row.dotF32 = k.dotF32;
            row.dotQ8Interleaved16 = k.dotQ8Interleaved16;
            // Only the AVX512_CLX build has tile kernels; they run only where granted.
            CV_Assert(k.dotQ8Interleaved16 || !k.dotQ8InterleavedAmx);
            row.dotQ8InterleavedAmx = k.dotQ8InterleavedAmx && amxTilesGranted() ? k.dotQ8InterleavedAmx : nullptr;
            row.interleaved = k.interleaved;
            row.gemmF32 = k.gemmF32;
        }
    }
};

} // namespace

const WeightTypeTraits& weightTypeTraits(GGMLType type)
{
    static const WeightTypeTable table;
    return table.rows[(unsigned)type < (unsigned)GGML_TYPE_COUNT ? (int)type : (int)GGML_TYPE_COUNT];
}

void quantizeRowQ8(const float* x, signed char* q, float* d, int* sums, int n)
{
    CV_Assert(n % 32 == 0);
    CV_CPU_DISPATCH(quantizeRowQ8Simd, (x, q, d, sums, n), CV_CPU_DISPATCH_MODES_ALL);
}

void quantizeActivationRow(ActivationQuantization kind, const float* x, signed char* q, float* d, int* sums, int n)
{
    CV_Assert(n % (kind == ACTIVATIONS_Q8_K ? QK_K : 32) == 0);
    CV_CPU_DISPATCH(quantizeActivationRowSimd, (kind, x, q, d, sums, n), CV_CPU_DISPATCH_MODES_ALL);
}

void activationsByBlockForTiles(const signed char* q, int rows, int blocks, signed char* byBlock)
{
    const size_t rowBytes = (size_t)blocks * 32;
    for (int r = 0; r < rows; r += 16)
    {
        const int m = std::min(16, rows - r);
        signed char* pass = byBlock + r * rowBytes;
        for (int k = 0; k < blocks; k++)
            for (int t = 0; t < m; t++)
                std::memcpy(pass + ((size_t)k * m + t) * 32, q + (r + t) * rowBytes + (size_t)k * 32, 32);
    }
}

float dotF32Fast(const float* a, const float* b, int n)
{
    CV_CPU_DISPATCH(dotF32Simd, (a, b, n), CV_CPU_DISPATCH_MODES_ALL);
}

}}} // namespace cv::dnn::llm
