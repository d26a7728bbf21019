// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "vision_layers.hpp"
#include "../ggml/ggml_types.hpp"

#include <cstring>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class VisionPatchTokensLayerImpl CV_FINAL : public VisionPatchTokensLayer
{
public:
    explicit VisionPatchTokensLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        CV_Check(blobs.size(), blobs.size() == 1 || blobs.size() == 2,
                 "VisionPatchTokens: expects the position table and optionally the class embedding");
        CV_CheckEQ(blobs[0].dims, 2, "VisionPatchTokens: the position table must be tokens x D");
        if (blobs.size() == 2)
            CV_CheckEQ((int)blobs[1].total(), blobs[0].cols, "VisionPatchTokens: class embedding width != D");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "VisionPatchTokens: expects one input");
        const MatShape& s = inputs[0];
        CV_CheckEQ(s.size(), (size_t)4, "VisionPatchTokens: input must be 1 x D x rows x cols");
        CV_CheckEQ(s[0], 1, "VisionPatchTokens: one image at a time");
        CV_CheckEQ(s[1], blobs[0].cols, "VisionPatchTokens: input channels != position table width");
        const int tokens = s[2] * s[3] + (blobs.size() == 2 ? 1 : 0);
        CV_CheckEQ(tokens, blobs[0].rows, "VisionPatchTokens: tokens != position table rows");
        outputs.assign(1, MatShape{tokens, s[1]});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const int D = in.size[1], patches = in.size[2] * in.size[3];
        const Mat planes(D, patches, CV_32F, (void*)in.ptr<float>());
        Mat rows(patches, D, CV_32F, out.ptr<float>());
        transpose(planes, rows);
        if (blobs.size() == 2)
            blobs[1].reshape(1, 1).copyTo(out.row(patches));
        const Mat all(out.size[0], D, CV_32F, out.ptr<float>());
        add(all, blobs[0], all);
    }
};

Ptr<VisionPatchTokensLayer> VisionPatchTokensLayer::create(const LayerParams& params)
{
    return makePtr<VisionPatchTokensLayerImpl>(params);
}

class VisionRowsLayerImpl CV_FINAL : public VisionRowsLayer
{
public:
    explicit VisionRowsLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        begin_ = params.get<int>("begin");
        end_ = params.get<int>("end");
        CV_CheckLT(begin_, end_, "VisionRows: empty row range");
        CV_CheckGE(begin_, 0, "VisionRows: negative begin");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "VisionRows: expects one input");
        CV_CheckEQ(inputs[0].size(), (size_t)2, "VisionRows: input must be tokens x D");
        CV_CheckLE(end_, inputs[0][0], "VisionRows: row range beyond the input");
        outputs.assign(1, MatShape{end_ - begin_, inputs[0][1]});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        in.rowRange(begin_, end_).copyTo(Mat(end_ - begin_, in.size[1], CV_32F, out.ptr<float>()));
    }

private:
    int begin_, end_;
};

Ptr<VisionRowsLayer> VisionRowsLayer::create(const LayerParams& params)
{
    return makePtr<VisionRowsLayerImpl>(params);
}

// ggml's ggml_table_gelu_quick_f16: the F16 result for every F16 input.
static const std::vector<hfloat>& quickGeluF16Table()
{
    static const std::vector<hfloat> table = [] {
        std::vector<hfloat> t(65536);
        for (int i = 0; i < 65536; i++)
        {
            const float v = llm::halfBitsToFloat((uint16_t)i);
            t[i] = hfloat(v * (1.f / (1.f + std::exp(-1.702f * v))));
        }
        return t;
    }();
    return table;
}

// ggml_table_gelu_f16: the F16 result of the tanh GELU for every F16 input.
static const std::vector<hfloat>& geluTanhF16Table()
{
    static const std::vector<hfloat> table = [] {
        std::vector<hfloat> t(65536);
        for (int i = 0; i < 65536; i++)
        {
            const float v = llm::halfBitsToFloat((uint16_t)i);
            t[i] = hfloat(0.5f * v * (1.f + std::tanh(0.7978845608028654f * v * (1.f + 0.044715f * v * v))));
        }
        return t;
    }();
    return table;
}

// As ggml's F16 activations: x rounded to F16 indexes a table of F16 results (both
// conversions vectorized).
static void lookupF16(const float* x, float* y, int len, const std::vector<hfloat>& table)
{
    Mat half;
    Mat(1, len, CV_32F, (void*)x).convertTo(half, CV_16F);
    hfloat* h = half.ptr<hfloat>();
    for (int i = 0; i < len; i++)
    {
        ushort bits;
        std::memcpy(&bits, &h[i], sizeof(bits));
        h[i] = table[bits];
    }
    Mat dst(1, len, CV_32F, y);
    half.convertTo(dst, CV_32F);
}

// What the element-wise vision layers share: one float input, an output of its shape.
template <typename Base>
class ElementwiseVisionLayer : public Base
{
public:
    explicit ElementwiseVisionLayer(const LayerParams& params)
    {
        this->setParamsFrom(params);
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        outputs.assign(1, inputs[0]);
        return false;
    }
};

class VisionQuickGeluLayerImpl CV_FINAL : public ElementwiseVisionLayer<VisionQuickGeluLayer>
{
public:
    explicit VisionQuickGeluLayerImpl(const LayerParams& params) : ElementwiseVisionLayer(params)
    {
        exact_ = params.get<bool>("exact", false);
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const float* x = in.ptr<float>();
        float* y = out.ptr<float>();
        const size_t n = in.total();
        const bool exact = exact_;
        const std::vector<hfloat>& table = quickGeluF16Table();
        parallel_for_(Range(0, (int)((n + 4095) / 4096)), [&](const Range& r) {
            const size_t begin = (size_t)r.start * 4096, end = std::min(n, (size_t)r.end * 4096);
            if (exact)
            {
                for (size_t i = begin; i < end; i++)
                    y[i] = x[i] * (1.f / (1.f + std::exp(-1.702f * x[i])));
                return;
            }
            lookupF16(x + begin, y + begin, (int)(end - begin), table);
        });
    }

private:
    bool exact_;
};

Ptr<VisionQuickGeluLayer> VisionQuickGeluLayer::create(const LayerParams& params)
{
    return makePtr<VisionQuickGeluLayerImpl>(params);
}

// The same values as LLMElementwise's "gelu_tanh_f16" (ggml_vec_gelu_f32 with GGML_GELU_FP16),
// by a table lookup instead of a tanh per element.
class VisionGeluF16LayerImpl CV_FINAL : public ElementwiseVisionLayer<VisionGeluF16Layer>
{
public:
    explicit VisionGeluF16LayerImpl(const LayerParams& params) : ElementwiseVisionLayer(params) {}

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const float* x = in.ptr<float>();
        float* y = out.ptr<float>();
        const size_t n = in.total();
        const std::vector<hfloat>& table = geluTanhF16Table();
        parallel_for_(Range(0, (int)((n + 4095) / 4096)), [&](const Range& r) {
            const size_t begin = (size_t)r.start * 4096, end = std::min(n, (size_t)r.end * 4096);
            lookupF16(x + begin, y + begin, (int)(end - begin), table);
            for (size_t i = begin; i < end; i++)  // ggml saturates outside (-10, 10)
                if (x[i] <= -10.f)
                    y[i] = 0.f;
                else if (x[i] >= 10.f)
                    y[i] = x[i];
        });
    }
};

Ptr<VisionGeluF16Layer> VisionGeluF16Layer::create(const LayerParams& params)
{
    return makePtr<VisionGeluF16LayerImpl>(params);
}

class VisionRoundF16LayerImpl CV_FINAL : public ElementwiseVisionLayer<VisionRoundF16Layer>
{
public:
    explicit VisionRoundF16LayerImpl(const LayerParams& params) : ElementwiseVisionLayer(params) {}

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        const Mat in = inputs_arr.getMat(0);
        Mat& out = outputs_arr.getMatRef(0);
        const Mat src(1, (int)in.total(), CV_32F, (void*)in.ptr<float>());
        Mat dst(1, (int)in.total(), CV_32F, out.ptr<float>());
        Mat half;
        src.convertTo(half, CV_16F);
        half.convertTo(dst, CV_32F);
    }
};

Ptr<VisionRoundF16Layer> VisionRoundF16Layer::create(const LayerParams& params)
{
    return makePtr<VisionRoundF16LayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
