// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Text operations as Python's str does them, on UTF-8: lengths and indices count code points,
// whitespace is str.isspace(), case mapping is Unicode's (simple mappings, plus the special
// cases chat templates meet, such as 'ß'.upper() == 'SS'). Malformed UTF-8 reads as U+FFFD.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_TEXT_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_TEXT_HPP

#include <cstdint>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

std::vector<uint32_t> codePoints(const std::string& text);
std::string fromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end);
std::string fromCodePoint(uint32_t cp);
size_t codePointCount(const std::string& text);

//! str.isspace() for one character.
bool isSpace(uint32_t cp);
bool isAsciiDigit(uint32_t cp);
//! A letter for str.isalpha() / \w: has a case mapping, or is in a letter block (approximate).
bool isAlpha(uint32_t cp);
bool isLowerCase(uint32_t cp);
bool isUpperCase(uint32_t cp);

std::string toUpper(const std::string& text);
std::string toLower(const std::string& text);
//! str.capitalize(): first character upper, the rest lower.
std::string capitalize(const std::string& text);
std::string swapCase(const std::string& text);
//! Python's str.title(): a letter after a non-letter upper, other letters lower.
std::string pythonTitle(const std::string& text);

//! str.strip / lstrip / rstrip; `chars` null strips whitespace.
std::string strip(const std::string& text, const std::string* chars, bool left, bool right);
//! str.split(sep, maxsplit) (sep null: runs of whitespace); maxsplit < 0 means no limit.
std::vector<std::string> split(const std::string& text, const std::string* sep, int64_t maxsplit);
//! str.rsplit(sep, maxsplit).
std::vector<std::string> rsplit(const std::string& text, const std::string* sep, int64_t maxsplit);
//! str.splitlines(keepends).
std::vector<std::string> splitLines(const std::string& text, bool keepEnds);
//! str.replace(old, new, count); count < 0 replaces all.
std::string replace(const std::string& text, const std::string& from, const std::string& to, int64_t count,
                    size_t maxBytes);
//! str.find / rfind: the code point index, or -1.
int64_t find(const std::string& text, const std::string& sub, bool fromRight);
//! str.count(sub).
int64_t countOccurrences(const std::string& text, const std::string& sub);
bool startsWith(const std::string& text, const std::string& prefix);
bool endsWith(const std::string& text, const std::string& suffix);
//! str.center(width) with spaces (Python's split of the odd space).
std::string center(const std::string& text, int64_t width);
//! Python's slice of code points text[start:stop:step] with None given as `has*` false.
std::string sliceText(const std::string& text, bool hasStart, int64_t start, bool hasStop, int64_t stop, int64_t step);
//! Python's slice indices: fills the visited positions for a sequence of `length`.
std::vector<int64_t> sliceIndices(int64_t length, bool hasStart, int64_t start, bool hasStop, int64_t stop,
                                  int64_t step);
//! HTML escaping as markupsafe.escape: & < > " '.
std::string escapeHtml(const std::string& text);

}}}} // namespace cv::dnn::llm::jinja

#endif
