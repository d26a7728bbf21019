// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// RMSNorm: ONNX RMSNormalization (opset 23) and ONNX Runtime's SimplifiedLayerNormalization;
// with `group_size`, each group of that many elements normalized on its own (Qwen3's per-head
// Q/K norm on a tokens x (heads * head_dim) projection).

#include "../../precomp.hpp"
#include "llm_layers.hpp"

#include <opencv2/core/hal/intrin.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

// Sum of squares of a row; several accumulators hide the FMA latency.
float sumOfSquares(const float* x, int n)
{
    int j = 0;
    float sum = 0.f;
#if (CV_SIMD || CV_SIMD_SCALABLE)
    const int lanes = VTraits<v_float32>::vlanes();
    v_float32 s0 = vx_setzero_f32(), s1 = vx_setzero_f32();
    for (; j + 2 * lanes <= n; j += 2 * lanes)
    {
        v_float32 a = vx_load(x + j), b = vx_load(x + j + lanes);
        s0 = v_fma(a, a, s0);
        s1 = v_fma(b, b, s1);
    }
    for (; j + lanes <= n; j += lanes)
    {
        v_float32 a = vx_load(x + j);
        s0 = v_fma(a, a, s0);
    }
    sum = v_reduce_sum(v_add(s0, s1));
#endif
    for (; j < n; j++)
        sum += x[j] * x[j];
    return sum;
}

// y[j] = x[j] * invRms * scale[j % scaleSize] for one row.
void scaleRow(const float* x, const float* scale, int scaleSize, float invRms, float* y, int n)
{
    for (int start = 0; start < n; start += scaleSize)
    {
        const int len = std::min(scaleSize, n - start);
        const float* xs = x + start;
        float* ys = y + start;
        int j = 0;
#if (CV_SIMD || CV_SIMD_SCALABLE)
        const int lanes = VTraits<v_float32>::vlanes();
        const v_float32 vinv = vx_setall_f32(invRms);
        for (; j + lanes <= len; j += lanes)
            v_store(ys + j, v_mul(v_mul(vx_load(xs + j), vinv), vx_load(scale + j)));
#endif
        for (; j < len; j++)
            ys[j] = xs[j] * invRms * scale[j];
    }
}

} // namespace

class RMSNormLayerImpl CV_FINAL : public RMSNormLayer
{
public:
    explicit RMSNormLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        epsilon = params.get<float>("epsilon", 1e-5f);
        axis = params.get<int>("axis", -1);
        groupSize = params.get<int>("group_size", 0);
        CV_CheckGE(epsilon, 0.f, "RMSNorm: epsilon must not be negative");
        CV_CheckGE(groupSize, 0, "RMSNorm: group_size must not be negative");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int requiredOutputs,
                         std::vector<MatShape>& outputs, std::vector<MatShape>& internals) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size() + blobs.size(), (size_t)2,
                   "RMSNorm: expects an input and a scale (as a constant or a second input)");
        const MatShape& x = inputs[0];
        CV_CheckGE((int)x.size(), 1, "RMSNorm: the input must have at least one dimension");
        const int a = normalizedAxis((int)x.size());
        const size_t normSize = total(x, a);
        const size_t scaleSize = blobs.empty() ? total(inputs[1]) : blobs[0].total();
        CV_CheckGT(normSize, (size_t)0, "RMSNorm: the normalized axes are empty");
        if (groupSize > 0)
            checkGroups(normSize, scaleSize);
        else
            checkScaleSize(x.data(), (int)x.size(), a, scaleSize);

        outputs.assign(1, x);
        if (requiredOutputs > 1)
        {
            CV_CheckEQ(groupSize, 0, "RMSNorm: the inv_std_var output is not available with group_size");
            MatShape invStd = x;
            for (size_t i = a; i < invStd.size(); i++)
                invStd[i] = 1;
            outputs.push_back(invStd);
        }
        internals.clear();
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr,
                 OutputArrayOfArrays /*internals_arr*/) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());

        // Mats by index, not getMatVector(): a forward allocates nothing on the heap.
        const Mat x = inputs_arr.getMat(0);
        const Mat scaleMat = blobs.empty() ? inputs_arr.getMat(1) : blobs[0];
        CV_CheckTypeEQ(x.type(), CV_32F, "RMSNorm: only float32 input is supported");
        CV_CheckTypeEQ(scaleMat.type(), CV_32F, "RMSNorm: only float32 scale is supported");
        CV_Assert(x.isContinuous() && scaleMat.isContinuous());

        const int a = normalizedAxis(x.dims);
        int normSize = 1;
        for (int i = a; i < x.dims; i++)
            normSize *= x.size[i];
        const int scaleSize = (int)scaleMat.total();
        if (groupSize > 0)
        {
            checkGroups(normSize, scaleSize);
            normSize = groupSize;  // each group is a row of its own
        }
        else
        {
            checkScaleSize(x.size.p, x.dims, a, scaleSize);
        }

        struct Rows
        {
            const float* src;
            const float* scale;
            float* dst;
            float* invStdOut;
            int normSize, scaleSize;
            float eps;
        } rows{x.ptr<float>(), scaleMat.ptr<float>(), outputs_arr.getMatRef(0).ptr<float>(),
               outputs_arr.total() > 1 ? outputs_arr.getMatRef(1).ptr<float>() : nullptr,
               normSize, scaleSize, epsilon};

        // Rows are independent; small rows are batched into stripes of ~64K elements. The
        // lambda captures one reference, small enough for std::function not to allocate.
        const double nstripes = std::max(1.0, (double)x.total() / (1 << 16));
        parallel_for_(Range(0, (int)(x.total() / normSize)), [&rows](const Range& r) {
            for (int row = r.start; row < r.end; row++)
            {
                const float* xr = rows.src + (size_t)row * rows.normSize;
                const float invRms = 1.f / std::sqrt(sumOfSquares(xr, rows.normSize) / rows.normSize + rows.eps);
                scaleRow(xr, rows.scale, rows.scaleSize, invRms, rows.dst + (size_t)row * rows.normSize, rows.normSize);
                if (rows.invStdOut)
                    rows.invStdOut[row] = invRms;
            }
        }, nstripes);
    }

private:
    int normalizedAxis(int dims) const
    {
        CV_CheckGE(axis, -dims, "RMSNorm: axis is out of range for the input's rank");
        CV_CheckLT(axis, dims, "RMSNorm: axis is out of range for the input's rank");
        return axis < 0 ? axis + dims : axis;
    }

    // The scale must cover the normalized shape or a suffix of it (broadcast over the rest),
    // or be a single value.
    static void checkScaleSize(const int* dims, int ndims, int a, size_t scaleSize)
    {
        if (scaleSize == 1)
            return;
        size_t suffix = 1;
        for (int i = ndims - 1; i >= a; i--)
        {
            suffix *= dims[i];
            if (suffix == scaleSize)
                return;
        }
        const MatShape normalized(dims + a, dims + ndims);
        CV_Error(Error::StsBadSize, cv::format(
            "RMSNorm: scale has %zu elements but the normalized shape %s (axis %d) needs %zu",
            scaleSize, toString(normalized).c_str(), a, (size_t)total(normalized)));
    }

    // Groups must tile the normalized axes; the scale covers one group (or is a single value).
    void checkGroups(size_t normSize, size_t scaleSize) const
    {
        if (normSize % groupSize != 0)
            CV_Error(Error::StsBadSize, cv::format("RMSNorm: group_size %d does not divide the normalized size %zu",
                                                   groupSize, normSize));
        if (scaleSize != 1 && scaleSize != (size_t)groupSize)
            CV_Error(Error::StsBadSize, cv::format("RMSNorm: scale has %zu elements but group_size is %d",
                                                   scaleSize, groupSize));
    }

    float epsilon;
    int axis;
    int groupSize;  // 0: the whole normalized shape is one group
};

Ptr<RMSNormLayer> RMSNormLayer::create(const LayerParams& params)
{
    return makePtr<RMSNormLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
