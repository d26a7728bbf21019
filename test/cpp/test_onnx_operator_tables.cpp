// The ONNX LLM importer's operator tables (onnx_import_operator_tables.cpp in
// modules/dnn/src/llm/onnx): which importer takes a node, which function folds it on constants. The "operator not
// supported" error must list exactly those tables, so that it cannot drift from what the
// importer does (a hand-written list once missed a dozen folding operators).

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "test_common.hpp"
#include "../../modules/dnn/src/llm/onnx/onnx_llm_importer.hpp"

using cv::dnn::llm::onnxFoldedOperators;
using cv::dnn::llm::onnxImportedOperators;

namespace {

// "A, B (note), C" -> {"A", "B", "C"}.
std::vector<std::string> operatorNames(const std::string& list)
{
    std::vector<std::string> names;
    for (size_t start = 0; start <= list.size();)
    {
        size_t end = list.find(", ", start);
        if (end == std::string::npos)
            end = list.size();
        const std::string item = list.substr(start, end - start);
        names.push_back(item.substr(0, item.find(" (")));
        start = end + 2;
    }
    return names;
}

// The text of `msg` between `before` and `after` (empty, with a test failure, if absent).
std::string between(const std::string& msg, const std::string& before, const std::string& after)
{
    const size_t start = msg.find(before);
    if (start == std::string::npos)
    {
        ADD_FAILURE() << "no '" << before << "' in: " << msg;
        return std::string();
    }
    const size_t end = msg.find(after, start + before.size());
    if (end == std::string::npos)
    {
        ADD_FAILURE() << "no '" << after << "' after '" << before << "' in: " << msg;
        return std::string();
    }
    return msg.substr(start + before.size(), end - start - before.size());
}

} // namespace

// A model whose MLP uses Softplus, an operator in neither table: the error lists the importer
// table and the folder table, each entry once, in table order.
TEST(ONNXOperatorTables, unsupportedOperatorErrorListsBothTables)
{
    const std::string msg = llm_test::onnxLlmError("unsupported_op");
    ASSERT_NE(msg.find("(Softplus): operator not supported by the LLM importer"), std::string::npos) << msg;
    const std::string imported = between(msg, "(imported: ", "; folded when all inputs are constants: ");
    const std::string folded = between(msg, "; folded when all inputs are constants: ", ")");
    EXPECT_EQ(operatorNames(imported), onnxImportedOperators()) << msg;
    EXPECT_EQ(operatorNames(folded), onnxFoldedOperators()) << msg;
}

// The operators the folder table must hold (all that constant folding computed when it was a
// chain of comparisons), and no operator twice in a table: a second folder would never be
// reached, and each operator has one importer (whichever domains it takes).
TEST(ONNXOperatorTables, tablesHoldEachOperatorOnce)
{
    const std::vector<std::string> folded = onnxFoldedOperators(), imported = onnxImportedOperators();
    const std::set<std::string> foldedSet(folded.begin(), folded.end()), importedSet(imported.begin(), imported.end());
    EXPECT_EQ(foldedSet.size(), folded.size());
    EXPECT_EQ(importedSet.size(), imported.size());
    for (const char* op : {"Cast", "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Concat", "Gather", "Slice",
                           "Shape", "Size", "Expand", "Where", "Range", "ConstantOfShape", "Equal", "Less", "Greater",
                           "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Add", "Sub", "Mul", "Div", "Pow",
                           "Sqrt", "Neg", "Reciprocal", "Transpose", "MatMul", "Cos", "Sin", "Trilu", "Min", "Max",
                           "CumSum", "ScatterND"})
        EXPECT_EQ(foldedSet.count(op), 1u) << op;
    for (const char* op : {"Constant", "Cast", "Identity", "Gather", "MatMul", "MatMulNBits", "Gemm", "Softmax",
                           "SimplifiedLayerNormalization", "SkipLayerNormalization", "RotaryEmbedding",
                           "GroupQueryAttention", "MultiHeadAttention", "Attention"})
        EXPECT_EQ(importedSet.count(op), 1u) << op;
}
