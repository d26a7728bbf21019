// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Element-wise operations of language models: the residual connections (add), SwiGLU's and
// GeGLU's gates (silu(gate) * up, gelu(gate) * up), soft-capping, and the element-wise nodes of imported graphs (ONNX Add/Sub/Mul/Div
// between activations or with a constant scalar or row; Sigmoid, SiLU, ReLU, Tanh, Neg, Erf, Sqrt), GELU (tanh and erf).
// Allocation-free, unlike dnn's Eltwise / NaryEltwise, so a decode step stays free of heap
// allocations.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../kernels/elementwise_kernels.hpp"

#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

enum class ElementwiseOp { Add, Sub, Mul, Div, SwiGLU, GeGLUF16, Sigmoid, Silu, Relu, Tanh, Neg, GeluTanh, GeluTanhF16, SoftCap, Gelu, Erf, Sqrt };

struct OpName
{
    const char* name;
    ElementwiseOp op;
    bool binary;
};

const OpName kOps[] = {
    {"add", ElementwiseOp::Add, true}, {"sub", ElementwiseOp::Sub, true}, {"mul", ElementwiseOp::Mul, true},
    {"div", ElementwiseOp::Div, true}, {"swiglu", ElementwiseOp::SwiGLU, true},
    {"geglu_f16", ElementwiseOp::GeGLUF16, true},
    {"sigmoid", ElementwiseOp::Sigmoid, false},
    {"silu", ElementwiseOp::Silu, false}, {"relu", ElementwiseOp::Relu, false},
    {"tanh", ElementwiseOp::Tanh, false}, {"neg", ElementwiseOp::Neg, false},
    {"gelu_tanh", ElementwiseOp::GeluTanh, false}, {"gelu_tanh_f16", ElementwiseOp::GeluTanhF16, false},
    {"softcap", ElementwiseOp::SoftCap, false},
    {"gelu", ElementwiseOp::Gelu, false}, {"erf", ElementwiseOp::Erf, false}, {"sqrt", ElementwiseOp::Sqrt, false},
};

inline float geluTanh(float x)
{
    return 0.5f * x * (1.f + std::tanh(0.7978845608028654f * x * (1.f + 0.044715f * x * x)));
}

// ggml_gelu on the CPU (GGML_GELU_FP16): x rounded to half precision, the result looked up in a
// half-precision table of the same formula; saturated outside (-10, 10)
inline float geluTanhF16(float x)
{
    if (x <= -10.f)
        return 0.f;
    if (x >= 10.f)
        return x;
    return (float)hfloat(geluTanh((float)hfloat(x)));
}

inline float binaryOp(ElementwiseOp op, float a, float b)
{
    switch (op)
    {
    case ElementwiseOp::Add: return a + b;
    case ElementwiseOp::Sub: return a - b;
    case ElementwiseOp::Mul: return a * b;
    case ElementwiseOp::SwiGLU: return a / (1.f + std::exp(-a)) * b;  // silu(gate) * up
    case ElementwiseOp::GeGLUF16: return geluTanhF16(a) * b;            // gelu(gate) * up (Gemma), as ggml_geglu
    default: return a / b;
    }
}

inline float unaryOp(ElementwiseOp op, float x)
{
    switch (op)
    {
    case ElementwiseOp::Sigmoid: return 1.f / (1.f + std::exp(-x));
    case ElementwiseOp::Relu: return std::max(x, 0.f);
    case ElementwiseOp::Tanh: return std::tanh(x);
    case ElementwiseOp::GeluTanh:  // GELU's tanh approximation (GPT-2's FFN)
        return geluTanh(x);
    case ElementwiseOp::GeluTanhF16: return geluTanhF16(x);
    case ElementwiseOp::Gelu: return 0.5f * x * (1.f + std::erf(x * 0.7071067811865476f));  // exact (erf) GELU
    case ElementwiseOp::Erf: return std::erf(x);
    case ElementwiseOp::Sqrt: return std::sqrt(x);
    default: return -x;
    }
}

//! The dispatched kernel's operation for the four arithmetic operations; false for the others.
bool arithmeticKernelOp(ElementwiseOp op, llm::BinaryOp* kernelOp)
{
    switch (op)
    {
    case ElementwiseOp::Add: *kernelOp = llm::BinaryOp::Add; return true;
    case ElementwiseOp::Sub: *kernelOp = llm::BinaryOp::Sub; return true;
    case ElementwiseOp::Mul: *kernelOp = llm::BinaryOp::Mul; return true;
    case ElementwiseOp::Div: *kernelOp = llm::BinaryOp::Div; return true;
    default: return false;
    }
}

} // namespace

class LLMElementwiseLayerImpl CV_FINAL : public LLMElementwiseLayer
{
public:
    explicit LLMElementwiseLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        const String name = params.get<String>("operation");
        const OpName* found = nullptr;
        for (const OpName& o : kOps)
            if (name == o.name)
                found = &o;
        if (!found)
            CV_Error(Error::StsBadArg, "LLMElementwise: unknown operation '" + name + "'");
        op_ = found->op;
        binary_ = found->binary;
        constantFirst_ = params.get<bool>("constant_first", false);
        if (op_ == ElementwiseOp::SoftCap)
        {
            cap_ = params.get<float>("cap");
            CV_Check(cap_, cap_ > 0.f && std::isfinite(cap_), "LLMElementwise: softcap needs a positive `cap`");
        }
        if (!blobs.empty())
        {
            CV_Check(name, binary_, "LLMElementwise: only binary operations take a constant");
            CV_CheckTypeEQ(blobs[0].type(), CV_32F, "LLMElementwise: the constant must be float32");
            CV_CheckGT(blobs[0].total(), (size_t)0, "LLMElementwise: empty constant");
        }
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        const size_t expected = binary_ && blobs.empty() ? 2 : 1;
        CV_CheckEQ(inputs.size(), expected, "LLMElementwise: wrong number of inputs");
        if (expected == 2)
        {
            // b: a's shape, or (2-D a) one value per row, broadcast over it (a per-token gate).
            const bool perRow = inputs[0].size() == 2 && inputs[1].size() == 2 && inputs[1][0] == inputs[0][0] &&
                                inputs[1][1] == 1 && op_ != ElementwiseOp::SwiGLU && op_ != ElementwiseOp::GeGLUF16;
            CV_Check(inputs[1].size(), inputs[0] == inputs[1] || perRow,
                     "LLMElementwise: inputs must have the same shape, or the second one value per row");
        }
        if (binary_ && !blobs.empty())
        {
            const size_t n = blobs[0].total();
            CV_Check(n, n == 1 || (!inputs[0].empty() && (int)n == inputs[0].back()),
                     "LLMElementwise: the constant must be a scalar or one value per feature");
        }
        outputs.assign(1, inputs[0]);
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        const Mat a = inputs_arr.getMat(0);
        Mat& y = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(a.type(), CV_32F, "LLMElementwise: float32 only");
        const float* pa = a.ptr<float>();
        const float* pb = nullptr;
        if (binary_ && blobs.empty())
        {
            const Mat b = inputs_arr.getMat(1);
            CV_CheckTypeEQ(b.type(), CV_32F, "LLMElementwise: float32 only");
            pb = b.ptr<float>();
            if (b.total() != a.total())
            {
                // One value of b per row of a (small: a per-token gate of one projection's rows).
                for (int r = 0; r < a.rows; r++)
                {
                    const float* ar = a.ptr<float>(r);
                    float* yr = y.ptr<float>(r);
                    for (int c = 0; c < a.cols; c++)
                        yr[c] = binaryOp(op_, ar[c], pb[r]);
                }
                return;
            }
        }
        float* py = y.ptr<float>();
        const int n = (int)a.total();
        // Threads only pay off on large tensors (an MLP's intermediate rows of a prefill).
        const int kElementsPerStripe = 16384;
        if (n <= kElementsPerStripe)
        {
            run(pa, pb, py, 0, n);
            return;
        }
        // One pointer captured: the std::function parallel_for_ makes holds it without allocating.
        const struct { const LLMElementwiseLayerImpl* layer; const float *pa, *pb; float* py; } args{this, pa, pb, py};
        const auto* p = &args;
        parallel_for_(Range(0, n), [p](const Range& r) { p->layer->run(p->pa, p->pb, p->py, r.start, r.end); },
                      (double)n / kElementsPerStripe);
    }

private:
    void run(const float* pa, const float* pb, float* py, int begin, int end) const
    {
        if ((op_ == ElementwiseOp::SwiGLU && pb) || op_ == ElementwiseOp::Silu)
        {
            llm::siluRange(pa, pb, py, begin, end);
            return;
        }
        llm::BinaryOp kernelOp;
        if (pb && arithmeticKernelOp(op_, &kernelOp))
        {
            llm::binaryRange(kernelOp, pa, pb, py, begin, end);
            return;
        }
        if (op_ == ElementwiseOp::SoftCap)
        {
            // c * tanh(x / c), as ggml_scale(1/c), ggml_tanh, ggml_scale(c) compute it (Gemma 2's logits)
            const float inv = 1.f / cap_;
            for (int i = begin; i < end; i++)
                py[i] = cap_ * std::tanh(pa[i] * inv);
        }
        else if (!binary_)
        {
            for (int i = begin; i < end; i++)
                py[i] = unaryOp(op_, pa[i]);
        }
        else if (pb)
        {
            for (int i = begin; i < end; i++)
                py[i] = binaryOp(op_, pa[i], pb[i]);
        }
        else
        {
            // A constant scalar (period 1) or row (period = features) broadcast over the rows.
            const float* c = blobs[0].ptr<float>();
            const size_t period = blobs[0].total();
            for (int i = begin; i < end; i++)
            {
                const float k = c[i % period];
                py[i] = constantFirst_ ? binaryOp(op_, k, pa[i]) : binaryOp(op_, pa[i], k);
            }
        }
    }

    ElementwiseOp op_ = ElementwiseOp::Add;
    bool binary_ = true, constantFirst_ = false;
    float cap_ = 0.f;  // softcap
};

Ptr<LLMElementwiseLayer> LLMElementwiseLayer::create(const LayerParams& params)
{
    return makePtr<LLMElementwiseLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
