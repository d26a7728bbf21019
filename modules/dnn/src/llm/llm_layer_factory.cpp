// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Registers the LLM extension's layers with dnn's layer factory. Called once from
// initializeLayerFactory() (patches/0001-dnn-register-llm-layers.patch).

#include "../precomp.hpp"
#include <opencv2/dnn/layer.details.hpp>
#include "layers/llm_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

void initializeLLMLayerFactory()
{
    // RMSNorm under the names ONNX (opset 23) and ONNX Runtime (contrib, default and
    // com.microsoft domains, as the ONNX importer prefixes foreign domains) use.
    const LayerFactory::Constructor rmsNorm = details::_layerDynamicRegisterer<RMSNormLayer>;
    LayerFactory::registerLayer("RMSNorm", rmsNorm);
    LayerFactory::registerLayer("RMSNormalization", rmsNorm);
    LayerFactory::registerLayer("SimplifiedLayerNormalization", rmsNorm);
    LayerFactory::registerLayer("com.microsoft.SimplifiedLayerNormalization", rmsNorm);

    // The layers of language models' Nets (gguf/gguf_net_builder.cpp, onnx/onnx_llm_importer.cpp).
    CV_DNN_REGISTER_LAYER_CLASS(LLMTokenEmbedding, LLMTokenEmbeddingLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMMatMul,         LLMMatMulLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMElementwise,    LLMElementwiseLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMAttention,      LLMAttentionLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMLogitRows,      LLMLogitRowsLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMLayerNorm,      LLMLayerNormLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMPositionEmbedding, LLMPositionEmbeddingLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMExperts,        LLMExpertsLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMShortConv,      LLMShortConvLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMGatedDeltaNet,  LLMGatedDeltaNetLayer);
    CV_DNN_REGISTER_LAYER_CLASS(LLMSelectiveScan,  LLMSelectiveScanLayer);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
