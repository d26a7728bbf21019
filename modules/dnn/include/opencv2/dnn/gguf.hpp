// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_GGUF_HPP
#define OPENCV_DNN_GGUF_HPP

#include <opencv2/dnn.hpp>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

//! @addtogroup dnn
//! @{

/** @brief Read-only view of a GGUF file (v2 or v3): its metadata and its tensor table.

The file is memory-mapped; tensor data is not copied. Every count, offset and size in the file
is validated on open, so a truncated or hostile file raises a cv::Exception naming the key or
tensor at fault.

Metadata types are reported as GGUF names: "uint8" ... "int64", "float32", "float64", "bool",
"string", and "array[<type>]" (nested: "array[array[int32]]").
*/
class CV_EXPORTS_W GGUFFile
{
public:
    virtual ~GGUFFile();

    /** @brief Opens and validates a GGUF file. */
    CV_WRAP static Ptr<GGUFFile> open(const String& path);

    CV_WRAP virtual int getVersion() const = 0;
    CV_WRAP virtual std::vector<String> getMetadataKeys() const = 0;
    CV_WRAP virtual bool hasMetadata(const String& key) const = 0;
    //! GGUF type name of a metadata value, e.g. "uint32" or "array[string]".
    CV_WRAP virtual String getMetadataType(const String& key) const = 0;
    //! A string value.
    CV_WRAP virtual String getString(const String& key) const = 0;
    //! Any numeric or bool value, as a double.
    CV_WRAP virtual double getNumber(const String& key) const = 0;
    //! An integer value, exactly (a 64-bit unsigned value above INT64_MAX is an error).
    virtual int64 getInt(const String& key) const = 0;
    CV_WRAP virtual bool getBool(const String& key) const = 0;
    //! An array of strings.
    CV_WRAP virtual std::vector<String> getStringArray(const String& key) const = 0;
    //! An array of numbers or bools.
    CV_WRAP virtual std::vector<double> getNumberArray(const String& key) const = 0;

    CV_WRAP virtual std::vector<String> getTensorNames() const = 0;
    CV_WRAP virtual bool hasTensor(const String& name) const = 0;
    //! ggml type name of a tensor, e.g. "F16", "Q4_K".
    CV_WRAP virtual String getTensorType(const String& name) const = 0;
    //! Tensor dimensions in ggml order (the first one is contiguous).
    CV_WRAP virtual std::vector<int> getTensorShape(const String& name) const = 0;
    //! Bytes the tensor's data takes in the file.
    virtual size_t getTensorBytes(const String& name) const = 0;
};

/** @brief Reads a GGUF language model (architectures `llama`, `qwen2`, `qwen3`, `qwen3moe`, `gpt-oss`, `gpt2`, `phi3`,
`gemma2`, `gemma3`, `gemma4`, `olmo2`, `granite`, `smollm3`, `mistral3`, `gptneox`, `phi2`, `stablelm`, `lfm2`,
`qwen35`, `qwen35moe`, `granitehybrid`) into a
Net.

The Net's input is a 1 x T matrix of token ids (as float); its output the logits of the last
token (1 x vocabulary). Each forward continues the sequence where the previous one stopped (the
attention layers keep their keys and values; see opencv2/dnn/llm.hpp for the state functions).
Weights stay in their (quantized) GGUF form, mapped from the file.

@param path GGUF file.
@param allLogits when true, the output holds the logits of every new token (T x vocabulary).
@param contextLength tokens one sequence may hold (0: the model's training context). It also
decides context-dependent rotary scaling as in llama.cpp (phi3's LongRoPE: the long factors
when it exceeds the original context).
*/
CV_EXPORTS_W Net readNetFromGGUF(const String& path, bool allLogits = false, int contextLength = 0);

//! @}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

#endif
