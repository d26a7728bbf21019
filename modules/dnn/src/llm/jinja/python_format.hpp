// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Numbers and formatting as Python writes and reads them: repr() of floats (shortest round trip,
// "1e+16", "0.0001"), int() / float() of strings, printf-style `'%s' % x` and str.format().

#ifndef OPENCV_DNN_SRC_LLM_JINJA_PYTHON_FORMAT_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_PYTHON_FORMAT_HPP

#include "value.hpp"

#include <string>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! repr(float) / str(float).
std::string formatFloat(double value);
//! int(text, base) (base 0: from the prefix); false where Python raises ValueError.
bool parseInt(const std::string& text, int base, int64_t& value);
//! float(text); false where Python raises ValueError.
bool parseFloat(const std::string& text, double& value);
//! round(value, digits) with Python's round-half-even on the exact binary value.
double roundHalfEven(double value, int digits);

//! `format % args` (args: a tuple, a dict for %(name)s, or a single value).
std::string percentFormat(const std::string& format, const Value& args, Budget& budget);
//! format.format(*args, **kwargs).
std::string strFormat(const std::string& format, const CallArgs& args, Budget& budget);
//! format(value, spec): the format-spec mini-language.
std::string formatWithSpec(const Value& value, const std::string& spec, Budget& budget);

}}}} // namespace cv::dnn::llm::jinja

#endif
