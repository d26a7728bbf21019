// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// JSON in and out of templates. In: messages, tools and other variables given as JSON text
// (read with common/json_document's bounded parser, member order kept) become template values
// as Python's json.loads makes them. Out: the tojson filter as transformers defines it,
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False): ", " and
// ": " between items, no ASCII or HTML escaping (jinja2's own tojson escapes <, >, & and ').

#ifndef OPENCV_DNN_SRC_LLM_JINJA_JSON_BRIDGE_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_JSON_BRIDGE_HPP

#include "value.hpp"

#include <string>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! JSON text in the templates' inputs is at most this long.
const size_t kMaxJsonInputBytes = 64u << 20;

//! The value of JSON text; cv::Exception naming `what` when it is not valid JSON.
Value parseJsonValue(const std::string& text, const std::string& what);

//! json.dumps's options.
struct JsonDumpOptions
{
    bool ensureAscii = false;
    bool indented = false;        //!< indent given (even 0: newlines without indentation)
    std::string indent;
    std::string itemSeparator = ", ";
    std::string keySeparator = ": ";
    bool sortKeys = false;
};

//! json.dumps(value, ...); TypeError for values JSON has no form for (Undefined, generators, ...).
std::string dumpJson(const Value& value, const JsonDumpOptions& options, Budget& budget);

}}}} // namespace cv::dnn::llm::jinja

#endif
