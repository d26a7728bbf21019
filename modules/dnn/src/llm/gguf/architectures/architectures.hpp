// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The functions the rows of the architecture table name beside llamaBlock (gguf_architecture.hpp):
// each architecture's hyper-parameter hook and block of its own, one file per architecture
// (llama.cpp's src/models/<arch>.cpp).

#ifndef OPENCV_DNN_SRC_LLM_GGUF_ARCHITECTURES_ARCHITECTURES_HPP
#define OPENCV_DNN_SRC_LLM_GGUF_ARCHITECTURES_ARCHITECTURES_HPP

#include "../gguf_architecture.hpp"

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

// gemma.cpp
void readGemma2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
void readGemma3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
// gemma4.cpp
void readGemma4HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin gemma4Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// gpt2.cpp
void readGPT2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin gpt2Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// gptneox.cpp (and the partial-rotary LayerNorm family's shared pieces, used by phi2 and stablelm)
void readLayerNormFamilyHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
void readGPTNeoXHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
std::vector<LayerPin> layerNormFamilyQKV(GGUFGraphBuilder& g, const std::string& prefix, LayerPin h);
LayerPin geluFeedForward(GGUFGraphBuilder& g, const std::string& prefix, LayerPin h);
LayerPin gptNeoXBlock(GGUFGraphBuilder& g, int layer, LayerPin x);
// gpt_oss.cpp
void readGptOssHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin gptOssBlock(GGUFGraphBuilder& g, int layer, LayerPin x);
// granite.cpp
void readGraniteHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
void readGraniteScales(const GGUFMetadataReader& r, GGUFHyperParameters& h, bool logitScaleRequired);
// granite_hybrid.cpp
void readGraniteHybridHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin mamba2Mixer(GGUFGraphBuilder& g, const std::string& prefix, LayerPin h);
// lfm2.cpp
void readLFM2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin lfm2ShortConvolution(GGUFGraphBuilder& g, const std::string& prefix, LayerPin h);
// mistral3.cpp
void readMistral3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
// phi2.cpp
void readPhi2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin phi2Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// phi3.cpp
void readPhi3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin phi3Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// qwen35.cpp
void readQwen35HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
//! ssm.conv_kernel (>= 2), ssm.inner_size, ssm.state_size, ssm.time_step_rank, ssm.group_count
void readSSMSizes(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin qwen35Block(GGUFGraphBuilder& g, int layer, LayerPin x);
// stablelm.cpp
void readStableLMHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h);
LayerPin stableLMBlock(GGUFGraphBuilder& g, int layer, LayerPin x);

}}} // namespace cv::dnn::llm

#endif
