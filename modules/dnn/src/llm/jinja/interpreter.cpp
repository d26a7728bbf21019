// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interpreter.hpp"
#include "text.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

Value* Scope::findLocal(const std::string& name)
{
    for (auto& var : vars)
        if (var.first == name)
            return &var.second;
    return nullptr;
}

void Scope::set(const std::string& name, Value value)
{
    if (Value* existing = findLocal(name))
        *existing = std::move(value);
    else
        vars.emplace_back(name, std::move(value));
}

Value makeFunction(std::string name, NativeFunction::Function function)
{
    return Value::object(std::make_shared<NativeFunction>(std::move(name), std::move(function)));
}

ScopeGuard::ScopeGuard(Interpreter& interpreter, const ScopePtr& parent) : interpreter_(interpreter), saved_(interpreter.scope_)
{
    auto scope = std::make_shared<Scope>();
    scope->parent = parent;
    interpreter.scope_ = scope;
}

ScopeGuard::~ScopeGuard()
{
    // Values of the scope may refer back to it (a macro defined here): clearing breaks the cycle.
    interpreter_.scope_->vars.clear();
    interpreter_.scope_ = saved_;
}

namespace {

// A macro, or the body of a {% call %} block (the `caller` of the macro it calls).
class MacroObject : public Object
{
public:
    MacroObject(const MacroNode& node, ScopePtr closure) : node_(node), closure_(std::move(closure)) {}
    std::string typeName() const override { return "Macro"; }
    bool isCallable() const override { return true; }
    Value call(Interpreter& interpreter, const CallArgs& args) override
    {
        return interpreter.callMacro(node_, closure_, args);
    }
    std::string repr(Budget&, int) const override { return "<Macro " + reprString(node_.name) + ">"; }
    Value getAttribute(const std::string& name) const override
    {
        if (name == "name")
            return Value::string(node_.name);
        if (name == "arguments")
        {
            std::vector<Value> params;
            for (const std::string& p : node_.params)
                params.push_back(Value::string(p));
            return Value::sequence(std::move(params), SequenceKind::Tuple);
        }
        if (name == "catch_kwargs" || name == "catch_varargs" || name == "caller")
            return Value::boolean(name == "catch_kwargs" ? node_.usesKwargs : name == "catch_varargs" ? node_.usesVarargs
                                                                                                     : node_.usesCaller);
        return Object::getAttribute(name);
    }

private:
    const MacroNode& node_;
    ScopePtr closure_;
};

} // namespace

Value makeMacro(const MacroNode& node, const ScopePtr& closure)
{
    return Value::object(std::make_shared<MacroObject>(node, closure));
}

Interpreter::Interpreter(const RenderOptions& options) : options_(options), budget_(options.limits) {}

Interpreter::~Interpreter()
{
    if (scope_)
        scope_->vars.clear();
    for (const Value& ns : namespaces_)
        clearNamespace(ns);
}

std::string Interpreter::render(const NodeList& body, const std::vector<std::pair<std::string, Value> >& variables)
{
    scope_ = std::make_shared<Scope>();
    for (auto& global : builtinGlobals())
        scope_->set(global.first, global.second);
    for (const auto& variable : variables)
        scope_->set(variable.first, variable.second);
    std::string output;
    out_ = &output;
    execute(body);
    out_ = nullptr;
    return output;
}

void Interpreter::write(const std::string& text)
{
    out_->append(text);
    if (out_->size() > options_.limits.maxOutputBytes)
        fail(ErrorKind::Limit, "the template wrote more than " + std::to_string(options_.limits.maxOutputBytes) + " bytes");
}

Value Interpreter::lookup(const std::string& name) const
{
    for (Scope* s = scope_.get(); s; s = s->parent.get())
        if (Value* v = s->findLocal(name))
            return *v;
    return Value::undefinedName(name);
}

Value Interpreter::getAttribute(const Value& object, const std::string& name)
{
    if (object.isUndefined())
        object.failUndefined();
    if (startsWith(name, "__"))
        return Value::undefinedWithHint("access to attribute '" + name + "' of '" + object.typeName() +
                                        "' object is unsafe.", ErrorKind::Security);
    Value method;
    if (findMethod(object, name, method))
        return method;
    if (object.isObject())
        return object.object()->getAttribute(name);
    if (object.isNumber() && (name == "real" || name == "imag"))
    {
        if (name == "imag")
            return object.isFloat() ? Value::number(0.0) : Value::integer(0);
        return object.isFloat() ? object : Value::integer(object.asInt());
    }
    if (object.isSequence() && object.sequenceKind() == SequenceKind::GroupTuple && (name == "grouper" || name == "list"))
        return object.items()[name == "grouper" ? 0 : 1];
    if (object.isDict())
    {
        budget_.charge();
        if (const Value* v = object.findKey(name))
            return *v;
    }
    return Value::undefinedMember(object, Value::string(name));
}

Value Interpreter::getItem(const Value& object, const Value& key)
{
    if (object.isUndefined())
        object.failUndefined();
    if (object.isDict())
    {
        if (const Value* v = object.findKey(key))
            return *v;
    }
    else if ((object.isSequence() && (object.isList() || object.isTuple() || object.sequenceKind() == SequenceKind::Range)) ||
             object.isString())
    {
        if (key.isInteger())
        {
            const int64_t n = object.isString() ? length(object) : (int64_t)object.items().size();
            int64_t i = key.asInt();
            if (i < 0)
                i += n;
            if (i >= 0 && i < n)
            {
                if (object.isString())
                    return Value::string(sliceText(object.str(), true, i, true, i + 1, 1));
                return object.items()[(size_t)i];
            }
            return Value::undefinedMember(object, key);
        }
    }
    else if (object.isObject() && key.isString())
        return object.object()->getAttribute(key.str());
    // Python raised KeyError / IndexError / TypeError: jinja2 then tries the attribute.
    if (key.isString())
    {
        Value method;
        if (findMethod(object, key.str(), method))
            return method;
        if (object.isSequence() && object.sequenceKind() == SequenceKind::GroupTuple &&
            (key.str() == "grouper" || key.str() == "list"))
            return object.items()[key.str() == "grouper" ? 0 : 1];
    }
    return Value::undefinedMember(object, key);
}

Value Interpreter::getAttributePath(const Value& object, const Value& attribute, const Value* fallback)
{
    if (attribute.isNone())
        return object;
    if (!attribute.isString())
    {
        const Value v = getItem(object, attribute);
        return fallback && v.isUndefined() ? *fallback : v;
    }
    const std::string& path = attribute.str();
    Value current = object;
    size_t start = 0;
    while (true)
    {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        int64_t index = 0;
        const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos &&
                             part.size() < 18;
        if (numeric)
            index = std::stoll(part);
        Value next = getItem(current, numeric ? Value::integer(index) : Value::string(part));
        if (fallback && next.isUndefined())
            next = *fallback;
        current = next;
        if (dot == std::string::npos)
            return current;
        start = dot + 1;
    }
}

Value Interpreter::call(const Value& callee, const CallArgs& args)
{
    if (callee.isUndefined())
        callee.failUndefined();
    if (!callee.isObject() || !callee.object()->isCallable())
        fail(ErrorKind::Type, "'" + callee.typeName() + "' object is not callable");
    return callee.object()->call(*this, args);
}

Value Interpreter::applyFilter(const std::string& name, const Value& input, const CallArgs& args)
{
    const FilterFunction filter = findFilter(name);
    if (!filter)
        fail(ErrorKind::Runtime, "No filter named '" + name + "' found.");
    budget_.charge();
    return filter(*this, input, args);
}

bool Interpreter::applyTest(const std::string& name, const Value& input, const CallArgs& args)
{
    const TestFunction test = findTest(name);
    if (!test)
        fail(ErrorKind::Runtime, "No test named '" + name + "' found.");
    budget_.charge();
    return test(*this, input, args);
}

Value Interpreter::callMacro(const MacroNode& macro, const ScopePtr& closure, const CallArgs& args)
{
    if (callDepth_ >= options_.limits.maxCallDepth)
        fail(ErrorKind::Limit, "macro calls nested deeper than " + std::to_string(options_.limits.maxCallDepth) + " levels");
    struct DepthCount
    {
        explicit DepthCount(int& d) : depth(d) { depth++; }
        ~DepthCount() { depth--; }
        int& depth;
    } depthCount(callDepth_);

    // jinja2's Macro.__call__: positional, then keyword arguments, defaults, caller, kwargs, varargs.
    const size_t count = macro.params.size();
    std::vector<std::pair<std::string, Value> > keywords = args.keywords;
    auto takeKeyword = [&](const std::string& name, Value& out) {
        for (size_t i = 0; i < keywords.size(); i++)
            if (keywords[i].first == name)
            {
                out = keywords[i].second;
                keywords.erase(keywords.begin() + (std::ptrdiff_t)i);
                return true;
            }
        return false;
    };
    std::vector<Value> values(count);
    std::vector<bool> given(count, false);
    bool foundCaller = false;
    for (size_t i = 0; i < count; i++)
    {
        if (i < args.positional.size())
        {
            values[i] = args.positional[i];
            given[i] = true;
        }
        else
        {
            given[i] = takeKeyword(macro.params[i], values[i]);
            if (macro.params[i] == "caller")
                foundCaller = true;
        }
    }
    if (args.positional.size() >= count)
        for (const std::string& p : macro.params)
            foundCaller = foundCaller || p == "caller";

    ScopeGuard guard(*this, closure);
    Scope& scope = guard.scope();
    const size_t firstDefault = count - macro.defaults.size();
    for (size_t i = 0; i < count; i++)
    {
        if (!given[i])
        {
            if (i >= firstDefault)
                values[i] = eval(*macro.defaults[i - firstDefault]);
            else
                values[i] = Value::undefinedWithHint("parameter '" + macro.params[i] + "' was not provided");
        }
        scope.set(macro.params[i], values[i]);
    }
    if (macro.usesCaller && !foundCaller)
    {
        Value caller;
        if (!takeKeyword("caller", caller))
            caller = Value::undefinedWithHint("No caller defined");
        scope.set("caller", caller);
    }
    if (macro.usesKwargs)
    {
        std::vector<std::pair<Value, Value> > entries;
        for (auto& kw : keywords)
            entries.emplace_back(Value::string(kw.first), kw.second);
        scope.set("kwargs", Value::dict(std::move(entries)));
    }
    else if (!keywords.empty())
    {
        for (const auto& kw : keywords)
            if (kw.first == "caller")
                fail(ErrorKind::Type, "macro '" + macro.name + "' was invoked with two values for the special caller "
                                      "argument. This is most likely a bug.");
        fail(ErrorKind::Type, "macro '" + macro.name + "' takes no keyword argument '" + keywords[0].first + "'");
    }
    if (macro.usesVarargs)
    {
        std::vector<Value> rest;
        for (size_t i = count; i < args.positional.size(); i++)
            rest.push_back(args.positional[i]);
        scope.set("varargs", Value::sequence(std::move(rest), SequenceKind::Tuple));
    }
    else if (args.positional.size() > count)
        fail(ErrorKind::Type, "macro '" + macro.name + "' takes not more than " + std::to_string(count) + " argument(s)");

    std::string text;
    {
        OutputGuard output(*this, text);
        execute(macro.body);
    }
    return Value::string(text);
}

}}}} // namespace cv::dnn::llm::jinja
