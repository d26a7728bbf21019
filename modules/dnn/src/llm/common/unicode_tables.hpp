// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The Unicode character properties that BERT's basic pre-tokenizer and Jinja's str methods
// need. The byte-level BPE pre-tokenizers get theirs from PCRE2 instead (\p{L}, \p{N}, ... in
// their regexes); PCRE2 has no public API for case mapping or decomposition, hence these small
// generated tables (tools/tokenizer/gen_unicode_tables.py).

#ifndef OPENCV_DNN_SRC_LLM_COMMON_UNICODE_TABLES_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_UNICODE_TABLES_HPP

#include <cstdint>

namespace cv {
namespace dnn {
namespace llm {
namespace unicode {

//! The White_Space property (tab, newlines, space, NBSP, U+2000..U+200A, ...).
bool isWhitespace(uint32_t codePoint);
//! General category P*.
bool isPunctuation(uint32_t codePoint);
//! General category M* (combining marks, which accent stripping removes).
bool isAccentMark(uint32_t codePoint);
//! General categories Cc, Cf, Co, Cs.
bool isControl(uint32_t codePoint);
//! CJK ideographs, as BERT's tokenizer delimits them.
bool isChineseCharacter(uint32_t codePoint);
//! Simple (one code point) lowercase mapping.
uint32_t toLower(uint32_t codePoint);
//! First code point of the canonical decomposition: 'é' -> 'e', '가' -> 'ᄀ'.
uint32_t decompositionBase(uint32_t codePoint);

}}}} // namespace cv::dnn::llm::unicode

#endif
