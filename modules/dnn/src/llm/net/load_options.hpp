// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Choices made when a language model's Net is built (GGUF and ONNX alike).

#ifndef OPENCV_DNN_SRC_LLM_NET_LOAD_OPTIONS_HPP
#define OPENCV_DNN_SRC_LLM_NET_LOAD_OPTIONS_HPP

namespace cv {
namespace dnn {
namespace llm {

struct LoadOptions
{
    //! Every token's logits (T x vocabulary) instead of one row per sequence of the batch.
    bool allLogits = false;
    /** Quantized matmuls quantize their activations to 8 bits for integer dot products where a
        kernel exists (llama.cpp's path: faster, activations rounded to ~1/254), BF16 prompts
        round them to bfloat16 where the CPU has AVX512_BF16's dot; false keeps every matmul on
        the exact float path. */
    bool integerDot = true;
    /** Tokens one sequence may hold (the KV cache's limit and what context-dependent rotary
        scaling, phi3's LongRoPE, chooses by); 0: the model's training context. */
    int contextLength = 0;

    /** The defaults, with integerDot from the environment variable OPENCV_DNN_LLM_INTEGER_DOT
        ("0": false), read at each call so that one process can build both kinds of Net.
        readNet() and TextGenerationModel use these. */
    static LoadOptions fromEnvironment(bool allLogits = false, int contextLength = 0);
};

}}} // namespace cv::dnn::llm

#endif
