// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// UTF-8 helpers of the tokenizers, the Jinja interpreter's string methods and streaming. Text
// given to a tokenizer is untrusted: any byte string must be accepted, so malformed sequences
// are either kept as raw bytes (SentencePiece byte fallback) or replaced by U+FFFD, never
// rejected.

#ifndef OPENCV_DNN_SRC_LLM_COMMON_UTF8_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_UTF8_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

const uint32_t kReplacementCharacter = 0xFFFD;

//! Length of the sequence that a byte announces, from its high bits alone (1 for ASCII,
//! continuation and invalid bytes). Callers clamp it to the bytes that remain.
int utf8SequenceLength(unsigned char leadByte);

//! Decodes the code point at text[pos] and advances pos. A malformed or truncated sequence
//! (overlong forms, surrogates and values above U+10FFFF included) consumes one byte and
//! yields U+FFFD.
uint32_t decodeUtf8(const std::string& text, size_t& pos);

//! All code points of a text, malformed bytes as U+FFFD.
std::vector<uint32_t> decodeUtf8(const std::string& text);

void appendUtf8(uint32_t codePoint, std::string& out);

//! The text with every malformed byte replaced by U+FFFD: valid UTF-8 for PCRE2.
std::string sanitizeUtf8(const std::string& text);

}}} // namespace cv::dnn::llm

#endif
