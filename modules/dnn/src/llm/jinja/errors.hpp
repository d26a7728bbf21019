// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Errors and limits of the Jinja engine. Inside the engine an error is a TemplateError that
// carries the Python exception jinja2 would raise (TypeError, UndefinedError, ...) and, once
// known, the position in the template; Template turns it into a cv::Exception naming the line
// and column. Templates are untrusted: every render runs on a budget of steps, output bytes,
// loop iterations and call depth, and running out is an error, never a hang.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_ERRORS_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_ERRORS_HPP

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

enum class ErrorKind
{
    Syntax,        //!< TemplateSyntaxError (also unknown filters and tests outside conditions)
    Undefined,     //!< UndefinedError: an undefined value used where a value is needed
    Type,          //!< TypeError
    Value,         //!< ValueError
    ZeroDivision,  //!< ZeroDivisionError
    Overflow,      //!< OverflowError (also integers beyond 64 bits)
    Security,      //!< SecurityError: what the sandbox forbids (list.append, _private attributes, ...)
    Runtime,       //!< TemplateRuntimeError (an unknown filter inside a condition, reached)
    Raised,        //!< raise_exception(message) called by the template
    Limit          //!< a render limit (steps, output, loop iterations, depth) was reached
};

//! The Python exception name ("TypeError", ...).
const char* errorKindName(ErrorKind kind);

const size_t kNoPosition = (size_t)-1;

class TemplateError : public std::exception
{
public:
    TemplateError(ErrorKind kind, std::string message, size_t offset = kNoPosition)
        : kind(kind), message(std::move(message)), offset(offset) {}
    const char* what() const noexcept override { return message.c_str(); }

    ErrorKind kind;
    std::string message;
    size_t offset;  //!< byte offset in the (newline-normalized) source, kNoPosition until known
};

[[noreturn]] void fail(ErrorKind kind, const std::string& message);

//! Limits of one render. The defaults are far above what real chat templates need.
struct RenderLimits
{
    size_t maxOutputBytes = 16u << 20;   //!< the output, and any one string made on the way
    int64_t maxSteps = 50000000;         //!< evaluation steps (nodes, items visited, bytes scanned / 64)
    int64_t maxLoopIterations = 1000000; //!< iterations of all loops together
    int maxCallDepth = 128;              //!< nested macro and caller calls
};

//! Work done by one render, checked against its limits.
class Budget
{
public:
    explicit Budget(const RenderLimits& limits) : limits_(limits) {}
    void charge(int64_t steps = 1)
    {
        steps_ += steps;
        if (steps_ > limits_.maxSteps)
            exhausted();
    }
    //! Steps proportional to a number of bytes or items handled.
    void chargeBytes(size_t bytes) { charge(1 + (int64_t)(bytes / 64)); }
    void chargeLoopIteration()
    {
        if (++iterations_ > limits_.maxLoopIterations)
            fail(ErrorKind::Limit, "the template ran more than " + std::to_string(limits_.maxLoopIterations) +
                                   " loop iterations");
        charge();
    }
    //! Throws when a string of `bytes` bytes would be longer than allowed.
    void checkSize(size_t bytes) const
    {
        if (bytes > limits_.maxOutputBytes)
            fail(ErrorKind::Limit, "the template made a text longer than " + std::to_string(limits_.maxOutputBytes) +
                                   " bytes");
    }
    const RenderLimits& limits() const { return limits_; }

private:
    [[noreturn]] void exhausted() const;

    RenderLimits limits_;
    int64_t steps_ = 0;
    int64_t iterations_ = 0;
};

}}}} // namespace cv::dnn::llm::jinja

#endif
