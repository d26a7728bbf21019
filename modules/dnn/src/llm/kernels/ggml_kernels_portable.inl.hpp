// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Portable integer dot products of every weight type with 8-bit activation blocks: the
// baseline's integer path (CPUs without AVX2, or OPENCV_CPU_DISABLE=AVX2). Per block of 32
// activations the integer sum is exact, then one float multiply-add, as in the vector kernels
// (only the float summation order differs from theirs). Included by ggml_kernels.simd.hpp
// inside its ISA namespace when not CV_AVX2.

static inline float halfToFloat(uint16_t bits)
{
    return halfBitsToFloat(bits);
}

// sum q x over a block of 32: q from 16 bytes of nibbles (element k low, k + 16 high) and bit k
// of `fifth` as 16 (Q5_0 / Q5_1; 0 for the 4-bit types).
static inline int dotNibbles(const uint8_t* qs, const signed char* x, uint32_t fifth)
{
    int s = 0;
    for (int k = 0; k < 16; k++)
    {
        const int lo = (qs[k] & 0x0F) | (((fifth >> k) & 1) << 4);
        const int hi = (qs[k] >> 4) | (((fifth >> (k + 16)) & 1) << 4);
        s += lo * x[k] + hi * x[k + 16];
    }
    return s;
}

static inline uint32_t fifthBitsWord(const uint8_t* qh)
{
    uint32_t word;
    std::memcpy(&word, qh, 4);
    return word;
}

static float dotQ8Q4_0(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const block_q4_0* b = reinterpret_cast<const block_q4_0*>(w);
    float acc = 0.f;
    for (int i = 0; i < blocks; i++, q += 32)
        acc += halfToFloat(b[i].d) * d[i] * (float)(dotNibbles(b[i].qs, q, 0) - 8 * sums[i]);
    return acc;
}

static float dotQ8Q4_1(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const block_q4_1* b = reinterpret_cast<const block_q4_1*>(w);
    float acc = 0.f;
    for (int i = 0; i < blocks; i++, q += 32)
        acc += halfToFloat(b[i].d) * d[i] * (float)dotNibbles(b[i].qs, q, 0) + halfToFloat(b[i].m) * d[i] * sums[i];
    return acc;
}

static float dotQ8Q5_0(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const block_q5_0* b = reinterpret_cast<const block_q5_0*>(w);
    float acc = 0.f;
    for (int i = 0; i < blocks; i++, q += 32)
        acc += halfToFloat(b[i].d) * d[i] * (float)(dotNibbles(b[i].qs, q, fifthBitsWord(b[i].qh)) - 16 * sums[i]);
    return acc;
}

static float dotQ8Q5_1(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const block_q5_1* b = reinterpret_cast<const block_q5_1*>(w);
    float acc = 0.f;
    for (int i = 0; i < blocks; i++, q += 32)
        acc += halfToFloat(b[i].d) * d[i] * (float)dotNibbles(b[i].qs, q, fifthBitsWord(b[i].qh)) +
               halfToFloat(b[i].m) * d[i] * sums[i];
    return acc;
}

static float dotQ8Q8_0(const uchar* w, const signed char* q, const float* d, const int*, int blocks)
{
    const block_q8_0* b = reinterpret_cast<const block_q8_0*>(w);
    float acc = 0.f;
    for (int i = 0; i < blocks; i++, q += 32)
    {
        int s = 0;
        for (int k = 0; k < 32; k++)
            s += b[i].qs[k] * q[k];
        acc += halfToFloat(b[i].d) * d[i] * (float)s;
    }
    return acc;
}

// Q4_K / Q5_K: sub-block j (activation block 8 sb + j) is d sc_j sum q x - dmin m_j sum x; its
// 32 quants are the low (j even) or high (j odd) nibbles of qs[32 (j / 2) ..], Q5_K adding
// bit j of qh[l] as 16.
template <typename Block>
static float dotQ8Q4KQ5K(const uchar* w, const signed char* q, const float* d, const int* sums, int blocks)
{
    const bool q5 = std::is_same<Block, block_q5_K>::value;
    const Block* b = reinterpret_cast<const Block*>(w);
    float acc = 0.f;
    for (int sb = 0; sb < blocks / 8; sb++, b++)
    {
        const float dw = halfToFloat(b->d), dmin = halfToFloat(b->dmin);
        for (int j = 0; j < 8; j++, q += 32, d++, sums++)
        {
            const uint8_t* qs = b->qs + 32 * (j / 2);
            const uint8_t* qh = q5 ? reinterpret_cast<const block_q5_K*>(b)->qh : nullptr;
            int s = 0;
            for (int l = 0; l < 32; l++)
            {
                const int v = (j & 1) ? qs[l] >> 4 : qs[l] & 0x0F;
                s += (v + (qh && ((qh[l] >> j) & 1) ? 16 : 0)) * q[l];
            }
            int sc, m;
            scaleMinK4(j, b->scales, sc, m);
            acc += dw * sc * d[0] * (float)s - dmin * m * d[0] * sums[0];
        }
    }
    return acc;
}

// Q6_K: activation block k of a half h (128 inputs) is quarter k: low nibbles of ql[0..32)
// (k = 0) or ql[32..64) (k = 1), high nibbles of them (k = 2, 3), with bits 2k, 2k + 1 of qh;
// its two groups of 16 have scales sc[2k], sc[2k + 1]. sum d sc (q - 32) x per group.
static float dotQ8Q6_K(const uchar* w, const signed char* q, const float* d, const int*, int blocks)
{
    const block_q6_K* b = reinterpret_cast<const block_q6_K*>(w);
    float acc = 0.f;
    for (int sb = 0; sb < blocks / 8; sb++, b++)
    {
        const float dw = halfToFloat(b->d);
        for (int h = 0; h < 2; h++)
        {
            const uint8_t* ql = b->ql + 64 * h;
            const uint8_t* qh = b->qh + 32 * h;
            const int8_t* sc = b->scales + 8 * h;
            for (int k = 0; k < 4; k++, q += 32, d++)
                for (int group = 0; group < 2; group++)
                {
                    int s = 0;
                    for (int l = 16 * group; l < 16 * group + 16; l++)
                    {
                        const uint8_t low = ql[l + 32 * (k & 1)];
                        const int v = ((k < 2 ? low & 0x0F : low >> 4) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
                        s += v * q[l];
                    }
                    acc += dw * sc[2 * k + group] * d[0] * (float)s;
                }
        }
    }
    return acc;
}

static void quantizeRowQ8Portable(const float* x, signed char* q, float* d, int* sums, int n)
{
    for (int b = 0; b < n / 32; b++, x += 32, q += 32)
    {
        float maxAbs = 0.f;
        for (int k = 0; k < 32; k++)
            maxAbs = std::max(maxAbs, std::fabs(x[k]));
        // As the AVX2 code: the same scale, reciprocal and round-to-nearest-even, so the same bits.
        const float scale = maxAbs / 127.f;
        const float inv = scale != 0.f ? 1.f / scale : 0.f;
        int sum = 0;
        for (int k = 0; k < 32; k++)
        {
            q[k] = (signed char)cvRound(x[k] * inv);
            sum += q[k];
        }
        d[b] = scale;
        sums[b] = sum;
    }
}
