// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// What a template can call without defining it: jinja2's filters (filters_text.cpp,
// filters_sequence.cpp), tests (value_tests.cpp), the methods of str, dict and list that the
// sandbox allows (methods.cpp), and the globals (globals.cpp: range, dict, namespace, cycler,
// joiner, and transformers' raise_exception and strftime_now). Arguments are bound the way
// Python binds them, by position or keyword.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_BUILTINS_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_BUILTINS_HPP

#include "value.hpp"

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

class Interpreter;

using FilterFunction = Value (*)(Interpreter& interpreter, const Value& input, const CallArgs& args);
using TestFunction = bool (*)(Interpreter& interpreter, const Value& input, const CallArgs& args);
using GlobalFunction = Value (*)(Interpreter& interpreter, const CallArgs& args);

struct FilterEntry
{
    const char* name;
    FilterFunction function;
};

//! nullptr for a name jinja2 (with transformers' tojson) does not define.
FilterFunction findFilter(const std::string& name);
TestFunction findTest(const std::string& name);
//! The filters of each file, for findFilter.
const std::vector<FilterEntry>& textFilters();
const std::vector<FilterEntry>& sequenceFilters();

//! `self.name` for str, dict and list values: a bound method when `name` is one of the
//! type's methods (an Undefined that fails with SecurityError for methods that modify), or
//! false when the type has no such method.
bool findMethod(const Value& self, const std::string& name, Value& method);

//! The global names every render starts with.
std::vector<std::pair<std::string, Value> > builtinGlobals();
//! A new namespace object (the interpreter tracks it, see Interpreter::trackNamespace).
Value makeNamespace(Interpreter& interpreter, const CallArgs& args);
//! Sets an attribute of a namespace; false when `target` is not a namespace.
bool setNamespaceAttribute(const Value& target, const std::string& name, const Value& value);
//! Drops every attribute (breaks reference cycles at the end of a render).
void clearNamespace(const Value& ns);

//! A parameter of a built-in: its name and default (required when `required`).
struct Param
{
    const char* name;
    Value fallback;
    bool required = false;
};
inline Param required(const char* name) { return Param{name, Value(), true}; }

/** Binds positional and keyword arguments to `params` as Python does; TypeError for unknown
    keywords, too many arguments or a missing required one. */
std::vector<Value> bindArguments(const std::string& function, const CallArgs& args, std::initializer_list<Param> params);

//! The string argument or TypeError naming the function.
const std::string& stringArgument(const std::string& function, const Value& v);
//! An integer argument (bool counts) or TypeError.
int64_t integerArgument(const std::string& function, const Value& v);

}}}} // namespace cv::dnn::llm::jinja

#endif
