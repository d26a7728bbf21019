// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Helpers of the AVX2 weight kernels, included by ggml_kernels.simd.hpp inside its ISA
// namespace when CV_AVX2. Everything is static: a shared inline function compiled with AVX2
// flags could be the copy the linker keeps for baseline callers too.

// An fp16 scale (F16C comes with OpenCV's AVX2 level).
static inline float blockScale(uint16_t bits)
{
    return _cvtsh_ss(bits);
}

// 8 float16 (8 rows' scales of an interleaved group) to floats.
static inline __m256 halfs8(const uint16_t* p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}

// 8 unsigned bytes -> 8 floats.
static inline __m256 u8ToFloat(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
}

static inline float hsum256(__m256 s)
{
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_shuffle_ps(r, r, 1));
    return _mm_cvtss_f32(r);
}

// 32 bits of activations (4 int8) broadcast to all 8 lanes.
static inline __m256i broadcast4(const signed char* x)
{
    int v;
    std::memcpy(&v, x, sizeof(v));
    return _mm256_set1_epi32(v);
}

// 32 bits -> 32 bytes, byte i = 0x10 where bit i is set (the fifth bit of Q5 quants).
static inline __m256i fifthBits(uint32_t word)
{
    // Each 128-bit lane holds the word 4 times; byte i takes word byte i / 8 (lane-local index).
    const __m256i index = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);  // byte i: 1 << (i % 8)
    const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32((int)word), index);
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

static inline __m256i fifthBits(const uint8_t* p)
{
    uint32_t word;
    std::memcpy(&word, p, sizeof(word));
    return fifthBits(word);
}

// Sums of unsigned x signed byte products, 4 per 32-bit lane (on the interleaved layout: the
// 8 weight rows' lanes), as the integer dots of the weight kernels need them. With AVX-512 VNNI
// (the AVX512_CLX build) each step is one vpdpbusd into int32. Without it, maddubs adds pairs
// into int16: `Narrow` keeps accumulating in int16 and widens once in total() (the caller keeps
// every lane's sum within 32767: nibble weights), `Wide` widens at every step (products up to
// 127 x 127). Both compute the same exact integer sums, so results do not depend on the build.
template <bool Wide>
struct DotSum
{
    __m256i s = _mm256_setzero_si256();

    // s += per lane of 4 bytes: sum u[i] * x[i]
    inline void add(__m256i u, __m256i x)
    {
#if CV_AVX512_CLX
        s = _mm256_dpbusd_epi32(s, u, x);
#else
        const __m256i p = _mm256_maddubs_epi16(u, x);
        s = Wide ? _mm256_add_epi32(s, _mm256_madd_epi16(p, _mm256_set1_epi16(1))) : _mm256_add_epi16(s, p);
#endif
    }

    // s += sum (u[i] - v[i]) * x[i] (Q6_K's q - 32)
    inline void addDifference(__m256i u, __m256i v, __m256i x)
    {
#if CV_AVX512_CLX
        s = _mm256_sub_epi32(_mm256_dpbusd_epi32(s, u, x), _mm256_dpbusd_epi32(_mm256_setzero_si256(), v, x));
#else
        static_assert(!Wide, "the difference is summed in int16");
        s = _mm256_add_epi16(s, _mm256_sub_epi16(_mm256_maddubs_epi16(u, x), _mm256_maddubs_epi16(v, x)));
#endif
    }

    // The 32-bit sums.
    inline __m256i total() const
    {
#if CV_AVX512_CLX
        return s;
#else
        return Wide ? s : _mm256_madd_epi16(s, _mm256_set1_epi16(1));
#endif
    }
};
using NarrowDotSum = DotSum<false>;
using WideDotSum = DotSum<true>;

// Calls kernel(R, r) for activation rows r .. r + R - 1 over `rows` rows, R = 8 (AVX-512), 4, then the 1 to 3
// left (R a std::integral_constant: the kernels are templates on it). A kernel computes each
// activation row on its own, so no result depends on R.
template <typename Kernel>
static inline void byRowTiles(int rows, Kernel kernel, int widest = 8)
{
    int r = 0;
#if CV_AVX512_CLX
    // AVX-512's 32 vector registers hold 8 rows' accumulators: each weight chunk is loaded and
    // unpacked once for 8 activation rows (unless a kernel's `widest` tile is 4).
    if (widest >= 8)
        for (; r + 8 <= rows; r += 8)
            kernel(std::integral_constant<int, 8>(), r);
#else
    CV_UNUSED(widest);
#endif
    for (; r + 4 <= rows; r += 4)
        kernel(std::integral_constant<int, 4>(), r);
    switch (rows - r)
    {
    case 3: kernel(std::integral_constant<int, 3>(), r); break;
    case 2: kernel(std::integral_constant<int, 2>(), r); break;
    case 1: kernel(std::integral_constant<int, 1>(), r); break;
    default: break;
    }
}

// Tile kernels stay functions of their own: inlined into the row loop (4 copies, one per R),
// the 4-row ones lose registers and run 10-20% slower (Q5_K, Q6_K).
#define LLM_TILE_NOINLINE __attribute__((noinline))

// The DotQ8Interleaved8Fn of a kernel on the 8-row interleaved layout: Tile::run<R> computes a
// group against R activation rows (qStride apart), out[r * outStride + j].
template <typename Tile>
static void interleaved8Rows(const uchar* group, const signed char* q, const float* d, const int* sums, int blocks,
                             int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    byRowTiles(rows, [&](auto R, int r) {
        Tile::template run<decltype(R)::value>(group, q + r * qStride, qStride, d + (size_t)r * blocks,
                                               sums + (size_t)r * blocks, blocks, out + r * outStride, outStride);
    });
}

// Asks for the cache lines of the interleaved unit that lies prefetchDistance<Unit>() bytes after
// `unit`. The kernels stream their weights while they compute; with several tokens per call
// (batches) the hardware prefetcher alone leaves the loads waiting (Q4_0, 8 units = 1152 bytes
// ahead: 4 tokens +26%, 8 tokens +15%, one token +7%; 16 units as good, 4 worse). Past the end
// of the weights is harmless: a prefetch never faults.
//
// A unit's lines are asked for at once, so the nearest of them leads by the distance and the
// farthest by the distance plus the unit. The K-quant units (672-1680 bytes) lead by 2.7-3.7 KB
// at 2 KB; the 32-input types' units (144-272 bytes) need 4 KB for that lead: one token from
// memory (an EPYC Zen 5, Q4_0) ran 10% faster with it, while K-quant files ran 6% slower at 4 KB.
template <typename Unit>
constexpr size_t prefetchDistance()
{
    return sizeof(Unit) < 512 ? 4096 : 2048;
}

// Part `part` of `Parts` of the unit's lines. The AVX-512 K-quant kernels spread a pair's
// look-ahead over its sub-blocks: asked for at once, a pair's 38-54 lines filled the core's
// queue of misses and the prefetches stalled the kernel (16% of the Q6_K kernel's samples fell
// on them, Zen 5). Spread, from memory: Q6_K one row 7-13% faster, 8 rows 4-8%; Q5_K 3-7%;
// Q4_K (38 lines) the same. The one-group AVX2 kernels (19-27 lines) gained nothing.
//
// The prefetch is an asm statement: with _mm_prefetch in this loop, whose bounds are not
// constants, GCC 12 (-O3) left no prefetch at all in these kernels, as if it were dead code.
template <typename Unit, int Parts = 1>
static inline void prefetchUnitAt(const char* p, int part = 0)
{
    constexpr int lines = (int)((sizeof(Unit) + 63) / 64);
    for (int line = part * lines / Parts; line < (part + 1) * lines / Parts; line++)
        __asm__ volatile("prefetcht0 %0" : : "m"(p[64 * line]));
}

template <typename Unit, int Parts = 1>
static inline void prefetchAhead(const Unit* unit, int part = 0)
{
    prefetchUnitAt<Unit, Parts>(reinterpret_cast<const char*>(unit) + prefetchDistance<Unit>(), part);
}

// prefetchAhead for the two groups of a pair, read in step (a's units, then b's groupBytes
// later; aEnd = b's first unit) by the AVX-512 two-group kernels, whose pairs lie one after
// another. Near its end a's look-ahead would ask for b's first units, which were read (missing
// the cache) at the pair's start: it asks for the next pair's b instead, so that no pair starts
// with a miss (b's look-ahead runs on into the next pair's a). Q4_0, a batch of 4: +14%. The
// compute-bound AMX kernels keep prefetchAhead: with this, 16 tokens ran 12% slower.
template <typename Unit, int Parts = 1>
static inline void prefetchPairAhead(const Unit* a, const Unit* b, const void* aEnd, size_t groupBytes, int part = 0)
{
    const char* p = reinterpret_cast<const char*>(a) + prefetchDistance<Unit>();
    if (p >= static_cast<const char*>(aEnd))
        p += 2 * groupBytes;
    prefetchUnitAt<Unit, Parts>(p, part);
    prefetchAhead<Unit, Parts>(b, part);
}

#if CV_AVX512_CLX
// Two groups' 32 bytes (the same chunk of each) as the low and high halves of one vector.
static inline __m512i chunkPair(const void* a, const void* b)
{
    return _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i*)a)),
                              _mm256_loadu_si256((const __m256i*)b), 1);
}

// Two groups' 8 float16 (their rows' scales) as 16 floats.
static inline __m512 halfsPair(const uint16_t* a, const uint16_t* b)
{
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_zextsi128_si256(_mm_loadu_si128((const __m128i*)a)),
                                                   _mm_loadu_si128((const __m128i*)b), 1));
}

// Two groups' 8 unsigned bytes (their rows' K-quant scales or mins) as 16 floats.
static inline __m512 bytesPair(const uint8_t* a, const uint8_t* b)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i*)a),
                                                                      _mm_loadl_epi64((const __m128i*)b))));
}

// An int32 k with |k| < 2^22 added to kFloatMagicBits reads as the float kFloatMagic + k
// (1.5 * 2^23: k lands in the mantissa's low bits), so subtracting kFloatMagic converts it exactly.
static const int kFloatMagicBits = 0x4B400000;
static const float kFloatMagic = 12582912.f;

// 4 activation bytes broadcast to the 16 lanes.
static inline __m512i broadcast4x16(const signed char* x)
{
    int v;
    std::memcpy(&v, x, sizeof(v));
    return _mm512_set1_epi32(v);
}

// The DotQ8Interleaved16Fn of a kernel on two consecutive groups (AVX-512): Tile::run16<R>.
template <typename Tile>
static void interleaved16Rows(const uchar* group, size_t groupBytes, const signed char* q, const float* d,
                              const int* sums, int blocks, int rows, float* out, size_t outStride)
{
    const size_t qStride = (size_t)blocks * 32;
    byRowTiles(rows, [&](auto R, int r) {
        Tile::template run16<decltype(R)::value>(group, groupBytes, q + r * qStride, qStride, d + (size_t)r * blocks,
                                                 sums + (size_t)r * blocks, blocks, out + r * outStride, outStride);
    }, Tile::kWidestRowTile);
}
#endif
