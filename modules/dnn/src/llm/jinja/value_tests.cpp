// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// jinja2's tests, `value is name(args)` (jinja2/tests.py), with Python's isinstance semantics:
// a bool is a number but not an integer, a dict is a sequence, a generator is iterable only.

#include "../../precomp.hpp"
#include "builtins.hpp"
#include "interpreter.hpp"
#include "text.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

struct TestEntry
{
    const char* name;
    TestFunction function;
};

Value onlyArgument(const char* name, const CallArgs& args)
{
    return bindArguments(name, args, {required("other")})[0];
}

void noArguments(const char* name, const CallArgs& args) { bindArguments(name, args, {}); }

bool testDefined(Interpreter&, const Value& v, const CallArgs& a) { noArguments("defined", a); return !v.isUndefined(); }
bool testUndefined(Interpreter&, const Value& v, const CallArgs& a) { noArguments("undefined", a); return v.isUndefined(); }
bool testNone(Interpreter&, const Value& v, const CallArgs& a) { noArguments("none", a); return v.isNone(); }
bool testBoolean(Interpreter&, const Value& v, const CallArgs& a) { noArguments("boolean", a); return v.isBool(); }
bool testTrue(Interpreter&, const Value& v, const CallArgs& a) { noArguments("true", a); return v.isBool() && v.asBool(); }
bool testFalse(Interpreter&, const Value& v, const CallArgs& a) { noArguments("false", a); return v.isBool() && !v.asBool(); }
bool testInteger(Interpreter&, const Value& v, const CallArgs& a) { noArguments("integer", a); return v.isInt(); }
bool testFloat(Interpreter&, const Value& v, const CallArgs& a) { noArguments("float", a); return v.isFloat(); }
bool testNumber(Interpreter&, const Value& v, const CallArgs& a) { noArguments("number", a); return v.isNumber(); }
bool testString(Interpreter&, const Value& v, const CallArgs& a) { noArguments("string", a); return v.isString(); }
bool testMapping(Interpreter&, const Value& v, const CallArgs& a) { noArguments("mapping", a); return v.isDict(); }
bool testEscaped(Interpreter&, const Value& v, const CallArgs& a) { noArguments("escaped", a); return v.isMarkup(); }

bool testSequence(Interpreter&, const Value& v, const CallArgs& a)
{
    noArguments("sequence", a);
    // len() and __getitem__: str, list, tuple, range, dict (and Undefined, which has both).
    return v.isString() || v.isDict() || v.isUndefined() ||
           (v.isSequence() && (v.isList() || v.isTuple() || v.sequenceKind() == SequenceKind::Range));
}

bool testIterable(Interpreter&, const Value& v, const CallArgs& a)
{
    noArguments("iterable", a);
    return v.isString() || v.isSequence() || v.isDict() || v.isGenerator() || v.isUndefined();
}

bool testCallable(Interpreter&, const Value& v, const CallArgs& a)
{
    noArguments("callable", a);
    return v.isUndefined() || (v.isObject() && v.object()->isCallable());  // Undefined has __call__
}

bool testOdd(Interpreter& in, const Value& v, const CallArgs& a)
{
    noArguments("odd", a);
    return equals(arithmetic(BinaryOp::Mod, v, Value::integer(2), in.budget()), Value::integer(1), in.budget());
}

bool testEven(Interpreter& in, const Value& v, const CallArgs& a)
{
    noArguments("even", a);
    return equals(arithmetic(BinaryOp::Mod, v, Value::integer(2), in.budget()), Value::integer(0), in.budget());
}

bool testDivisibleBy(Interpreter& in, const Value& v, const CallArgs& a)
{
    const std::vector<Value> args = bindArguments("divisibleby", a, {required("num")});
    return equals(arithmetic(BinaryOp::Mod, v, args[0], in.budget()), Value::integer(0), in.budget());
}

bool testLower(Interpreter& in, const Value& v, const CallArgs& a)
{
    noArguments("lower", a);
    const std::string s = toStr(v, in.budget());
    bool cased = false;
    for (uint32_t cp : codePoints(s))
    {
        if (isUpperCase(cp))
            return false;
        cased = cased || isLowerCase(cp);
    }
    return cased;
}

bool testUpper(Interpreter& in, const Value& v, const CallArgs& a)
{
    noArguments("upper", a);
    const std::string s = toStr(v, in.budget());
    bool cased = false;
    for (uint32_t cp : codePoints(s))
    {
        if (isLowerCase(cp))
            return false;
        cased = cased || isUpperCase(cp);
    }
    return cased;
}

bool testEq(Interpreter& in, const Value& v, const CallArgs& a) { return equals(v, onlyArgument("eq", a), in.budget()); }
bool testNe(Interpreter& in, const Value& v, const CallArgs& a) { return !equals(v, onlyArgument("ne", a), in.budget()); }
bool testLt(Interpreter& in, const Value& v, const CallArgs& a) { return compare(v, onlyArgument("lt", a), in.budget()) == -1; }
bool testGt(Interpreter& in, const Value& v, const CallArgs& a) { return compare(v, onlyArgument("gt", a), in.budget()) == 1; }

bool testLe(Interpreter& in, const Value& v, const CallArgs& a)
{
    const int c = compare(v, onlyArgument("le", a), in.budget());
    return c == -1 || c == 0;
}

bool testGe(Interpreter& in, const Value& v, const CallArgs& a)
{
    const int c = compare(v, onlyArgument("ge", a), in.budget());
    return c == 1 || c == 0;
}

bool testIn(Interpreter& in, const Value& v, const CallArgs& a)
{
    const std::vector<Value> args = bindArguments("in", a, {required("seq")});
    return contains(args[0], v, in.budget());
}

bool testSameAs(Interpreter& in, const Value& v, const CallArgs& a)
{
    const Value other = onlyArgument("sameas", a);
    if (v.kind() != other.kind())
        return false;
    switch (v.kind())
    {
    case ValueKind::None: return true;
    case ValueKind::Bool: return v.asBool() == other.asBool();
    case ValueKind::Int: return v.asInt() == other.asInt() && v.asInt() >= -5 && v.asInt() <= 256;  // CPython's small ints
    case ValueKind::Object: return v.object() == other.object();
    default: return equals(v, other, in.budget()) && (v.isString() && v.str().size() <= 1);
    }
}

bool testFilter(Interpreter&, const Value& v, const CallArgs& a)
{
    noArguments("filter", a);
    return v.isString() && findFilter(v.str()) != nullptr;
}

bool testTest(Interpreter&, const Value& v, const CallArgs& a)
{
    noArguments("test", a);
    return v.isString() && findTest(v.str()) != nullptr;
}

const TestEntry kTests[] = {
    {"defined", testDefined}, {"undefined", testUndefined}, {"none", testNone}, {"boolean", testBoolean},
    {"true", testTrue}, {"false", testFalse}, {"integer", testInteger}, {"float", testFloat}, {"number", testNumber},
    {"string", testString}, {"mapping", testMapping}, {"sequence", testSequence}, {"iterable", testIterable},
    {"callable", testCallable}, {"escaped", testEscaped}, {"odd", testOdd}, {"even", testEven},
    {"divisibleby", testDivisibleBy}, {"lower", testLower}, {"upper", testUpper},
    {"eq", testEq}, {"equalto", testEq}, {"==", testEq}, {"ne", testNe}, {"!=", testNe},
    {"lt", testLt}, {"lessthan", testLt}, {"<", testLt}, {"le", testLe}, {"<=", testLe},
    {"gt", testGt}, {"greaterthan", testGt}, {">", testGt}, {"ge", testGe}, {">=", testGe},
    {"in", testIn}, {"sameas", testSameAs}, {"filter", testFilter}, {"test", testTest},
};

} // namespace

TestFunction findTest(const std::string& name)
{
    for (const TestEntry& entry : kTests)
        if (name == entry.name)
            return entry.function;
    return nullptr;
}

}}}} // namespace cv::dnn::llm::jinja
