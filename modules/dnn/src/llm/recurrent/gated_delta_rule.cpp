// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "gated_delta_rule.hpp"
#include "gated_delta_rule_kernels.hpp"
#include "../kernels/float_gemm.hpp"

#include <opencv2/core/hal/hal.hpp>

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Below this much work (tokens x heads x state elements) one thread does it all: a decode step of
// 4 heads of 128 x 128 takes ~2 us, the cost of waking the other threads.
const double kParallelMinWork = 1 << 17;

// Floats of one stripe's chunk scratch (see chunkHead).
size_t chunkScratchFloats(int C, int keyDim, int valueDim)
{
    return (size_t)C * C * 3 + (size_t)C * (keyDim + valueDim) + (size_t)C * valueDim + (size_t)C * keyDim + 3 * C;
}

struct RunContext
{
    const GatedDeltaRuleInputs* in;
    const GatedDeltaRuleOutputRows* out;
    float* state;
    int keyHeads, valueHeads, keyDim, valueDim, chunkTokens, stripes;
    float scale;
    float* scratch;  // chunked: chunkScratchFloats() per stripe
    double* decay;   // chunked: C per stripe
};

void recurrentHead(const RunContext& ctx, int h)
{
    const GatedDeltaRuleInputs& in = *ctx.in;
    const int kh = h % ctx.keyHeads;
    DeltaRuleHeadTokens head;
    head.q = in.q.data + kh * in.q.headStride; head.qStride = in.q.tokenStride;
    head.k = in.k.data + kh * in.k.headStride; head.kStride = in.k.tokenStride;
    head.v = in.v.data + h * in.v.headStride; head.vStride = in.v.tokenStride;
    head.g = in.g.data + h * in.g.headStride; head.gStride = in.g.tokenStride;
    head.beta = in.beta.data + h * in.beta.headStride; head.betaStride = in.beta.tokenStride;
    head.o = ctx.out->data + h * ctx.out->headStride; head.oStride = ctx.out->tokenStride;
    head.tokens = in.tokens;
    head.keyDim = ctx.keyDim;
    head.valueDim = ctx.valueDim;
    head.scale = ctx.scale;
    deltaRuleRecurrentHead(head, ctx.state + (size_t)h * ctx.valueDim * ctx.keyDim);
}

/* One value head, chunk by chunk. Within a chunk of n tokens with cumulative log decays G_r
   (gamma_r = exp(G_r)) and starting state M (rows j = columns of S), the deltas
   u_r = beta_r (v_r - exp(g_r) M_{r-1} k_r) satisfy

       u_r + sum_{s<r} beta_r exp(G_r - G_s) (k_r.k_s) u_s = beta_r v_r - beta_r gamma_r M k_r,

   so with A[r][s] = beta_r exp(G_r - G_s) k_r.k_s (s < r), (I + A) [W | U~] = [beta gamma k | beta v]
   (one forward substitution) and U = U~ - W M^T. Then

       o_r = scale (gamma_r M q_r + sum_{s<=r} exp(G_r - G_s) (q_r.k_s) u_s)
       M'  = gamma_last M + sum_s exp(G_last - G_s) u_s k_s^T.

   The products with M are GEMMs (Eigen's, kernels/float_gemm.hpp); the triangular parts are
   addWeightedRows. Decays are differences of cumulative sums kept in double, so a long run of
   strong decay loses no precision to cancellation. */
void chunkHead(const RunContext& ctx, int h, float* scratch, double* G)
{
    const GatedDeltaRuleInputs& in = *ctx.in;
    const GatedDeltaRuleOutputRows& out = *ctx.out;
    const int kh = h % ctx.keyHeads, Dk = ctx.keyDim, Dv = ctx.valueDim, C = ctx.chunkTokens;
    const size_t ldx = (size_t)Dk + Dv;
    float* M = ctx.state + (size_t)h * Dv * Dk;

    float* KK = scratch;          // C x C: k_r.k_s, then -A
    float* QK = KK + C * C;       // C x C: q_r.k_s, then the output's weights
    float* E = QK + C * C;        // C x C: exp(G_r - G_s)
    float* X = E + C * C;         // C x (Dk + Dv): [W | U~], then [W | U]
    float* Y = X + C * ldx;       // C x Dv: W M^T
    float* Ke = Y + C * Dv;       // C x Dk: exp(G_last - G_s) k_s
    float* gamma = Ke + C * Dk;   // C: exp(G_r)
    float* lastDecay = gamma + C; // C: exp(G_last - G_s)
    float* diff = lastDecay + C;  // C: a row of G_r - G_s

    for (int t0 = 0; t0 < in.tokens; t0 += C)
    {
        const int n = std::min(C, in.tokens - t0);
        const float* q = in.q.data + t0 * in.q.tokenStride + kh * in.q.headStride;
        const float* k = in.k.data + t0 * in.k.tokenStride + kh * in.k.headStride;
        const float* v = in.v.data + t0 * in.v.tokenStride + h * in.v.headStride;
        const float* g = in.g.data + t0 * in.g.tokenStride + h * in.g.headStride;
        const float* beta = in.beta.data + t0 * in.beta.tokenStride + h * in.beta.headStride;
        float* o = out.data + t0 * out.tokenStride + h * out.headStride;
        const size_t qs = in.q.tokenStride, ks = in.k.tokenStride, vs = in.v.tokenStride, os = out.tokenStride;

        double sum = 0.;
        for (int r = 0; r < n; r++)
            G[r] = sum += (double)g[r * in.g.tokenStride];
        for (int r = 0; r < n; r++)
        {
            for (int s = 0; s <= r; s++)
                diff[s] = (float)(G[r] - G[s]);
            hal::exp32f(diff, E + r * C, r + 1);
            gamma[r] = std::exp((float)G[r]);
            lastDecay[r] = std::exp((float)(G[n - 1] - G[r]));
        }

        gemmTokensByWeightRows(k, ks, n, Dk, k, ks, n, KK, C);
        gemmTokensByWeightRows(q, qs, n, Dk, k, ks, n, QK, C);
        for (int r = 0; r < n; r++)
        {
            const float b = beta[r * in.beta.tokenStride];
            const float* e = E + r * C;
            float* a = KK + r * C;
            float* p = QK + r * C;
            for (int s = 0; s < r; s++)
                a[s] = -b * e[s] * a[s];
            for (int s = 0; s <= r; s++)
                p[s] = ctx.scale * e[s] * p[s];
            float* x = X + r * ldx;
            const float* kr = k + r * ks;
            const float* vr = v + r * vs;
            const float bg = b * gamma[r];
            for (int i = 0; i < Dk; i++)
                x[i] = bg * kr[i];
            for (int j = 0; j < Dv; j++)
                x[Dk + j] = b * vr[j];
            const float ld = lastDecay[r];
            float* ke = Ke + r * Dk;
            for (int i = 0; i < Dk; i++)
                ke[i] = ld * kr[i];
        }
        addWeightedRows(KK, C, 1, X, ldx, n, n, kTermsBelowRow, (int)ldx, X, ldx);

        // U = U~ - W M^T; o = scale gamma q M^T + P U (P already holds scale and the decays).
        gemmTokensByWeightRows(X, ldx, n, Dk, M, Dk, Dv, Y, Dv);
        for (int r = 0; r < n; r++)
        {
            float* u = X + r * ldx + Dk;
            const float* y = Y + r * Dv;
            for (int j = 0; j < Dv; j++)
                u[j] -= y[j];
        }
        gemmTokensByWeightRows(q, qs, n, Dk, M, Dk, Dv, o, os);
        for (int r = 0; r < n; r++)
        {
            const float f = ctx.scale * gamma[r];
            float* orow = o + r * os;
            for (int j = 0; j < Dv; j++)
                orow[j] *= f;
        }
        addWeightedRows(QK, C, 1, X + Dk, ldx, n, n, kTermsThroughRow, Dv, o, os);

        // M = gamma_last M + U^T Ke: row j of M gets sum_s U[s][j] Ke_s.
        const float last = gamma[n - 1];
        for (size_t i = 0; i < (size_t)Dv * Dk; i++)
            M[i] *= last;
        addWeightedRows(X + Dk, 1, ldx, Ke, Dk, Dv, n, kAllTerms, Dk, M, Dk);
    }
}

} // namespace

GatedDeltaRule::GatedDeltaRule(int keyHeads, int valueHeads, int keyDim, int valueDim, int chunkTokens)
    : keyHeads_(keyHeads), valueHeads_(valueHeads), keyDim_(keyDim), valueDim_(valueDim), chunkTokens_(chunkTokens)
{
    CV_CheckGE(chunkTokens, 1, "GatedDeltaRule: chunk length");
    CV_CheckLE(chunkTokens, (int)kMaxChunkTokens, "GatedDeltaRule: chunk length");
    CV_CheckGT(keyHeads, 0, "GatedDeltaRule: key heads");
    CV_CheckGT(valueHeads, 0, "GatedDeltaRule: value heads");
    CV_CheckEQ(valueHeads % keyHeads, 0, "GatedDeltaRule: value heads must be a multiple of key heads");
    CV_CheckGT(keyDim, 0, "GatedDeltaRule: key head size");
    CV_CheckGT(valueDim, 0, "GatedDeltaRule: value head size");
}

void GatedDeltaRule::check(const GatedDeltaRuleInputs& in, const float* state, const GatedDeltaRuleOutputRows& out) const
{
    CV_CheckGE(in.tokens, 0, "GatedDeltaRule: token count");
    if (!state)
        CV_Error(Error::StsNullPtr, "GatedDeltaRule: the state is null");
    if (in.tokens == 0)
        return;
    if (!in.q.data || !in.k.data || !in.v.data || !in.g.data || !in.beta.data)
        CV_Error(Error::StsNullPtr, "GatedDeltaRule: an input (q, k, v, g or beta) is null");
    if (!out.data)
        CV_Error(Error::StsNullPtr, "GatedDeltaRule: the output is null");
}

int GatedDeltaRule::stripes(int tokens) const
{
    const double work = (double)tokens * valueHeads_ * keyDim_ * valueDim_;
    if (work < kParallelMinWork)
        return 1;
    return std::max(1, std::min(valueHeads_, getNumThreads()));
}

void GatedDeltaRule::run(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out)
{
    if (in.tokens >= kChunkedMinTokens)
        runChunked(in, state, out);
    else
        runRecurrent(in, state, out);
}

void GatedDeltaRule::runRecurrent(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out)
{
    check(in, state, out);
    if (in.tokens == 0)
        return;
    RunContext ctx = { &in, &out, state, keyHeads_, valueHeads_, keyDim_, valueDim_, chunkTokens_,
                       stripes(in.tokens), 1.f / std::sqrt((float)keyDim_), nullptr, nullptr };
    if (ctx.stripes == 1)
    {
        for (int h = 0; h < valueHeads_; h++)
            recurrentHead(ctx, h);
        return;
    }
    parallel_for_(Range(0, ctx.stripes), [&ctx](const Range& r) {
        for (int s = r.start; s < r.end; s++)
            for (int h = s * ctx.valueHeads / ctx.stripes; h < (s + 1) * ctx.valueHeads / ctx.stripes; h++)
                recurrentHead(ctx, h);
    }, ctx.stripes);
}

void GatedDeltaRule::runChunked(const GatedDeltaRuleInputs& in, float* state, const GatedDeltaRuleOutputRows& out)
{
    check(in, state, out);
    if (in.tokens == 0)
        return;
    RunContext ctx = { &in, &out, state, keyHeads_, valueHeads_, keyDim_, valueDim_, chunkTokens_,
                       stripes(in.tokens), 1.f / std::sqrt((float)keyDim_), nullptr, nullptr };
    const int C = chunkTokens_;
    const size_t perStripe = chunkScratchFloats(C, keyDim_, valueDim_);
    if (chunkScratch_.size() < perStripe * ctx.stripes)
        chunkScratch_.resize(perStripe * ctx.stripes);
    if (decayScratch_.size() < (size_t)C * ctx.stripes)
        decayScratch_.resize((size_t)C * ctx.stripes);
    ctx.scratch = chunkScratch_.data();
    ctx.decay = decayScratch_.data();
    if (ctx.stripes == 1)
    {
        for (int h = 0; h < valueHeads_; h++)
            chunkHead(ctx, h, ctx.scratch, ctx.decay);
        return;
    }
    parallel_for_(Range(0, ctx.stripes), [&ctx](const Range& r) {
        const size_t perStripe = chunkScratchFloats(ctx.chunkTokens, ctx.keyDim, ctx.valueDim);
        for (int s = r.start; s < r.end; s++)
            for (int h = s * ctx.valueHeads / ctx.stripes; h < (s + 1) * ctx.valueHeads / ctx.stripes; h++)
                chunkHead(ctx, h, ctx.scratch + s * perStripe, ctx.decay + (size_t)s * ctx.chunkTokens);
    }, ctx.stripes);
}

}}} // namespace cv::dnn::llm
