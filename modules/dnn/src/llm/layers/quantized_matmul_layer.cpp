// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// y = x W^T (+ b) on weights kept in their ggml block format.
//
// Up to `gemv_max_rows` tokens (decoding, also of a batch of sequences), each thread takes a
// range of output rows and dots each weight row with every token. With an integer kernel for
// the weight type, the activations are quantized to 8 bits once and each weight block is dotted
// with them in integers, as llama.cpp does; otherwise the weight row is decoded to floats once
// for all tokens. Either way each token's result is computed on its own, the same whatever the
// other rows are: a sequence gets the same logits alone or in a batch.
// Beyond (prefill), tiles of weight rows are decoded to float once and multiplied with all
// tokens by dnn's fastGemm.

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
#include "../ggml/ggml_types.hpp"
#include "../kernels/ggml_kernels.hpp"
#include "../../layers/cpu_kernels/fast_gemm.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMMatMulLayerImpl CV_FINAL : public LLMMatMulLayer
{
public:
    explicit LLMMatMulLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        type_ = (llm::GGMLType)params.get<int>("ggml_type");
        in_ = params.get<int>("in_features");
        out_ = params.get<int>("out_features");
        gemvMaxRows_ = params.get<int>("gemv_max_rows", 32);
        integerDot_ = params.get<bool>("integer_dot", true) && llm::hasIntegerDot(type_);
        CV_CheckGT(in_, 0, "LLMMatMul: in_features must be positive");
        CV_CheckGT(out_, 0, "LLMMatMul: out_features must be positive");
        CV_Check(type_, llm::ggmlTypeTraits(type_).dequantizable, "LLMMatMul: unsupported ggml type");
        CV_Check(blobs.size(), blobs.size() == 1 || blobs.size() == 2, "LLMMatMul: expects weights and an optional bias");
        CV_CheckEQ(blobs[0].rows, out_, "LLMMatMul: weight rows != out_features");
        CV_CheckEQ((size_t)blobs[0].cols, llm::ggmlRowBytes(type_, in_), "LLMMatMul: weight row size mismatch");
        CV_Assert(blobs[0].isContinuous() || blobs[0].rows == 1 || blobs[0].step[0] == (size_t)blobs[0].cols);
        if (blobs.size() == 2)
        {
            CV_CheckTypeEQ(blobs[1].type(), CV_32F, "LLMMatMul: bias must be float32");
            CV_CheckEQ(blobs[1].total(), (size_t)out_, "LLMMatMul: bias length != out_features");
        }
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMMatMul: expects one input");
        const MatShape& x = inputs[0];
        CV_CheckGE((int)x.size(), 1, "LLMMatMul: input must have at least one dimension");
        CV_CheckEQ(x.back(), in_, "LLMMatMul: the input's last dimension != in_features");
        const int rows = (int)(total(x) / in_);
        CV_CheckGT(rows, 0, "LLMMatMul: empty input");
        outputs.assign(1, MatShape{rows, out_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        std::vector<Mat> inputs, outputs;
        inputs_arr.getMatVector(inputs);
        outputs_arr.getMatVector(outputs);
        const Mat& x = inputs[0];
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMMatMul: float32 input only");
        const int rows = (int)(x.total() / in_);
        const int nRows = rows;
        const float* xp = x.ptr<float>();
        float* y = outputs[0].ptr<float>();
        const float* bias = blobs.size() > 1 ? blobs[1].ptr<float>() : nullptr;
        const Mat& w = blobs[0];
        const size_t rowBytes = w.cols;
        const uchar* wp = w.ptr();

        // ~16 stripes per thread keeps threads balanced without tiny tasks.
        const double nstripes = std::min<double>(out_, std::max(1, getNumThreads()) * 16);
        if (nRows <= gemvMaxRows_ && integerDot_)
        {
            const int blocks = in_ / 32;
            xq_.resize((size_t)nRows * in_);
            xd_.resize((size_t)nRows * blocks);
            xs_.resize((size_t)nRows * blocks);
            for (int t = 0; t < nRows; t++)
                llm::quantizeRowQ8(xp + (size_t)t * in_, &xq_[(size_t)t * in_], &xd_[(size_t)t * blocks],
                                   &xs_[(size_t)t * blocks], in_);
            parallel_for_(Range(0, out_), [&](const Range& r) {
                for (int n = r.start; n < r.end; n++)
                {
                    const uchar* src = wp + (size_t)n * rowBytes;
                    const float b = bias ? bias[n] : 0.f;
                    for (int t = 0; t < nRows; t++)
                        y[(size_t)t * out_ + n] = llm::dotQ8(type_, src, &xq_[(size_t)t * in_], &xd_[(size_t)t * blocks],
                                                             &xs_[(size_t)t * blocks], in_) + b;
                }
            }, nstripes);
            return;
        }
        if (nRows > gemvMaxRows_)
        {
            // Prefill: decode a tile of weight rows to float once, then a GEMM of all tokens
            // against it (dnn's own fastGemm, one thread per tile).
            const int tileRows = std::max(8, std::min(64, (1 << 17) / in_));
            const int tiles = (out_ + tileRows - 1) / tileRows;
            FastGemmOpt opt;
            opt.init();
            opt.multi_thread = false;
            parallel_for_(Range(0, tiles), [&](const Range& r) {
                AutoBuffer<float> tile((size_t)tileRows * in_);
                for (int k = r.start; k < r.end; k++)
                {
                    const int n0 = k * tileRows, n1 = std::min(out_, n0 + tileRows);
                    for (int n = n0; n < n1; n++)
                        llm::dequantizeRowFast(type_, wp + (size_t)n * rowBytes, tile.data() + (size_t)(n - n0) * in_, in_);
                    FastGemmOpt tileOpt = opt;
                    fastGemm(false, true, nRows, in_, n1 - n0, in_, 1.f, xp, in_, 1, tile.data(), in_, 1,
                             0.f, y + n0, out_, tileOpt);
                    if (bias)
                        for (int t = 0; t < nRows; t++)
                            for (int n = n0; n < n1; n++)
                                y[(size_t)t * out_ + n] += bias[n];
                }
            }, tiles);
            return;
        }
        parallel_for_(Range(0, out_), [&](const Range& r) {
            AutoBuffer<float> rowBuf(type_ == llm::GGML_F32 ? 0 : in_);
            for (int n = r.start; n < r.end; n++)
            {
                const uchar* src = wp + (size_t)n * rowBytes;
                const float* wr;
                if (type_ == llm::GGML_F32)
                    wr = reinterpret_cast<const float*>(src);
                else
                {
                    llm::dequantizeRowFast(type_, src, rowBuf.data(), in_);
                    wr = rowBuf.data();
                }
                const float b = bias ? bias[n] : 0.f;
                for (int t = 0; t < nRows; t++)
                    y[(size_t)t * out_ + n] = llm::dotF32Fast(wr, xp + (size_t)t * in_, in_) + b;
            }
        }, nstripes);
    }

private:
    llm::GGMLType type_;
    int in_, out_;
    int gemvMaxRows_;   // beyond, a GEMM over decoded weight tiles
    bool integerDot_;   // 8-bit activations and integer dot products on the GEMV path
    std::vector<signed char> xq_;  // activations quantized for the integer path
    std::vector<float> xd_;
    std::vector<int> xs_;
};

Ptr<LLMMatMulLayer> LLMMatMulLayer::create(const LayerParams& params)
{
    return makePtr<LLMMatMulLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
