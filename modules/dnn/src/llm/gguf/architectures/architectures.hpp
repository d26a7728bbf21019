// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The functions the rows of the architecture table name beside llamaBlock (gguf_architecture.hpp):
// each architecture's hyper-parameter hook and block of its own, one file per architecture
// (llama.cpp's src/models/<arch>.cpp).

#ifndef OPENCV_DNN_SRC_LLM_GGUF_ARCHITECTURES_ARCHITECTURES_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_ARCHITECTURES_ARCHITECTURES_HPP

#include "../gguf_architecture.hpp"

namespace cv {
namespace dnn {
namespace llm {

// gemma.cpp
void readGemma2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
void readGemma3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
// gpt2.cpp
void readGPT2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin gpt2Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// granite.cpp
void readGraniteHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
// mistral3.cpp
void readMistral3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
// phi3.cpp
void readPhi3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin phi3Block(GGUFGraphBuilder& g, int layer, LayerPin x);

}}} // namespace cv::dnn::llm

#endif
