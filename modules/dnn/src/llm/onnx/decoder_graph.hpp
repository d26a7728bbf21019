// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Which nodes of an ONNX decoder graph a Net must compute, and in which order. The KV cache's
// plumbing (past_key_values inputs, the attention mask's subgraph, present outputs) only feeds
// attention inputs that the Net's paged cache replaces, so a walk back from the logits along
// the inputs each operator really computes with never reaches it.

#ifndef OPENCV_DNN_SRC_LLM_ONNX_DECODER_GRAPH_HPP
#define OPENCV_DNN_SRC_LLM_ONNX_DECODER_GRAPH_HPP

#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx_proto.hpp"

namespace cv {
namespace dnn {
namespace llm {

class OnnxModelFile;

//! GroupQueryAttention, MultiHeadAttention (com.microsoft) or Attention (ai.onnx).
bool isAttentionOp(const opencv_onnx::NodeProto& n);
//! Index of an attention node's past-key input (-1 for other nodes).
int pastKeyInput(const opencv_onnx::NodeProto& n);
//! The inputs of a node that the Net computes with; the others (masks, sequence lengths, past
//! keys and values, positions) are the KV cache's business.
std::vector<int> computedInputs(const opencv_onnx::NodeProto& n);

struct DecoderGraph
{
    std::map<std::string, int> producer;  //!< value name -> index of the node computing it
    std::set<std::string> neededValues;   //!< values the logits depend on
    std::vector<int> order;               //!< the needed nodes, each after its inputs' producers
    //! The MatMul / MatMulNBits that computes the logits (through Cast / Identity), or nullptr:
    //! the logit-row selection goes before it, so the vocabulary projection runs on those rows.
    const opencv_onnx::NodeProto* logitsProducer = nullptr;
};

/** Walks back from `logits` (iteratively: a hostile graph's depth must not exhaust the stack)
    and orders the needed nodes topologically, in the file's order where it allows (builder
    files are not always sorted). A value produced twice or a cycle is an error. */
DecoderGraph analyzeDecoderGraph(const OnnxModelFile& file, const std::string& logits);

}}} // namespace cv::dnn::llm

#endif
