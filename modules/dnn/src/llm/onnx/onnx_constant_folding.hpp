// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Constant folding for the ONNX LLM importer: one folding function per operator, reached
// through the folder table (onnx_import_operator_tables.cpp). A folder computes a node whose
// inputs are all known at import: shape arithmetic and data movement
// (onnx_import_fold_shapes.cpp), arithmetic on small weights and on the values derived from the
// cache's inputs (onnx_import_fold_arithmetic.cpp). Private to the importer.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_ONNX_CONSTANT_FOLDING_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_ONNX_CONSTANT_FOLDING_HPP

#include "onnx_proto.hpp"
#include "onnx_model_file.hpp"

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

// A constant while it is folded or evaluated: values as double, integer or float.
struct Folded
{
    std::vector<int64> shape;
    std::vector<double> v;
    bool isFloat = true;

    int64 total() const
    {
        return (int64)v.size();
    }
};

// Placeholders in symbolic shape tensors (Value::symbolic): the batch size, the new token
// count, and past + new tokens (the cache's length, a Shape of a CacheKV).
constexpr int64 kBatchDim = -(int64(1) << 40), kTokenDim = -(int64(1) << 40) - 1, kTotalDim = -(int64(1) << 40) - 2;

inline bool isSymbol(double d)
{
    return d == (double)kBatchDim || d == (double)kTokenDim || d == (double)kTotalDim;
}

// Folding works on small tensors only (shapes, scalars, norm weights): a larger result is
// an error, not an allocation a hostile file chooses.
constexpr int64 kMaxFoldedElements = int64(1) << 22;

inline bool isFloatType(int onnxType)
{
    return onnxType == ONNX_FLOAT || onnxType == ONNX_FLOAT16 || onnxType == ONNX_BFLOAT16 || onnxType == ONNX_DOUBLE;
}

// The node a folder computes, its inputs, and the checks every folder makes.
class FoldContext
{
public:
    FoldContext(const OnnxModelFile& file, const opencv_onnx::NodeProto& node, const std::vector<Folded>& inputs,
                const std::vector<bool>& present)
        : file(file), node(node), inputs_(inputs), present_(present)
    {
    }

    const OnnxModelFile& file;
    const opencv_onnx::NodeProto& node;
    // Set by a folder that compared a run-time size in a way it cannot decide: the result is
    // not a constant (the caller leaves the node Derived).
    bool undecidable = false;

    [[noreturn]] void fail(const std::string& message) const;
    // Input i, which must be given.
    const Folded& need(int i) const;
    // Input i named by the node (it may still be a missing optional input).
    bool hasInput(int i) const;
    // Input i as integers (INT64_MAX, "to the end", clamped to fit).
    std::vector<int64> ints(int i) const;
    // An axis of a tensor of `rank` dimensions, negative counted from the end.
    int64 axisOf(int64 axis, int64 rank) const;
    // The elements of `shape`, which must stay within kMaxFoldedElements.
    int64 checkedTotal(const std::vector<int64>& shape) const;
    // The node's ints attribute `name`; false when the node has none.
    bool intsAttribute(const char* name, std::vector<int64>& out) const;

private:
    const std::vector<Folded>& inputs_;
    const std::vector<bool>& present_;  // present_[i]: input i is given
};

// Computes a node's output 0 from its inputs.
using ConstantFolder = Folded (*)(FoldContext& c);

// The folder of a node's operator (ai.onnx only), or nullptr (onnx_import_operator_tables.cpp).
ConstantFolder findConstantFolder(const opencv_onnx::NodeProto& node);

// The folders, one per operator (onnx_import_fold_shapes.cpp: shapes and data movement).
Folded foldIdentity(FoldContext& c);
Folded foldCast(FoldContext& c);
Folded foldShape(FoldContext& c);
Folded foldSize(FoldContext& c);
Folded foldReshape(FoldContext& c);
Folded foldFlatten(FoldContext& c);
Folded foldSqueeze(FoldContext& c);
Folded foldUnsqueeze(FoldContext& c);
Folded foldConcat(FoldContext& c);
Folded foldGather(FoldContext& c);
Folded foldSlice(FoldContext& c);
Folded foldTranspose(FoldContext& c);
Folded foldConstantOfShape(FoldContext& c);
Folded foldRange(FoldContext& c);
Folded foldScatterND(FoldContext& c);
Folded foldTrilu(FoldContext& c);
Folded foldTile(FoldContext& c);
Folded foldGatherElements(FoldContext& c);
// Output `output` of a Split (evaluated for values derived from the positions; not a folder of
// the table, which computes output 0 only).
Folded foldSplit(FoldContext& c, int output);

// onnx_import_fold_arithmetic.cpp: element-wise arithmetic, comparisons, MatMul, CumSum.
Folded foldSqrt(FoldContext& c);
Folded foldNeg(FoldContext& c);
Folded foldReciprocal(FoldContext& c);
Folded foldNot(FoldContext& c);
Folded foldCos(FoldContext& c);
Folded foldSin(FoldContext& c);
Folded foldExpand(FoldContext& c);
Folded foldWhere(FoldContext& c);
Folded foldEqual(FoldContext& c);
Folded foldLess(FoldContext& c);
Folded foldGreater(FoldContext& c);
Folded foldLessOrEqual(FoldContext& c);
Folded foldGreaterOrEqual(FoldContext& c);
Folded foldAnd(FoldContext& c);
Folded foldOr(FoldContext& c);
Folded foldMin(FoldContext& c);
Folded foldMax(FoldContext& c);
Folded foldAdd(FoldContext& c);
Folded foldSub(FoldContext& c);
Folded foldMul(FoldContext& c);
Folded foldDiv(FoldContext& c);
Folded foldPow(FoldContext& c);
Folded foldMatMul(FoldContext& c);
Folded foldCumSum(FoldContext& c);

}}}} // namespace cv::dnn::llm::onnx_import

#endif
