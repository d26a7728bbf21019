// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* One weight matrix in a ggml type and the ways to multiply activation rows by it, y = x W^T (+ b):
   what the matmul layer (llm_matmul_layer.cpp) runs for each of its weights and the expert layer
   (llm_experts_layer.cpp) for each expert's projections. The callers split the work into units
   or output rows and run them in their own parallel sections.

   The integer path: activations quantized to 8 bits once (QuantizedActivations) and dotted with
   the weight blocks in integers, as llama.cpp does; types with an interleaved kernel are repacked
   here (at load) into groups of 8 interleaved rows (kernels/interleaved_weights.hpp). Its units are
   the groups of 8 rows, in pairs where the type has a two-group kernel, then the remaining rows
   one by one. Each activation row's result depends on that row only, whatever the other rows are:
   a token gets the same numbers alone or in a batch. The float path decodes a weight row once for
   all rows (GEMV, also row by row independent), or tiles of rows for a GEMM (prompts). */

#ifndef OPENCV_DNN_SRC_LLM_LAYERS_WEIGHT_PROJECTION_HPP
#define OPENCV_DNN_SRC_LLM_LAYERS_WEIGHT_PROJECTION_HPP

#include <opencv2/core.hpp>

#include "../ggml/ggml_types.hpp"
#include "../kernels/ggml_kernels.hpp"

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

//! A view of activation rows quantized to 8 bits (quantizeActivationRow): q, d, sums at strides in, in/32, in/32.
struct ActivationRows
{
    const signed char* q = nullptr;
    const signed char* qByBlock = nullptr;  //!< q regrouped for the AMX tile kernels (or q itself)
    const float* d = nullptr;
    const int* sums = nullptr;
    int rows = 0;

    //! Rows [first, first + count) of these (for tiles: regrouped on their own, QuantizedActivations::regroup).
    ActivationRows subset(int first, int count, int in) const;
};

//! Storage for quantized activation rows; it grows and never shrinks, so a steady step allocates nothing.
struct QuantizedActivations
{
    std::vector<signed char> q, qByBlock;
    std::vector<float> d;
    std::vector<int> sums;

    //! Makes room for `rows` rows of `in` inputs.
    void reserveRows(int rows, int in);
    //! Quantizes `rows` rows of x (stride in) into rows [first, first + rows), rounded as `kind` says.
    void quantize(const float* x, int first, int rows, int in, ActivationQuantization kind);
    //! Rows [first, first + count) regrouped for the tile kernels as one matrix of count rows.
    void regroup(int first, int count, int in);
    ActivationRows view(int rows, bool regrouped) const;
};

class WeightProjection
{
public:
    /** W: `rows` (out x ggml row bytes of `in` elements, CV_8U, mapped or owned), bias float32 of
        out values or empty. integerDotAllowed: the integer path where the type has one (false
        keeps the exact float path). */
    WeightProjection(GGMLType type, const Mat& rows, const Mat& bias, int in, bool integerDotAllowed);

    int out() const { return out_; }
    GGMLType type() const { return type_; }
    bool integerDot() const { return integerDot_; }
    //! How llama.cpp rounds the activations of this type (Q8_K for the K-quants, else Q8_0).
    ActivationQuantization llamaActivations() const { return traits_->llamaActivations; }
    //! Whether `rows` activation rows go by the integer path (else the float GEMV up to
    //! gemvMaxRows rows, the GEMM beyond).
    bool integerPathFor(int rows, int gemvMaxRows) const
    {
        return integerDot_ && (rows <= gemvMaxRows || groups_ > 0 || traits_->dotQ8Tile);
    }
    //! The AMX tile kernels take its groups (the activations must then be regrouped).
    bool usesTiles() const { return integerDot_ && traits_->dotQ8InterleavedAmx && groups_ >= 2; }

    int integerUnits() const { return groupUnits() + (out_ - 8 * groups_); }
    //! The output rows integer-path units [begin, end) compute.
    Range unitRows(int begin, int end) const
    {
        const int units = groupUnits(), rowsPerUnit = 8 * groupsPerUnit();
        auto row = [&](int u) { return u <= units ? std::min(u * rowsPerUnit, 8 * groups_) : 8 * groups_ + (u - units); };
        return Range(row(begin), row(end));
    }
    //! Integer-path units [begin, end) for the activation rows a into y (a.rows x out).
    void computeIntegerUnits(const ActivationRows& a, float* y, int begin, int end) const;
    //! Float-path output rows [begin, end) for `rows` rows of x (stride in) into y (rows x out);
    //! rowBuffer: `in` floats.
    void computeFloatRows(const float* x, int rows, float* y, int begin, int end, float* rowBuffer) const;
    //! Rows of a GEMM tile (for gemmTile): the type's fused GEMM takes 64, else 8..64 by input size.
    int gemmTileRows() const;
    //! Whether gemmTile needs a tileBuffer of gemmTileRows() x in floats.
    bool gemmDecodes() const { return type_ != GGML_F32 && !traits_->gemmF32; }
    //! Output rows [n0, n1) (one tile) of all `rows` rows of x by a GEMM.
    void gemmTile(const float* x, int rows, float* y, int n0, int n1, float* tileBuffer) const;

private:
    int groupsPerUnit() const { return traits_->dotQ8Interleaved16 ? 2 : 1; }
    int groupUnits() const { return (groups_ + groupsPerUnit() - 1) / groupsPerUnit(); }
    void addBias(const ActivationRows& a, float* y, int first, int count) const;
    void rowGemv(const ActivationRows& a, float* y, int begin, int end) const;

    GGMLType type_ = GGML_F32;
    const WeightTypeTraits* traits_ = nullptr;  // the type's row of the weight-type table
    int in_ = 0, out_ = 0;
    bool integerDot_ = false;   // 8-bit activations and integer dot products
    bool roundTokens_ = false;  // the fused float GEMM may round the tokens (GemmF32Fn)
    Mat weights_;               // the raw rows
    Mat bias_;                  // float32, or empty
    int groups_ = 0;            // groups of 8 rows in interleaved_
    Mat interleaved_;
};

}}} // namespace cv::dnn::llm

#endif
