// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Runs a parsed template: statements (statements.cpp), expressions (expressions.cpp), and
// what both need (interpreter.cpp): scopes, attribute and item access as jinja2's
// ImmutableSandboxedEnvironment does it, calls of macros and built-ins, the output.
//
// Scopes follow jinja2: {% if %} shares its scope; each iteration of a for loop, a macro call,
// {% with %}, block set and {% filter %} bodies get a new one, so their {% set %} does not leak
// out (namespaces are how templates carry values out of loops). A macro sees the scope it was
// defined in, as it is when the macro is called.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_INTERPRETER_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_INTERPRETER_HPP

#include "ast.hpp"
#include "builtins.hpp"

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

struct RenderOptions
{
    RenderLimits limits;
    bool fixedTime = false;  //!< strftime_now() reports `time` instead of the local time now
    std::tm time = std::tm();
};

struct Scope
{
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value> > vars;

    Value* findLocal(const std::string& name);
    void set(const std::string& name, Value value);
};
using ScopePtr = std::shared_ptr<Scope>;

//! A C++ function as a template value: built-ins, bound methods, loop.cycle, ...
class NativeFunction : public Object
{
public:
    using Function = std::function<Value(Interpreter&, const CallArgs&)>;
    NativeFunction(std::string name, Function function) : name_(std::move(name)), function_(std::move(function)) {}
    std::string typeName() const override { return "builtin_function_or_method"; }
    bool isCallable() const override { return true; }
    Value call(Interpreter& interpreter, const CallArgs& args) override { return function_(interpreter, args); }
    std::string repr(Budget&, int) const override { return "<built-in function " + name_ + ">"; }

private:
    std::string name_;
    Function function_;
};

Value makeFunction(std::string name, NativeFunction::Function function);
//! A macro (or a call block's caller) defined in `closure`.
Value makeMacro(const MacroNode& node, const std::shared_ptr<Scope>& closure);

class Interpreter
{
public:
    explicit Interpreter(const RenderOptions& options);
    ~Interpreter();

    //! Runs the template with these variables (after the built-in globals) and returns its text.
    std::string render(const NodeList& body, const std::vector<std::pair<std::string, Value> >& variables);

    Budget& budget() { return budget_; }
    const RenderOptions& options() const { return options_; }

    //! `object.name` (attribute first, then item).
    Value getAttribute(const Value& object, const std::string& name);
    //! `object[key]` (item first, then attribute); missing items are Undefined.
    Value getItem(const Value& object, const Value& key);
    /** The attribute argument of filters (jinja2's make_attrgetter): None for the object itself,
        an integer index, or a path "name", "a.b", "0.name" (digit parts index). A `fallback`
        replaces an Undefined after each part. */
    Value getAttributePath(const Value& object, const Value& attribute, const Value* fallback = nullptr);
    Value call(const Value& callee, const CallArgs& args);
    Value applyFilter(const std::string& name, const Value& input, const CallArgs& args);
    bool applyTest(const std::string& name, const Value& input, const CallArgs& args);
    //! Namespaces are cleared when the render ends: they are the only values that can refer to
    //! themselves.
    void trackNamespace(const Value& ns) { namespaces_.push_back(ns); }

    //! Calls a macro or a call block's caller defined in `closure`.
    Value callMacro(const MacroNode& macro, const ScopePtr& closure, const CallArgs& args);
    //! `loop(items)` in a recursive for loop: the loop's body over `items`, one level deeper.
    std::string runRecursiveLoop(const ForNode& node, const ScopePtr& scope, const Value& items, int depth);

private:
    enum class Flow { Normal, Break, Continue };
    friend class ScopeGuard;
    friend class OutputGuard;

    // statements.cpp
    Flow execute(const NodeList& body);
    Flow executeNode(const Node& node);
    Flow executeStatement(const Node& node);
    Flow executeFor(const ForNode& node, const Value& iterable, int depth);
    void executeSet(const SetNode& node);
    void executeSetBlock(const SetBlockNode& node);
    void executeMacroDefinition(const MacroNode& node);
    void executeCallBlock(const MacroNode& node);
    void executeWith(const WithNode& node);
    void writeOutput(const OutputNode& node);
    void assign(const Node& target, const Value& value);
    //! The text a body writes, in a new scope.
    std::string capture(const NodeList& body, Flow* flow = nullptr);

    // expressions.cpp
    Value eval(const Node& node);
    Value evalNode(const Node& node);
    Value evalBinary(const BinaryNode& node);
    Value evalCompare(const CompareNode& node);
    Value evalCall(const CallNode& node, const Value* caller = nullptr);
    Value evalGetitem(const GetitemNode& node);
    Value evalFilter(const FilterNode& node, const Value* blockText = nullptr);
    CallArgs evalArguments(const CallArguments& args);

    Value lookup(const std::string& name) const;
    void write(const std::string& text);

    RenderOptions options_;
    Budget budget_;
    ScopePtr scope_;
    std::string* out_ = nullptr;
    int callDepth_ = 0;
    bool autoescape_ = false;
    std::vector<Value> namespaces_;
};

//! Enters a new scope (child of `parent`) and leaves it on destruction, clearing its variables.
class ScopeGuard
{
public:
    ScopeGuard(Interpreter& interpreter, const ScopePtr& parent);
    ~ScopeGuard();
    Scope& scope() { return *interpreter_.scope_; }

private:
    Interpreter& interpreter_;
    ScopePtr saved_;
};

//! Redirects the output into `buffer` until destroyed.
class OutputGuard
{
public:
    OutputGuard(Interpreter& interpreter, std::string& buffer) : interpreter_(interpreter), saved_(interpreter.out_)
    {
        interpreter.out_ = &buffer;
    }
    ~OutputGuard() { interpreter_.out_ = saved_; }

private:
    Interpreter& interpreter_;
    std::string* saved_;
};

//! Python arithmetic on template values: + - * / // % ** (TypeError where Python has one).
Value arithmetic(BinaryOp op, const Value& a, const Value& b, Budget& budget);

}}}} // namespace cv::dnn::llm::jinja

#endif
