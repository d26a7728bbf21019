// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The ONNX LLM importer's two operator tables and the dispatch through them:
//   - the importer table: (domain, operator) -> the member function that imports such a node;
//   - the folder table: ai.onnx operator -> the function that folds it on constant inputs.
// The "operator not supported" error lists both tables, so it names exactly what is supported.

#include "../../precomp.hpp"
#include "onnx_llm_importer.hpp"

#ifdef HAVE_PROTOBUF

#include "onnx_net_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace onnx_import {

namespace {

struct FolderEntry
{
    const char* op;
    ConstantFolder fold;
};

const std::vector<FolderEntry>& constantFolders()
{
    static const std::vector<FolderEntry> kFolders = {
        // shapes and data movement
        {"Shape", foldShape}, {"Size", foldSize}, {"Reshape", foldReshape}, {"Flatten", foldFlatten},
        {"Squeeze", foldSqueeze}, {"Unsqueeze", foldUnsqueeze}, {"Concat", foldConcat}, {"Gather", foldGather},
        {"Slice", foldSlice}, {"Transpose", foldTranspose}, {"Expand", foldExpand}, {"Where", foldWhere},
        {"ConstantOfShape", foldConstantOfShape}, {"Range", foldRange}, {"ScatterND", foldScatterND},
        {"Trilu", foldTrilu}, {"Cast", foldCast}, {"Identity", foldIdentity}, {"Tile", foldTile},
        {"GatherElements", foldGatherElements},
        // comparisons and logic
        {"Equal", foldEqual}, {"Less", foldLess}, {"Greater", foldGreater}, {"LessOrEqual", foldLessOrEqual},
        {"GreaterOrEqual", foldGreaterOrEqual}, {"Not", foldNot}, {"And", foldAnd}, {"Or", foldOr},
        // arithmetic
        {"Add", foldAdd}, {"Sub", foldSub}, {"Mul", foldMul}, {"Div", foldDiv}, {"Pow", foldPow}, {"Min", foldMin},
        {"Max", foldMax}, {"Sqrt", foldSqrt}, {"Neg", foldNeg}, {"Reciprocal", foldReciprocal}, {"Cos", foldCos},
        {"Sin", foldSin}, {"MatMul", foldMatMul}, {"CumSum", foldCumSum}};
    return kFolders;
}

bool isOnnxDomain(const std::string& domain)
{
    return domain.empty() || domain == "ai.onnx";
}

// Both tables, as the error for an operator outside them lists them.
std::string unsupportedOperatorMessage()
{
    std::string imported, folded;
    for (const ONNXNetBuilder::OperatorImporter& e : ONNXNetBuilder::operatorImporters())
        imported += (imported.empty() ? "" : ", ") + std::string(e.op) + (*e.note ? std::string(" (") + e.note + ")" : "");
    for (const FolderEntry& e : constantFolders())
        folded += (folded.empty() ? "" : ", ") + std::string(e.op);
    return "operator not supported by the LLM importer (imported: " + imported +
           "; folded when all inputs are constants: " + folded + ")";
}

} // namespace

ConstantFolder findConstantFolder(const NodeProto& n)
{
    if (!isOnnxDomain(n.domain()))
        return nullptr;
    for (const FolderEntry& e : constantFolders())
        if (n.op_type() == e.op)
            return e.fold;
    return nullptr;
}

const std::vector<ONNXNetBuilder::OperatorImporter>& ONNXNetBuilder::operatorImporters()
{
    using B = ONNXNetBuilder;
    const Domain any = Domain::Any, onnx = Domain::Onnx;
    static const std::vector<OperatorImporter> kImporters = {
        // before the patterns: folding would store a float16 / bfloat16 weight as float32
        {"Constant", any, &B::importConstant, true, ""},
        {"Cast", any, &B::importCast, true, ""},
        {"Identity", any, &B::importCast, true, ""},
        // embeddings and matmuls
        {"Gather", any, &B::importGather, false, ""},
        {"MatMul", any, &B::importMatMul, false, ""},
        {"MatMulNBits", any, &B::importMatMulNBits, false, ""},
        {"Gemm", any, &B::importGemm, false, ""},
        // element-wise operators
        {"Add", any, &B::importBinary, false, ""},
        {"Sub", any, &B::importBinary, false, ""},
        {"Mul", any, &B::importBinary, false, ""},
        {"Div", any, &B::importBinary, false, ""},
        {"Pow", any, &B::importPow, false, ""},
        {"ReduceMean", any, &B::importReduceMean, false, "in an RMS norm"},
        {"Sigmoid", any, &B::importSigmoid, false, ""},
        {"Relu", any, &B::importUnary, false, ""},
        {"Tanh", any, &B::importUnary, false, ""},
        {"Neg", any, &B::importUnary, false, ""},
        {"Erf", any, &B::importUnary, false, ""},
        {"Sqrt", any, &B::importUnary, false, ""},
        {"Gelu", any, &B::importGelu, false, ""},
        {"FastGelu", any, &B::importGelu, false, ""},
        {"BiasGelu", any, &B::importGelu, false, ""},
        // norms
        {"SimplifiedLayerNormalization", any, &B::importRMSNorm, false, ""},
        {"RMSNormalization", any, &B::importRMSNorm, false, ""},
        {"SkipSimplifiedLayerNormalization", any, &B::importSkipRMSNorm, false, ""},
        {"LayerNormalization", Domain::NotMicrosoft, &B::importLayerNorm, false, ""},
        {"SkipLayerNormalization", Domain::Microsoft, &B::importSkipLayerNorm, false, ""},
        {"EmbedLayerNormalization", Domain::Microsoft, &B::importEmbedLayerNorm, false, ""},
        // views and data movement
        {"Reshape", any, &B::importReshape, false, ""},
        {"Squeeze", any, &B::importReshape, false, ""},
        {"Unsqueeze", any, &B::importReshape, false, ""},
        {"Transpose", onnx, &B::importTranspose, false, ""},
        {"Split", onnx, &B::importSplit, false, ""},
        {"Slice", onnx, &B::importSlice, false, ""},
        {"Concat", onnx, &B::importConcat, false, ""},
        // attention
        {"Softmax", onnx, &B::importSoftmax, false, "in attention written out"},
        {"RotaryEmbedding", any, &B::importRotary, false, ""},
        {"GroupQueryAttention", any, &B::importAttention, false, ""},
        {"MultiHeadAttention", any, &B::importAttention, false, ""},
        {"Attention", any, &B::importAttention, false, ""}};
    return kImporters;
}

const ONNXNetBuilder::OperatorImporter* ONNXNetBuilder::findOperatorImporter(const NodeProto& n)
{
    const bool microsoft = n.domain() == "com.microsoft";
    for (const OperatorImporter& e : operatorImporters())
    {
        const bool domainMatches = e.domain == Domain::Any || (e.domain == Domain::Onnx && isOnnxDomain(n.domain())) ||
                                   (e.domain == Domain::NotMicrosoft && !microsoft) ||
                                   (e.domain == Domain::Microsoft && microsoft);
        if (domainMatches && n.op_type() == e.op)
            return &e;
    }
    return nullptr;
}

void ONNXNetBuilder::importNode(const NodeProto& n)
{
    const OperatorImporter* importer = findOperatorImporter(n);
    if (importer && importer->beforePatterns)
        return (this->*importer->import)(n);
    if (importPattern(n))
        return;
    if (!importer)
        failNode(n, unsupportedOperatorMessage());
    (this->*importer->import)(n);
}

// Patterns over several nodes, tried before a node's own importer: constant folding, an RMS norm
// written out, values derived from the cache's inputs, attention written out.
bool ONNXNetBuilder::importPattern(const NodeProto& n)
{
    return foldConstantNode(n) || importWrittenOutRMSNorm(n) || importDerived(n) || importWrittenAttention(n);
}

// Cast and Identity leave activations and float constants as they are (castPassesThrough);
// other casts of constants fold.
void ONNXNetBuilder::importCast(const NodeProto& n)
{
    if (castPassesThrough(n))
        define(n, 0, input(n, 0));
    else if (!importPattern(n))
        failNode(n, unsupportedOperatorMessage());
}

} // namespace onnx_import

std::vector<std::string> onnxImportedOperators()
{
    std::vector<std::string> ops;
    for (const onnx_import::ONNXNetBuilder::OperatorImporter& e : onnx_import::ONNXNetBuilder::operatorImporters())
        ops.push_back(e.op);
    return ops;
}

std::vector<std::string> onnxFoldedOperators()
{
    std::vector<std::string> ops;
    for (const onnx_import::FolderEntry& e : onnx_import::constantFolders())
        ops.push_back(e.op);
    return ops;
}

}}} // namespace cv::dnn::llm

#endif // HAVE_PROTOBUF
