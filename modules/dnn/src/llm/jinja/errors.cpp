// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "errors.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

const char* errorKindName(ErrorKind kind)
{
    switch (kind)
    {
    case ErrorKind::Syntax: return "TemplateSyntaxError";
    case ErrorKind::Undefined: return "UndefinedError";
    case ErrorKind::Type: return "TypeError";
    case ErrorKind::Value: return "ValueError";
    case ErrorKind::ZeroDivision: return "ZeroDivisionError";
    case ErrorKind::Overflow: return "OverflowError";
    case ErrorKind::Security: return "SecurityError";
    case ErrorKind::Runtime: return "TemplateRuntimeError";
    case ErrorKind::Raised: return "raise_exception";
    case ErrorKind::Limit: return "limit reached";
    }
    return "error";
}

void fail(ErrorKind kind, const std::string& message)
{
    throw TemplateError(kind, message);
}

void Budget::exhausted() const
{
    fail(ErrorKind::Limit, "the template ran more than " + std::to_string(limits_.maxSteps) + " evaluation steps");
}

}}}} // namespace cv::dnn::llm::jinja
