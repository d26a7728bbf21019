// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Eigen's GEMM for the float prompt path, compiled once per dispatched ISA (baseline, AVX2,
// AVX-512; patch 0003), so that Eigen's packets are the CPU's widest. Measured on one thread of
// an AVX-512 Xeon (doc/performance.md): Eigen 90-120 GFLOP/s on prompt-sized products against
// ~37 for dnn's fastGemm, which this path used before.
//
// Each ISA's copy of Eigen lives in a namespace of its own (`Eigen` is renamed by a macro before
// the include): Eigen's templates are not static, so two builds' instances of the same template
// would have one name, and the linker could keep the AVX-512 one for an AVX2 CPU.

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY
#define LLM_EIGEN_NAMESPACE_(isa) Eigen_##isa
#define LLM_EIGEN_NAMESPACE(isa) LLM_EIGEN_NAMESPACE_(isa)
#define Eigen LLM_EIGEN_NAMESPACE(CV_CPU_OPTIMIZATION_NAMESPACE)
#define EIGEN_DONT_PARALLELIZE  // the layer splits the work between threads
#define EIGEN_MPL2_ONLY
#include <Eigen/Core>
#endif

#include <cstddef>

namespace cv {
namespace dnn {
namespace llm {
CV_CPU_OPTIMIZATION_NAMESPACE_BEGIN

void gemmTokensByWeightRowsSimd(const float* x, size_t xStride, int tokens, int in, const float* w, size_t wStride,
                                int rows, float* y, size_t yStride);

#ifndef CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

void gemmTokensByWeightRowsSimd(const float* x, size_t xStride, int tokens, int in, const float* w, size_t wStride,
                                int rows, float* y, size_t yStride)
{
    typedef Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> RowMajor;
    typedef Eigen::Map<const RowMajor, Eigen::Unaligned, Eigen::OuterStride<>> ConstRows;
    const ConstRows xs(x, tokens, in, Eigen::OuterStride<>((Eigen::Index)xStride));
    const ConstRows ws(w, rows, in, Eigen::OuterStride<>((Eigen::Index)wStride));
    Eigen::Map<RowMajor, Eigen::Unaligned, Eigen::OuterStride<>> ys(y, tokens, rows, Eigen::OuterStride<>((Eigen::Index)yStride));
    ys.noalias() = xs * ws.transpose();
}

#endif // CV_CPU_OPTIMIZATION_DECLARATIONS_ONLY

CV_CPU_OPTIMIZATION_NAMESPACE_END
}}} // namespace cv::dnn::llm
