// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interpreter.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

const char* operatorSymbol(BinaryOp op)
{
    switch (op)
    {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::FloorDiv: return "//";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Pow: return "** or pow()";
    }
    return "?";
}

[[noreturn]] void unsupportedOperands(BinaryOp op, const Value& a, const Value& b)
{
    fail(ErrorKind::Type, std::string("unsupported operand type(s) for ") + operatorSymbol(op) + ": '" + a.typeName() +
                          "' and '" + b.typeName() + "'");
}

[[noreturn]] void integerOverflow()
{
    fail(ErrorKind::Overflow, "integer result does not fit in 64 bits");
}

int64_t checkedInteger(bool overflow, int64_t value)
{
    if (overflow)
        integerOverflow();
    return value;
}

int64_t checkedAdd(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        integerOverflow();
    return r;
}

int64_t checkedSub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        integerOverflow();
    return r;
}

int64_t checkedMul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        integerOverflow();
    return r;
}

// CPython's float floor division and modulo.
void floatDivMod(double x, double y, double& floorDiv, double& mod)
{
    mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0)
    {
        if ((y < 0) != (mod < 0))
        {
            mod += y;
            div -= 1.0;
        }
    }
    else
        mod = std::copysign(0.0, y);
    if (div != 0)
    {
        floorDiv = std::floor(div);
        if (div - floorDiv > 0.5)
            floorDiv += 1.0;
    }
    else
        floorDiv = std::copysign(0.0, x / y);
}

Value repeatSequence(const Value& sequence, int64_t times, Budget& budget)
{
    if (times <= 0)
        return sequence.isString() ? Value::string(std::string()) : Value::sequence({}, sequence.sequenceKind());
    if (sequence.isString())
    {
        budget.checkSize(sequence.str().size() * (size_t)std::min<int64_t>(times, INT32_MAX));
        std::string out;
        for (int64_t i = 0; i < times; i++)
            out += sequence.str();
        budget.chargeBytes(out.size());
        return Value::string(out, sequence.isMarkup());
    }
    const size_t n = sequence.items().size();
    budget.checkSize(n * 16 * (size_t)std::min<int64_t>(times, INT32_MAX));
    std::vector<Value> items;
    for (int64_t i = 0; i < times; i++)
        items.insert(items.end(), sequence.items().begin(), sequence.items().end());
    budget.charge((int64_t)items.size());
    return Value::sequence(std::move(items), sequence.sequenceKind());
}

} // namespace

Value arithmetic(BinaryOp op, const Value& a, const Value& b, Budget& budget)
{
    if (a.isUndefined())
        a.failUndefined();
    if (b.isUndefined())
        b.failUndefined();
    const bool numbers = a.isNumber() && b.isNumber();
    const bool integers = a.isInteger() && b.isInteger();
    switch (op)
    {
    case BinaryOp::Add:
        if (integers)
            return Value::integer(checkedAdd(a.asInt(), b.asInt()));
        if (numbers)
            return Value::number(a.asDouble() + b.asDouble());
        if (a.isString() && b.isString())
        {
            budget.checkSize(a.str().size() + b.str().size());
            budget.chargeBytes(a.str().size() + b.str().size());
            // Markup + str escapes the str (markupsafe), and so does str + Markup.
            if (a.isMarkup() != b.isMarkup())
                return Value::string((a.isMarkup() ? a.str() : escapeHtml(a.str())) +
                                     (b.isMarkup() ? b.str() : escapeHtml(b.str())), true);
            return Value::string(a.str() + b.str(), a.isMarkup());
        }
        if (a.isSequence() && b.isSequence() && (a.isList() || a.isTuple()) && a.sequenceKind() == b.sequenceKind())
        {
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            budget.charge((int64_t)items.size());
            return Value::sequence(std::move(items), a.sequenceKind());
        }
        if (a.isString() || a.isList() || a.isTuple())
            fail(ErrorKind::Type, "can only concatenate " + a.typeName() + " (not \"" + b.typeName() + "\") to " + a.typeName());
        unsupportedOperands(op, a, b);
    case BinaryOp::Sub:
        if (integers)
            return Value::integer(checkedSub(a.asInt(), b.asInt()));
        if (numbers)
            return Value::number(a.asDouble() - b.asDouble());
        unsupportedOperands(op, a, b);
    case BinaryOp::Mul:
        if (integers)
            return Value::integer(checkedMul(a.asInt(), b.asInt()));
        if (numbers)
            return Value::number(a.asDouble() * b.asDouble());
        if ((a.isString() || a.isList() || a.isTuple()) && b.isInteger())
            return repeatSequence(a, b.asInt(), budget);
        if ((b.isString() || b.isList() || b.isTuple()) && a.isInteger())
            return repeatSequence(b, a.asInt(), budget);
        if ((a.isString() || a.isList() || a.isTuple()) && b.isNumber())
            fail(ErrorKind::Type, "can't multiply sequence by non-int of type '" + b.typeName() + "'");
        unsupportedOperands(op, a, b);
    case BinaryOp::Div:
        if (!numbers)
            unsupportedOperands(op, a, b);
        if (b.asDouble() == 0)
            fail(ErrorKind::ZeroDivision, integers ? "division by zero" : "float division by zero");
        return Value::number(a.asDouble() / b.asDouble());
    case BinaryOp::FloorDiv:
    case BinaryOp::Mod:
    {
        if (op == BinaryOp::Mod && a.isString())
        {
            const std::string text = percentFormat(a.str(), b, budget);
            return Value::string(text, a.isMarkup());
        }
        if (!numbers)
            unsupportedOperands(op, a, b);
        if (integers)
        {
            const int64_t x = a.asInt(), y = b.asInt();
            if (y == 0)
                fail(ErrorKind::ZeroDivision, op == BinaryOp::Mod ? "integer modulo by zero" : "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1)
                return Value::integer(op == BinaryOp::Mod ? 0 : checkedInteger(true, 0));
            int64_t q = x / y, r = x % y;
            if (r != 0 && ((r < 0) != (y < 0)))
            {
                q -= 1;
                r += y;
            }
            return Value::integer(op == BinaryOp::Mod ? r : q);
        }
        if (b.asDouble() == 0)
            fail(ErrorKind::ZeroDivision, op == BinaryOp::Mod ? "float modulo" : "float floor division by zero");
        double floorDiv, mod;
        floatDivMod(a.asDouble(), b.asDouble(), floorDiv, mod);
        return Value::number(op == BinaryOp::Mod ? mod : floorDiv);
    }
    case BinaryOp::Pow:
    {
        if (!numbers)
            unsupportedOperands(op, a, b);
        if (integers && b.asInt() >= 0)
        {
            int64_t result = 1, base = a.asInt(), e = b.asInt();
            while (e > 0)
            {
                if (e & 1)
                    result = checkedMul(result, base);
                e >>= 1;
                if (e)
                    base = checkedMul(base, base);
            }
            return Value::integer(result);
        }
        const double x = a.asDouble(), y = b.asDouble();
        if (x == 0 && y < 0)
            fail(ErrorKind::ZeroDivision, "0.0 cannot be raised to a negative power");
        if (x < 0 && y != std::floor(y))
            fail(ErrorKind::Value, "a negative number raised to a fractional power is complex, which templates do not have");
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
            fail(ErrorKind::Overflow, "(34, 'Numerical result out of range')");
        return Value::number(r);
    }
    }
    unsupportedOperands(op, a, b);
}

Value Interpreter::eval(const Node& node)
{
    budget_.charge();
    try
    {
        return evalNode(node);
    }
    catch (TemplateError& e)
    {
        if (e.offset == kNoPosition)
            e.offset = node.offset;
        throw;
    }
}

Value Interpreter::evalNode(const Node& node)
{
    switch (node.type)
    {
    case NodeType::Const: return static_cast<const ConstNode&>(node).value;
    case NodeType::Name: return lookup(static_cast<const NameNode&>(node).name);
    case NodeType::List:
    case NodeType::Tuple:
    {
        std::vector<Value> items;
        for (const NodePtr& item : static_cast<const SequenceNode&>(node).items)
            items.push_back(eval(*item));
        return Value::sequence(std::move(items), node.type == NodeType::List ? SequenceKind::List : SequenceKind::Tuple);
    }
    case NodeType::Dict:
    {
        std::vector<std::pair<Value, Value> > entries;
        for (const auto& pair : static_cast<const DictNode&>(node).pairs)
        {
            Value key = eval(*pair.first);
            if (key.isList() || key.isDict() || key.isUndefined() || key.isGenerator())
                fail(ErrorKind::Type, "unhashable type: '" + key.typeName() + "'");
            entries.emplace_back(std::move(key), eval(*pair.second));
        }
        return Value::dict(std::move(entries));
    }
    case NodeType::Getattr:
    {
        const GetattrNode& n = static_cast<const GetattrNode&>(node);
        return getAttribute(eval(*n.object), n.attribute);
    }
    case NodeType::Getitem: return evalGetitem(static_cast<const GetitemNode&>(node));
    case NodeType::Call: return evalCall(static_cast<const CallNode&>(node));
    case NodeType::Filter: return evalFilter(static_cast<const FilterNode&>(node));
    case NodeType::Test:
    {
        const FilterNode& n = static_cast<const FilterNode&>(node);
        const Value input = eval(*n.input);
        return Value::boolean(applyTest(n.name, input, evalArguments(n.args)));
    }
    case NodeType::CondExpr:
    {
        const CondExprNode& n = static_cast<const CondExprNode&>(node);
        if (truthy(eval(*n.test)))
            return eval(*n.then);
        if (n.otherwise)
            return eval(*n.otherwise);
        return Value::undefinedWithHint("the inline if-expression evaluated to false and no else section was defined.");
    }
    case NodeType::And:
    case NodeType::Or:
    {
        const BinaryNode& n = static_cast<const BinaryNode&>(node);
        Value left = eval(*n.left);
        if (truthy(left) == (node.type == NodeType::Or))
            return left;
        return eval(*n.right);
    }
    case NodeType::Not: return Value::boolean(!truthy(eval(*static_cast<const UnaryNode&>(node).operand)));
    case NodeType::Neg:
    case NodeType::Pos:
    {
        const Value v = eval(*static_cast<const UnaryNode&>(node).operand);
        if (v.isUndefined())
            v.failUndefined();
        if (!v.isNumber())
            fail(ErrorKind::Type, std::string("bad operand type for unary ") + (node.type == NodeType::Neg ? "-" : "+") +
                                  ": '" + v.typeName() + "'");
        if (node.type == NodeType::Pos)
            return v.isBool() ? Value::integer(v.asInt()) : v;
        if (v.isFloat())
            return Value::number(-v.asDouble());
        return Value::integer(checkedSub(0, v.asInt()));
    }
    case NodeType::Binary:
    {
        const BinaryNode& n = static_cast<const BinaryNode&>(node);
        const Value left = eval(*n.left);
        const Value right = eval(*n.right);
        return arithmetic(n.op, left, right, budget_);
    }
    case NodeType::Concat:
    {
        std::string text;
        for (const NodePtr& part : static_cast<const ConcatNode&>(node).parts)
        {
            text += toStr(eval(*part), budget_);
            budget_.checkSize(text.size());
        }
        budget_.chargeBytes(text.size());
        return Value::string(text);
    }
    case NodeType::Compare: return evalCompare(static_cast<const CompareNode&>(node));
    default: fail(ErrorKind::Syntax, "this expression cannot be evaluated here");
    }
}

Value Interpreter::evalCompare(const CompareNode& node)
{
    Value left = eval(*node.first);
    for (const auto& step : node.rest)
    {
        Value right = eval(*step.second);
        bool result = false;
        switch (step.first)
        {
        case CompareOp::Eq: result = equals(left, right, budget_); break;
        case CompareOp::Ne: result = !equals(left, right, budget_); break;
        case CompareOp::In: result = contains(right, left, budget_); break;
        case CompareOp::NotIn: result = !contains(right, left, budget_); break;
        default:
        {
            const int c = compare(left, right, budget_);
            switch (step.first)
            {
            case CompareOp::Lt: result = c == -1; break;
            case CompareOp::Le: result = c == -1 || c == 0; break;
            case CompareOp::Gt: result = c == 1; break;
            default: result = c == 1 || c == 0; break;
            }
        }
        }
        if (!result)
            return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

CallArgs Interpreter::evalArguments(const CallArguments& args)
{
    CallArgs out;
    for (const NodePtr& a : args.positional)
        out.positional.push_back(eval(*a));
    for (const auto& kw : args.keywords)
        out.keywords.emplace_back(kw.first, eval(*kw.second));
    if (args.starArgs)
    {
        for (Value& v : iterate(eval(*args.starArgs), budget_))
            out.positional.push_back(std::move(v));
    }
    if (args.starKwargs)
    {
        const Value kwargs = eval(*args.starKwargs);
        if (!kwargs.isDict())
            fail(ErrorKind::Type, "argument after ** must be a mapping, not " + kwargs.typeName());
        for (const auto& entry : kwargs.entries())
        {
            if (!entry.first.isString())
                fail(ErrorKind::Type, "keywords must be strings");
            out.keywords.emplace_back(entry.first.str(), entry.second);
        }
    }
    return out;
}

Value Interpreter::evalCall(const CallNode& node, const Value* caller)
{
    const Value callee = eval(*node.callee);
    CallArgs args = evalArguments(node.args);
    if (caller)
        args.keywords.emplace_back("caller", *caller);
    return call(callee, args);
}

Value Interpreter::evalGetitem(const GetitemNode& node)
{
    const Value object = eval(*node.object);
    if (node.index->type != NodeType::Slice)
        return getItem(object, eval(*node.index));
    const SliceNode& slice = static_cast<const SliceNode&>(*node.index);
    const Value start = slice.start ? eval(*slice.start) : Value::none();
    const Value stop = slice.stop ? eval(*slice.stop) : Value::none();
    const Value step = slice.step ? eval(*slice.step) : Value::none();
    // jinja2 slices with Python's own [] (not its getitem): errors are Python's.
    if (object.isUndefined())
        object.failUndefined();
    if (object.isDict())
        fail(ErrorKind::Type, "unhashable type: 'slice'");
    const bool sliceable = object.isString() || object.isList() || object.isTuple() ||
                           (object.isSequence() && object.sequenceKind() == SequenceKind::Range);
    if (!sliceable)
        fail(ErrorKind::Type, "'" + object.typeName() + "' object is not subscriptable");
    for (const Value* bound : {&start, &stop, &step})
        if (!bound->isNone() && !bound->isInteger())
        {
            if (bound->isUndefined())
                bound->failUndefined();
            fail(ErrorKind::Type, "slice indices must be integers or None or have an __index__ method");
        }
    if (step.isInteger() && step.asInt() == 0)
        fail(ErrorKind::Value, "slice step cannot be zero");
    const int64_t stepValue = step.isNone() ? 1 : step.asInt();
    if (object.isString())
    {
        budget_.chargeBytes(object.str().size());
        return Value::string(sliceText(object.str(), !start.isNone(), start.asInt(), !stop.isNone(), stop.asInt(), stepValue),
                             object.isMarkup());
    }
    const std::vector<Value>& items = object.items();
    std::vector<Value> out;
    for (int64_t i : sliceIndices((int64_t)items.size(), !start.isNone(), start.asInt(), !stop.isNone(), stop.asInt(), stepValue))
        out.push_back(items[(size_t)i]);
    budget_.charge((int64_t)out.size());
    return Value::sequence(std::move(out), object.sequenceKind());
}

Value Interpreter::evalFilter(const FilterNode& node, const Value* blockText)
{
    Value input;
    if (!node.input)
        input = *blockText;
    else if (blockText && node.input->type == NodeType::Filter)
        input = evalFilter(static_cast<const FilterNode&>(*node.input), blockText);
    else
        input = eval(*node.input);
    return applyFilter(node.name, input, evalArguments(node.args));
}

}}}} // namespace cv::dnn::llm::jinja
