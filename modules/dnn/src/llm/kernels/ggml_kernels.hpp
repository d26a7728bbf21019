// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The weight-type table: one row per ggml type with everything the CPU code knows about it (as
// ggml-cpu's type_traits_cpu), read by the matmul and embedding layers instead of lists of
// types. A row joins the type's storage facts (ggml/ggml_types.cpp) with the kernels of the ISA
// picked at startup: ggml_kernels.simd.hpp (with its *.inl.hpp family files) is compiled for
// the baseline and for AVX2 (patch 0003), each build lists its kernels in one table
// (weightKernelTableSimd; the baseline's is empty: the float path), and the dispatcher takes
// the table of the best ISA the CPU has once (OPENCV_CPU_DISABLE=AVX2 forces the baseline).
// doc/adding_a_weight_type.md: how to add a type.

#ifndef OPENCV_DNN_SRC_LLM_KERNELS_GGML_KERNELS_HPP
#define OPENCV_DNN_SRC_LLM_KERNELS_GGML_KERNELS_HPP

#include "../ggml/ggml_types.hpp"
#include "interleaved_weights.hpp"

namespace cv {
namespace dnn {
namespace llm {

/* The 8-bit path llama.cpp uses for GEMV: activations quantized to blocks of 32 int8 (one scale
   per block, as Q8_0: quantizeRowQ8) and integer dot products with the weight blocks. It rounds
   the activations (relative error ~1/254 per element), so results differ slightly from the
   float path. An activation row of n inputs is q (n int8), d (n / 32 scales) and sums (n / 32
   block sums of q); `rows` rows lie at strides n, n / 32, n / 32. */

//! Dot product of one weight row (`blocks` blocks of 32 inputs) with one activation row.
typedef float (*DotQ8Fn)(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks);
/** Multi-row tile: wRows (1 or 2) weight rows (wStride bytes apart) with `rows` activation rows,
    weight blocks unpacked once for all rows: out[i * outStride + r] for weight row i and
    activation row r, each bit-identical to DotQ8Fn's. */
typedef void (*DotQ8TileFn)(const uchar* w, size_t wStride, int wRows, const signed char* q, const float* d,
                            const int* sums, int blocks, int rows, float* out, size_t outStride);
/** One group of 8 interleaved weight rows (interleaved_weights.hpp) with `rows` activation rows:
    out[r * outStride + j] for row j of the group. Each result depends only on its weight row and
    activation row, never on `rows`. */
typedef void (*DotQ8Interleaved8Fn)(const uchar* group, const signed char* q, const float* d, const int* sums,
                                    int blocks, int rows, float* out, size_t outStride);

/** Two consecutive groups of the interleaved layout (the second groupBytes after the first), 16
    weight rows, with `rows` activation rows: out[r * outStride + j], j < 16, each bit-identical
    to DotQ8Interleaved8Fn's result for its group (the same per-lane operations on vectors twice
    as wide: AVX-512 builds, where they double the throughput of batched steps). */
typedef void (*DotQ8Interleaved16Fn)(const uchar* group, size_t groupBytes, const signed char* q, const float* d,
                                     const int* sums, int blocks, int rows, float* out, size_t outStride);

/** DotQ8Interleaved16Fn's results for `pairs` consecutive pairs of groups (2 * pairs groups from
    `group` on, groupBytes apart): out[r * outStride + 16 p + j] for pair p, on AMX tiles (set up
    and handed back once per call) where `rows` is enough to gain from them. q: the activation rows
    as for DotQ8Interleaved16Fn (read below that count); qByBlock: the same bytes as
    activationsByBlockForTiles lays them out (read from it on). */
typedef void (*DotQ8InterleavedAmxFn)(const uchar* group, size_t groupBytes, int pairs, const signed char* q,
                                      const signed char* qByBlock, const float* d, const int* sums, int blocks,
                                      int rows, float* out, size_t outStride);

/** The activation rows (rows x blocks blocks of 32 int8) regrouped for the tile kernels, whose
    tile loads stall on rows 2 KB or more apart: in passes of up to 16 rows (a tile's), the pass
    from row r with m rows at byBlock + 32 r blocks, block k's m x 32 bytes at 32 m k within it.
    Done once per matmul (not per thread stripe): the same size as q. */
void activationsByBlockForTiles(const signed char* q, int rows, int blocks, signed char* byBlock);

/** Dot product of one weight row (n elements) with float activations, decoding on the fly: the
    float path of types whose elements are floats already (F16, BF16), without a decoded copy. */
typedef float (*DotF32Fn)(const uchar* w, const float* x, int n);

/** Many tokens times the transpose of `rows` weight rows (n elements each, `wStride` bytes apart),
    decoding on the fly: y[t * yStride + r] = sum_k x[t * xStride + k] * w(r, k). The prompt path
    of types whose elements are floats already (F16, BF16), without a decoded copy. `roundTokens`:
    the tokens may be rounded to the weights' precision where the CPU has a faster dot for it
    (BF16's vdpbf16ps, as llama.cpp computes), as `integer_dot` lets quantized types round them
    to 8 bits; false keeps the exact float sums. */
typedef void (*GemmF32Fn)(const uchar* w, size_t wStride, int rows, const float* x, size_t xStride, int tokens, int n,
                          float* y, size_t yStride, bool roundTokens);

/** How the activation rows are rounded to 8 bits for the integer dots (quantizeActivationRow). All
    three give the layout above (q, a scale and a sum of q per 32 inputs), so every kernel takes
    any of them; they differ in where the rounding falls, and the result moves with it:
    llama.cpp's choice of next token can hang on it (a random-weight TinyLlama-shaped Q4_K_M
    file: 32-input blocks left llama.cpp's own quantized run by 0.017 in probability on average,
    its Q8_K by 0.005). */
enum ActivationQuantization
{
    //! quantizeRowQ8: blocks of 32, float scales max|x| / 127 (ONNX Runtime's int8 MatMulNBits)
    ACTIVATIONS_Q8_FLOAT_SCALES = 0,
    //! llama.cpp's Q8_0 (its activations for Q4_0, Q5_0, Q8_0 and, with a sum, Q4_1 / Q5_1):
    //! blocks of 32, q = round(x * (127 / max|x|)), the scale max|x| / 127 rounded to fp16
    ACTIVATIONS_Q8_0,
    //! llama.cpp's Q8_K (its activations for Q2_K .. Q6_K): one float scale per 256 inputs,
    //! q = round(x * (-127 / m)) capped at 127 with m the first element of largest |x|, with its
    //! sign; scale 1 / (-127 / m) (repeated for the 8 blocks of 32)
    ACTIVATIONS_Q8_K
};

//! What one ISA's kernel build has for a type (nullptr: nothing of that kind).
struct WeightKernels
{
    GGMLType type;
    RowDecoder decodeRow;                   //!< vector decoder, same bits as the scalar one
    DotQ8Fn dotQ8;                          //!< the integer path
    DotQ8TileFn dotQ8Tile;                  //!< multi-row tile
    DotQ8Interleaved8Fn dotQ8Interleaved8;  //!< kernel on the 8-row interleaved layout ...
    const InterleavedLayout* interleaved;   //!< ... and that layout (its packer)
    DotF32Fn dotF32;                        //!< fused float-path dot (decode + dot in one pass)
    DotQ8Interleaved16Fn dotQ8Interleaved16;  //!< two groups of the layout at once (optional)
    DotQ8InterleavedAmxFn dotQ8InterleavedAmx;  //!< the same on AMX tiles (optional; amx_tiles.hpp)
    GemmF32Fn gemmF32;                      //!< fused float GEMM of prompts (decode + GEMM in one pass)
};

//! A weight type as the layers see it on this CPU.
struct WeightTypeTraits
{
    GGMLType type;
    const char* name;       //!< nullptr: not a ggml type id
    int blockSize;          //!< elements per block
    int blockBytes;         //!< bytes per block
    bool computable;        //!< the layers accept it: it has a decoder
    RowDecoder decodeRow;   //!< the fastest decoder here (same results as dequantizeRow)
    DotQ8Fn dotQ8;          //!< nullptr: the float path only
    DotQ8TileFn dotQ8Tile;  //!< nullptr: no multi-row tile (callers loop dotQ8)
    DotQ8Interleaved8Fn dotQ8Interleaved8;  //!< set with `interleaved`, or both nullptr
    const InterleavedLayout* interleaved;
    DotF32Fn dotF32;        //!< nullptr: the float path decodes a row, then dotF32Fast
    DotQ8Interleaved16Fn dotQ8Interleaved16;  //!< nullptr: groups one by one
    //! nullptr: no AMX tiles here; else dotQ8Interleaved16's results for many pairs of groups,
    //! on AMX tiles from a type's threshold of activation rows on (one tile multiply per 32
    //! inputs serves up to 16 rows), with dotQ8Interleaved16 below it
    DotQ8InterleavedAmxFn dotQ8InterleavedAmx;
    GemmF32Fn gemmF32;      //!< nullptr: prompts decode tiles of rows for Eigen's GEMM
    //! the activations llama.cpp dots this type with (its vec_dot_type): Q8_K for the K-quants
    ActivationQuantization llamaActivations;

    bool integerDot() const { return dotQ8 != nullptr; }
};

//! This CPU's row for a type (any id: unknown ones are not computable).
const WeightTypeTraits& weightTypeTraits(GGMLType type);

//! x (n floats, n a multiple of 32) -> q (n int8), d (n/32 scales), sums (n/32 block sums):
//! q = round(x / d), d = max|x| / 127 per block of 32, the same bits on every ISA.
void quantizeRowQ8(const float* x, signed char* q, float* d, int* sums, int n);

/** x (n floats) -> q, d, sums as quantizeRowQ8 lays them out, rounded as `kind` says (n a
    multiple of 256 for ACTIVATIONS_Q8_K), the same bits on every ISA. */
void quantizeActivationRow(ActivationQuantization kind, const float* x, signed char* q, float* d, int* sums, int n);

//! sum a[i] * b[i] with the widest vectors the CPU has (dotF32 of vector_ops.hpp).
float dotF32Fast(const float* a, const float* b, int n);

}}} // namespace cv::dnn::llm

#endif
