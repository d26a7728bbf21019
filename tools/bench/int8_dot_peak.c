/* Peak rate of the instructions the batched quantized matmul is made of, on one core: 512-bit
   vpdpbusd (64 int8 multiply-adds each; the AVX-512 VNNI kernels), 256-bit vpdpbusd, and 512-bit
   float FMA, each in 12 independent chains (more than latency x throughput), so the rate is the
   execution units' throughput. doc/performance.md compares a batched step's vpdpbusd count with it.

     gcc -O2 -mavx512f -mavx512bw -mavx512vl -mavx512vnni tools/bench/int8_dot_peak.c -o /tmp/int8_dot_peak
     /tmp/int8_dot_peak

   Needs a CPU with AVX-512 VNNI. Prints `<instruction>: X G/s` lines, the best of 3 runs. */

#include <immintrin.h>
#include <stdio.h>
#include <time.h>

enum { kChains = 12 };
static const long kIterations = 100000000L;

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The empty asm statements keep the operands in registers and unknown to the compiler, so the
   chains are neither folded nor hoisted. */
static double dpbusd512(int* sink)
{
    __m512i acc[kChains], w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
    for (int k = 0; k < kChains; k++)
        acc[k] = _mm512_set1_epi32(k);
    const double t0 = seconds();
    for (long i = 0; i < kIterations; i++)
    {
#pragma GCC unroll 12  /* the accumulators stay in registers only when unrolled */
        for (int k = 0; k < kChains; k++)
            acc[k] = _mm512_dpbusd_epi32(acc[k], w, x);
        __asm__ volatile("" : "+v"(w), "+v"(x));
    }
    const double t = seconds() - t0;
    for (int k = 0; k < kChains; k++)
        *sink += _mm512_reduce_add_epi32(acc[k]);
    return (double)kChains * kIterations / t;
}

static double dpbusd256(int* sink)
{
    __m256i acc[kChains], w = _mm256_set1_epi8(3), x = _mm256_set1_epi8(5);
    for (int k = 0; k < kChains; k++)
        acc[k] = _mm256_set1_epi32(k);
    const double t0 = seconds();
    for (long i = 0; i < kIterations; i++)
    {
#pragma GCC unroll 12  /* the accumulators stay in registers only when unrolled */
        for (int k = 0; k < kChains; k++)
            acc[k] = _mm256_dpbusd_epi32(acc[k], w, x);
        __asm__ volatile("" : "+v"(w), "+v"(x));
    }
    const double t = seconds() - t0;
    for (int k = 0; k < kChains; k++)
        *sink += _mm256_extract_epi32(acc[k], 0);
    return (double)kChains * kIterations / t;
}

static double fma512(int* sink)
{
    __m512 acc[kChains], m = _mm512_set1_ps(1.0001f);
    for (int k = 0; k < kChains; k++)
        acc[k] = _mm512_set1_ps((float)k);
    const double t0 = seconds();
    for (long i = 0; i < kIterations; i++)
    {
#pragma GCC unroll 12  /* the accumulators stay in registers only when unrolled */
        for (int k = 0; k < kChains; k++)
            acc[k] = _mm512_fmadd_ps(acc[k], m, m);
        __asm__ volatile("" : "+v"(m));
    }
    const double t = seconds() - t0;
    for (int k = 0; k < kChains; k++)
        *sink += _mm512_reduce_add_ps(acc[k]) > 0;
    return (double)kChains * kIterations / t;
}

int main(void)
{
    int sink = 0;
    double best[3] = {0, 0, 0};
    for (int run = 0; run < 3; run++)
    {
        const double r[3] = {dpbusd512(&sink), dpbusd256(&sink), fma512(&sink)};
        for (int i = 0; i < 3; i++)
            best[i] = r[i] > best[i] ? r[i] : best[i];
    }
    printf("vpdpbusd zmm: %.3f G/s (%.1f G int8 multiply-adds/s)\n", best[0] / 1e9, 64 * best[0] / 1e9);
    printf("vpdpbusd ymm: %.3f G/s (%.1f G int8 multiply-adds/s)\n", best[1] / 1e9, 32 * best[1] / 1e9);
    printf("vfmadd zmm: %.3f G/s\n", best[2] / 1e9);
    return sink == 12345 ? 1 : 0;
}
