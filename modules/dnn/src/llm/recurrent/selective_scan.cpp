// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "selective_scan.hpp"
#include "selective_scan_kernels.hpp"
#include "../kernels/elementwise_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Rows of a head one thread task takes: a Granite-4 head (64 rows of 128 state floats, 32 KB)
// gives 4 tasks, so 48 heads make 192 tasks (enough to balance) of 8 KB of state each.
const int kRowsPerTask = 16;

// Below this many state updates (T x H x P x N) a call runs on the calling thread: waking the
// pool costs more than it saves.
const double kParallelWork = 65536;

// The body's closure captures one reference, so it fits std::function's inline storage and
// parallel_for_ does not allocate.
struct ScanContext
{
    const SelectiveScanInputs* in;
    float* state;
    float* y;
    size_t yTokenStride;
    int blocksPerHead;
};

void runTasks(const ScanContext& ctx, int begin, int end)
{
    const int P = ctx.in->headDim;
    for (int task = begin; task < end; task++)
    {
        const int head = task / ctx.blocksPerHead;
        const int rowBegin = (task % ctx.blocksPerHead) * kRowsPerTask;
        const int rowEnd = std::min(P, rowBegin + kRowsPerTask);
        selectiveScanRows(*ctx.in, head, rowBegin, rowEnd, ctx.state, ctx.y, ctx.yTokenStride);
    }
}

} // namespace

void selectiveScan(const SelectiveScanInputs& in, float* state, float* y, size_t yTokenStride)
{
    CV_CheckGE(in.tokens, 1, "SelectiveScan: a call takes at least one token");
    CV_CheckGE(in.heads, 1, "SelectiveScan: heads");
    CV_CheckGE(in.headDim, 1, "SelectiveScan: head dimension");
    CV_CheckGE(in.stateSize, 1, "SelectiveScan: state size");
    CV_CheckGE(in.groups, 1, "SelectiveScan: groups");
    CV_CheckEQ(in.heads % in.groups, 0, "SelectiveScan: the heads must divide into the groups");
    CV_Assert(in.x && in.dt && in.B && in.C && in.A && state && y &&
              "SelectiveScan: x, dt, B, C, A, the state and y are required");
    const size_t inner = (size_t)in.heads * in.headDim, groupRows = (size_t)in.groups * in.stateSize;
    if (in.tokens > 1)
    {
        CV_CheckGE(in.xTokenStride, inner, "SelectiveScan: x's token stride is shorter than H * P");
        CV_CheckGE(in.dtTokenStride, (size_t)in.heads, "SelectiveScan: dt's token stride is shorter than H");
        CV_CheckGE(in.bTokenStride, groupRows, "SelectiveScan: B's token stride is shorter than G * N");
        CV_CheckGE(in.cTokenStride, groupRows, "SelectiveScan: C's token stride is shorter than G * N");
        CV_CheckGE(yTokenStride, inner, "SelectiveScan: y's token stride is shorter than H * P");
    }

    ScanContext ctx;
    ctx.in = &in;
    ctx.state = state;
    ctx.y = y;
    ctx.yTokenStride = yTokenStride;
    ctx.blocksPerHead = (in.headDim + kRowsPerTask - 1) / kRowsPerTask;
    const int tasks = in.heads * ctx.blocksPerHead;
    const double work = (double)in.tokens * inner * in.stateSize;
    const int threads = std::max(1, getNumThreads());
    if (threads == 1 || tasks == 1 || work < kParallelWork)
    {
        runTasks(ctx, 0, tasks);
        return;
    }
    parallel_for_(Range(0, tasks), [&ctx](const Range& r) { runTasks(ctx, r.start, r.end); },
                  std::min(tasks, threads * 4));
}

namespace {

struct NormContext
{
    const float* y;
    const float* z;
    const float* weight;
    float* out;
    size_t yStride, zStride, outStride;
    int width, groups;
    float eps;
};

void normTokens(const NormContext& c, int begin, int end)
{
    const int W = c.width / c.groups;
    for (int t = begin; t < end; t++)
    {
        float* o = c.out + (size_t)t * c.outStride;
        // llama.cpp: ggml_swiglu_split(z, y) = silu(z) * y.
        siluRange(c.z + (size_t)t * c.zStride, c.y + (size_t)t * c.yStride, o, 0, c.width);
        for (int k = 0; k < c.groups; k++)
        {
            float* v = o + (size_t)k * W;
            const float* w = c.weight + (size_t)k * W;
            // ggml_rms_norm: float squares summed in double, the mean rounded to float.
            double sum = 0.0;
            for (int i = 0; i < W; i++)
                sum += (double)(v[i] * v[i]);
            const float mean = (float)(sum / W);
            const float scale = 1.0f / std::sqrt(mean + c.eps);
            for (int i = 0; i < W; i++)
                v[i] = v[i] * scale * w[i];
        }
    }
}

} // namespace

void gatedGroupRMSNorm(const float* y, size_t yTokenStride, const float* z, size_t zTokenStride,
                       const float* weight, int tokens, int width, int groups, float eps,
                       float* out, size_t outTokenStride)
{
    CV_CheckGE(tokens, 1, "GatedGroupRMSNorm: tokens");
    CV_CheckGE(width, 1, "GatedGroupRMSNorm: width");
    CV_CheckGE(groups, 1, "GatedGroupRMSNorm: groups");
    CV_CheckEQ(width % groups, 0, "GatedGroupRMSNorm: the width must divide into the groups");
    CV_CheckGE(eps, 0.f, "GatedGroupRMSNorm: eps");
    CV_Assert(y && z && weight && out && "GatedGroupRMSNorm: y, z, weight and out are required");
    CV_Assert((const float*)out != z && "GatedGroupRMSNorm: out must not be z");
    if (tokens > 1)
    {
        CV_CheckGE(yTokenStride, (size_t)width, "GatedGroupRMSNorm: y's token stride is shorter than the width");
        CV_CheckGE(zTokenStride, (size_t)width, "GatedGroupRMSNorm: z's token stride is shorter than the width");
        CV_CheckGE(outTokenStride, (size_t)width, "GatedGroupRMSNorm: out's token stride is shorter than the width");
    }
    if (out == y)
        CV_CheckEQ(outTokenStride, yTokenStride, "GatedGroupRMSNorm: in place, out and y take the same stride");

    NormContext c;
    c.y = y; c.z = z; c.weight = weight; c.out = out;
    c.yStride = yTokenStride; c.zStride = zTokenStride; c.outStride = outTokenStride;
    c.width = width; c.groups = groups; c.eps = eps;
    const int threads = std::max(1, getNumThreads());
    if (threads == 1 || tokens < 4 || (double)tokens * width < kParallelWork)
    {
        normTokens(c, 0, tokens);
        return;
    }
    parallel_for_(Range(0, tokens), [&c](const Range& r) { normTokens(c, r.start, r.end); },
                  std::min(tokens, threads * 4));
}

}}} // namespace cv::dnn::llm
