// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// ONNX decoder-only language models (the graphs ONNX Runtime GenAI's model builder writes, and
// hand-made graphs of the same operators) imported onto the LLM layers and the Net-level paged
// KV cache, so that they run like GGUF models. See onnx_llm_importer.cpp.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_ONNX_LLM_IMPORTER_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_ONNX_LLM_IMPORTER_HPP

#include <opencv2/dnn.hpp>
#include "genai_config.hpp"
#include "../net/load_options.hpp"

namespace cv {
namespace dnn {
namespace llm {

class OnnxModelFile;

//! True when the graph is a decoder with a KV cache: it has an attention operator
//! (com.microsoft GroupQueryAttention / MultiHeadAttention, ai.onnx Attention) fed by cache inputs.
bool isONNXLanguageModel(const OnnxModelFile& file);

/** The Net of an ONNX language model: input "input_ids" (1 x T token ids, as float), output the
    logits of the last token of each sequence (or of every token with allLogits), the keys and
    values kept in the Net's paged KV cache instead of past / present tensors. */
Net buildNetFromONNXLanguageModel(const OnnxModelFile& file, const GenAIConfig& config, const LoadOptions& options);

/** A cheap first look (no parsing): false when the file cannot be a language model this
    importer reads, so that readNetFromONNX parses other models only once. */
CV_EXPORTS bool mayBeONNXLanguageModel(const String& path);  // exported for the tests

/** readNetFromONNX's hook (patches/0008): when `path` holds a language model, imports it into
    `net` and returns true; returns false for other ONNX files, which dnn's importer reads. */
CV_EXPORTS bool readONNXLanguageModel(const String& path, Net& net);

/** The operators of the importer's two tables (onnx_import_operator_tables.cpp), which the
    "operator not supported" error lists: those imported (some only in the forms their importer
    names) and those folded when all their inputs are constants. Exported for the tests. */
CV_EXPORTS std::vector<std::string> onnxImportedOperators();
CV_EXPORTS std::vector<std::string> onnxFoldedOperators();

}}} // namespace cv::dnn::llm

#endif
