// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "value.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include "../common/unicode_tables.hpp"

#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

struct StringData : HeapValue
{
    explicit StringData(std::string t) : text(std::move(t)) {}
    std::string text;
};

struct SequenceData : HeapValue
{
    SequenceKind kind = SequenceKind::List;
    std::vector<Value> items;
    int depth = 1;
};

struct DictData : HeapValue
{
    std::vector<std::pair<Value, Value> > entries;
    std::unordered_map<std::string, size_t> stringKeys;  // index of each string key
    int depth = 1;
};

struct GeneratorData : HeapValue
{
    std::string typeName;
    std::vector<Value> items;
    size_t position = 0;
};

struct UndefinedData : HeapValue
{
    std::string name;         // variable or attribute name (or the repr of a non-string key)
    bool hasOwner = false;
    bool nameIsString = true;
    std::string ownerType;    // "dict object", "None", ...
    std::string hint;
    ErrorKind kind = ErrorKind::Undefined;
};

const std::string kEmpty;
const std::vector<Value> kNoItems;
const std::vector<std::pair<Value, Value> > kNoEntries;

int depthOf(const Value& v) { return v.depth(); }

void checkDepth(int depth)
{
    if (depth > kMaxValueDepth)
        fail(ErrorKind::Limit, "lists and dicts nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
}

void checkRecursion(int depth)
{
    if (depth > kMaxRecursion)
        fail(ErrorKind::Limit, "values nested deeper than " + std::to_string(kMaxRecursion) +
                               " levels (a namespace that contains itself?)");
}

// Python's object_type_repr: "dict object", "None".
std::string objectTypeRepr(const Value& v)
{
    if (v.isNone())
        return "None";
    return v.typeName() + " object";
}

bool isPrintable(uint32_t cp)
{
    if (cp < 0x20 || cp == 0x7F)
        return false;
    if (cp < 0x7F)
        return true;
    return !unicode::isControl(cp) && !isSpace(cp) && cp != 0x2028 && cp != 0x2029 && !(cp >= 0xD800 && cp <= 0xDFFF);
}

// Python hashes 1, 1.0 and True alike: dict keys compare that way.
bool sameKey(const Value& a, const Value& b)
{
    if (a.isString() || b.isString())
        return a.isString() && b.isString() && a.str() == b.str();
    if (a.isNumber() && b.isNumber())
        return a.asDouble() == b.asDouble();
    if (a.isNone() || b.isNone())
        return a.isNone() && b.isNone();
    Budget budget{RenderLimits()};
    return equals(a, b, budget);
}

} // namespace

Value Object::getAttribute(const std::string& name) const
{
    return Value::undefinedWithHint("'" + typeName() + " object' has no attribute '" + name + "'");
}

Value Object::call(Interpreter&, const CallArgs&)
{
    fail(ErrorKind::Type, "'" + typeName() + "' object is not callable");
}

std::string Object::repr(Budget&, int) const { return "<" + typeName() + " object>"; }

Value Value::undefinedName(const std::string& name)
{
    auto data = std::make_shared<UndefinedData>();
    data->name = name;
    Value v;
    v.heap_ = data;
    return v;
}

Value Value::undefinedMember(const Value& owner, const Value& name)
{
    auto data = std::make_shared<UndefinedData>();
    data->hasOwner = true;
    data->ownerType = objectTypeRepr(owner);
    data->nameIsString = name.isString();
    Budget budget{RenderLimits()};
    data->name = name.isString() ? name.str() : jinja::repr(name, budget);
    Value v;
    v.heap_ = data;
    return v;
}

Value Value::undefinedWithHint(const std::string& hint, ErrorKind kind)
{
    auto data = std::make_shared<UndefinedData>();
    data->hint = hint;
    data->kind = kind;
    Value v;
    v.heap_ = data;
    return v;
}

Value Value::none()
{
    Value v;
    v.kind_ = ValueKind::None;
    return v;
}

Value Value::boolean(bool b)
{
    Value v;
    v.kind_ = ValueKind::Bool;
    v.b_ = b;
    return v;
}

Value Value::integer(int64_t i)
{
    Value v;
    v.kind_ = ValueKind::Int;
    v.i_ = i;
    return v;
}

Value Value::number(double d)
{
    Value v;
    v.kind_ = ValueKind::Float;
    v.d_ = d;
    return v;
}

Value Value::string(std::string text, bool markup)
{
    Value v;
    v.kind_ = ValueKind::String;
    v.markup_ = markup;
    v.heap_ = std::make_shared<StringData>(std::move(text));
    return v;
}

Value Value::sequence(std::vector<Value> items, SequenceKind kind)
{
    auto data = std::make_shared<SequenceData>();
    int depth = 0;
    for (const Value& item : items)
        depth = std::max(depth, depthOf(item));
    checkDepth(depth + 1);
    data->depth = depth + 1;
    data->kind = kind;
    data->items = std::move(items);
    Value v;
    v.kind_ = ValueKind::Sequence;
    v.heap_ = data;
    return v;
}

Value Value::dict(std::vector<std::pair<Value, Value> > entries)
{
    auto data = std::make_shared<DictData>();
    int depth = 0;
    for (auto& entry : entries)
    {
        depth = std::max(depth, std::max(depthOf(entry.first), depthOf(entry.second)));
        // A repeated key keeps its first position and takes the last value, as in Python.
        if (entry.first.isString())
        {
            const auto it = data->stringKeys.find(entry.first.str());
            if (it != data->stringKeys.end())
            {
                data->entries[it->second].second = std::move(entry.second);
                continue;
            }
            data->stringKeys.emplace(entry.first.str(), data->entries.size());
        }
        else
        {
            bool replaced = false;
            for (auto& existing : data->entries)
                if (!existing.first.isString() && sameKey(existing.first, entry.first))
                {
                    existing.second = std::move(entry.second);
                    replaced = true;
                    break;
                }
            if (replaced)
                continue;
        }
        data->entries.push_back(std::move(entry));
    }
    checkDepth(depth + 1);
    data->depth = depth + 1;
    Value v;
    v.kind_ = ValueKind::Dict;
    v.heap_ = data;
    return v;
}

Value Value::generator(std::vector<Value> items, const char* typeName)
{
    auto data = std::make_shared<GeneratorData>();
    data->typeName = typeName;
    data->items = std::move(items);
    Value v;
    v.kind_ = ValueKind::Generator;
    v.heap_ = data;
    return v;
}

Value Value::object(std::shared_ptr<Object> object)
{
    Value v;
    v.kind_ = ValueKind::Object;
    v.heap_ = std::move(object);
    return v;
}

double Value::asDouble() const
{
    switch (kind_)
    {
    case ValueKind::Bool: return b_ ? 1.0 : 0.0;
    case ValueKind::Int: return (double)i_;
    case ValueKind::Float: return d_;
    default: return 0;
    }
}

const std::string& Value::str() const
{
    return kind_ == ValueKind::String ? static_cast<const StringData*>(heap_.get())->text : kEmpty;
}

SequenceKind Value::sequenceKind() const
{
    return kind_ == ValueKind::Sequence ? static_cast<const SequenceData*>(heap_.get())->kind : SequenceKind::List;
}

const std::vector<Value>& Value::items() const
{
    return kind_ == ValueKind::Sequence ? static_cast<const SequenceData*>(heap_.get())->items : kNoItems;
}

const std::vector<std::pair<Value, Value> >& Value::entries() const
{
    return kind_ == ValueKind::Dict ? static_cast<const DictData*>(heap_.get())->entries : kNoEntries;
}

const Value* Value::findKey(const std::string& key) const
{
    if (kind_ != ValueKind::Dict)
        return nullptr;
    const DictData* data = static_cast<const DictData*>(heap_.get());
    const auto it = data->stringKeys.find(key);
    return it == data->stringKeys.end() ? nullptr : &data->entries[it->second].second;
}

const Value* Value::findKey(const Value& key) const
{
    if (kind_ != ValueKind::Dict)
        return nullptr;
    if (key.isString())
        return findKey(key.str());
    for (const auto& entry : entries())
        if (!entry.first.isString() && sameKey(entry.first, key))
            return &entry.second;
    return nullptr;
}

int Value::depth() const
{
    if (kind_ == ValueKind::Sequence)
        return static_cast<const SequenceData*>(heap_.get())->depth;
    if (kind_ == ValueKind::Dict)
        return static_cast<const DictData*>(heap_.get())->depth;
    return 0;
}

Object* Value::object() const
{
    return kind_ == ValueKind::Object ? static_cast<Object*>(heap_.get()) : nullptr;
}

std::vector<Value> Value::takeGenerator() const
{
    GeneratorData* data = static_cast<GeneratorData*>(heap_.get());
    std::vector<Value> rest(data->items.begin() + (std::ptrdiff_t)data->position, data->items.end());
    data->position = data->items.size();
    return rest;
}

std::string Value::typeName() const
{
    switch (kind_)
    {
    case ValueKind::Undefined: return "Undefined";
    case ValueKind::None: return "NoneType";
    case ValueKind::Bool: return "bool";
    case ValueKind::Int: return "int";
    case ValueKind::Float: return "float";
    case ValueKind::String: return markup_ ? "Markup" : "str";
    case ValueKind::Sequence:
        switch (sequenceKind())
        {
        case SequenceKind::List: return "list";
        case SequenceKind::Tuple: return "tuple";
        case SequenceKind::DictKeys: return "dict_keys";
        case SequenceKind::DictValues: return "dict_values";
        case SequenceKind::DictItems: return "dict_items";
        case SequenceKind::Range: return "range";
        case SequenceKind::GroupTuple: return "_GroupTuple";
        }
        return "list";
    case ValueKind::Dict: return "dict";
    case ValueKind::Generator: return static_cast<const GeneratorData*>(heap_.get())->typeName;
    case ValueKind::Object: return object()->typeName();
    }
    return "object";
}

std::string Value::undefinedMessage() const
{
    const UndefinedData* data = heap_ ? dynamic_cast<const UndefinedData*>(heap_.get()) : nullptr;
    if (!data)
        return "undefined value";
    if (!data->hint.empty())
        return data->hint;
    if (!data->hasOwner)
        return "'" + data->name + "' is undefined";
    if (!data->nameIsString)
        return data->ownerType + " has no element " + data->name;
    return "'" + data->ownerType + "' has no attribute '" + data->name + "'";
}

ErrorKind Value::undefinedErrorKind() const
{
    const UndefinedData* data = heap_ ? dynamic_cast<const UndefinedData*>(heap_.get()) : nullptr;
    return data ? data->kind : ErrorKind::Undefined;
}

void Value::failUndefined() const
{
    fail(undefinedErrorKind(), undefinedMessage());
}

const Value* CallArgs::keyword(const std::string& name) const
{
    for (const auto& kw : keywords)
        if (kw.first == name)
            return &kw.second;
    return nullptr;
}

bool truthy(const Value& v)
{
    switch (v.kind())
    {
    case ValueKind::Undefined:
    case ValueKind::None: return false;
    case ValueKind::Bool: return v.asBool();
    case ValueKind::Int: return v.asInt() != 0;
    case ValueKind::Float: return v.asDouble() != 0;
    case ValueKind::String: return !v.str().empty();
    case ValueKind::Sequence: return !v.items().empty();
    case ValueKind::Dict: return !v.entries().empty();
    case ValueKind::Generator:
    case ValueKind::Object: return true;
    }
    return false;
}

bool equals(const Value& a, const Value& b, Budget& budget, int depth)
{
    checkRecursion(depth);
    budget.charge();
    if (a.isUndefined() || b.isUndefined())
        return a.isUndefined() && b.isUndefined();
    if (a.isNumber() && b.isNumber())
    {
        if (a.isInteger() && b.isInteger())
            return a.asInt() == b.asInt();
        return a.asDouble() == b.asDouble();
    }
    if (a.kind() != b.kind())
        return false;
    switch (a.kind())
    {
    case ValueKind::None: return true;
    case ValueKind::String: budget.chargeBytes(a.str().size()); return a.str() == b.str();
    case ValueKind::Sequence:
    {
        const bool aList = a.sequenceKind() == SequenceKind::List, bList = b.sequenceKind() == SequenceKind::List;
        if (aList != bList || a.isTuple() != b.isTuple() || a.items().size() != b.items().size())
            return false;
        for (size_t i = 0; i < a.items().size(); i++)
            if (!equals(a.items()[i], b.items()[i], budget, depth + 1))
                return false;
        return true;
    }
    case ValueKind::Dict:
    {
        if (a.entries().size() != b.entries().size())
            return false;
        for (const auto& entry : a.entries())
        {
            const Value* other = b.findKey(entry.first);
            if (!other || !equals(entry.second, *other, budget, depth + 1))
                return false;
        }
        return true;
    }
    default: return a.object() == b.object() && a.kind() == ValueKind::Object;
    }
}

int compare(const Value& a, const Value& b, Budget& budget, int depth)
{
    checkRecursion(depth);
    budget.charge();
    if (a.isUndefined())
        a.failUndefined();
    if (b.isUndefined())
        b.failUndefined();
    if (a.isNumber() && b.isNumber())
    {
        if (a.isInteger() && b.isInteger())
            return a.asInt() < b.asInt() ? -1 : a.asInt() > b.asInt() ? 1 : 0;
        const double x = a.asDouble(), y = b.asDouble();
        if (std::isnan(x) || std::isnan(y))
            return 2;  // unordered: every comparison is false
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (a.isString() && b.isString())
    {
        budget.chargeBytes(std::min(a.str().size(), b.str().size()));
        const int c = a.str().compare(b.str());
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    if (a.isSequence() && b.isSequence() && a.sequenceKind() == b.sequenceKind() &&
        (a.isList() || a.isTuple()))
    {
        const std::vector<Value>& x = a.items();
        const std::vector<Value>& y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); i++)
            if (!equals(x[i], y[i], budget, depth + 1))
                return compare(x[i], y[i], budget, depth + 1);
        return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
    }
    fail(ErrorKind::Type, "'<' not supported between instances of '" + a.typeName() + "' and '" + b.typeName() + "'");
}

std::string reprString(const std::string& text)
{
    const bool hasSingle = text.find('\'') != std::string::npos;
    const bool hasDouble = text.find('"') != std::string::npos;
    const char quote = (hasSingle && !hasDouble) ? '"' : '\'';
    std::string out(1, quote);
    char buf[16];
    for (uint32_t cp : codePoints(text))
    {
        if (cp == (uint32_t)quote || cp == '\\')
        {
            out += '\\';
            out += (char)cp;
        }
        else if (cp == '\t')
            out += "\\t";
        else if (cp == '\n')
            out += "\\n";
        else if (cp == '\r')
            out += "\\r";
        else if (isPrintable(cp))
            out += fromCodePoint(cp);
        else
        {
            if (cp <= 0xFF)
                snprintf(buf, sizeof(buf), "\\x%02x", cp);
            else if (cp <= 0xFFFF)
                snprintf(buf, sizeof(buf), "\\u%04x", cp);
            else
                snprintf(buf, sizeof(buf), "\\U%08x", cp);
            out += buf;
        }
    }
    out += quote;
    return out;
}

std::string toStr(const Value& v, Budget& budget, int depth)
{
    switch (v.kind())
    {
    case ValueKind::Undefined: return std::string();
    case ValueKind::None: return "None";
    case ValueKind::Bool: return v.asBool() ? "True" : "False";
    case ValueKind::Int: return std::to_string(v.asInt());
    case ValueKind::Float: return formatFloat(v.asDouble());
    case ValueKind::String: return v.str();
    case ValueKind::Generator: return "<" + v.typeName() + " object>";
    case ValueKind::Object: return v.object()->repr(budget, depth);
    default: return repr(v, budget, depth);
    }
}

std::string repr(const Value& v, Budget& budget, int depth)
{
    checkRecursion(depth);
    budget.charge();
    switch (v.kind())
    {
    case ValueKind::Undefined: return "Undefined";
    case ValueKind::String:
        budget.chargeBytes(v.str().size());
        return v.isMarkup() ? "Markup(" + reprString(v.str()) + ")" : reprString(v.str());
    case ValueKind::Sequence:
    {
        const std::vector<Value>& items = v.items();
        std::string open = "[", close = "]";
        switch (v.sequenceKind())
        {
        case SequenceKind::Tuple: open = "("; close = items.size() == 1 ? ",)" : ")"; break;
        case SequenceKind::GroupTuple: open = "("; close = ")"; break;
        case SequenceKind::DictKeys: open = "dict_keys(["; close = "])"; break;
        case SequenceKind::DictValues: open = "dict_values(["; close = "])"; break;
        case SequenceKind::DictItems: open = "dict_items(["; close = "])"; break;
        case SequenceKind::Range:
        {
            // range(start, stop[, step]) from its items: chat templates only print plain ranges.
            const int64_t start = items.empty() ? 0 : items[0].asInt();
            const int64_t step = items.size() > 1 ? items[1].asInt() - items[0].asInt() : 1;
            const int64_t stop = items.empty() ? 0 : items.back().asInt() + step;
            return "range(" + std::to_string(start) + ", " + std::to_string(stop) +
                   (step != 1 ? ", " + std::to_string(step) : std::string()) + ")";
        }
        default: break;
        }
        std::string out = open;
        for (size_t i = 0; i < items.size(); i++)
        {
            if (i)
                out += ", ";
            out += repr(items[i], budget, depth + 1);
            budget.checkSize(out.size());
        }
        return out + close;
    }
    case ValueKind::Dict:
    {
        std::string out = "{";
        bool first = true;
        for (const auto& entry : v.entries())
        {
            if (!first)
                out += ", ";
            first = false;
            out += repr(entry.first, budget, depth + 1) + ": " + repr(entry.second, budget, depth + 1);
            budget.checkSize(out.size());
        }
        return out + "}";
    }
    default: return toStr(v, budget, depth);
    }
}

bool contains(const Value& container, const Value& item, Budget& budget)
{
    switch (container.kind())
    {
    case ValueKind::Undefined: return false;
    case ValueKind::String:
        if (!item.isString())
            fail(ErrorKind::Type, "'in <string>' requires string as left operand, not " + item.typeName());
        budget.chargeBytes(container.str().size());
        return container.str().find(item.str()) != std::string::npos;
    case ValueKind::Sequence:
        for (const Value& element : container.items())
            if (equals(element, item, budget))
                return true;
        return false;
    case ValueKind::Dict:
        if (item.isSequence() && !item.isTuple())
            fail(ErrorKind::Type, "unhashable type: '" + item.typeName() + "'");
        if (item.isDict())
            fail(ErrorKind::Type, "unhashable type: 'dict'");
        return container.findKey(item) != nullptr;
    case ValueKind::Generator:
        for (const Value& element : container.takeGenerator())
            if (equals(element, item, budget))
                return true;
        return false;
    default:
        fail(ErrorKind::Type, "argument of type '" + container.typeName() + "' is not iterable");
    }
}

std::vector<Value> iterate(const Value& value, Budget& budget)
{
    switch (value.kind())
    {
    case ValueKind::Undefined: return std::vector<Value>();
    case ValueKind::String:
    {
        std::vector<Value> chars;
        budget.chargeBytes(value.str().size());
        for (uint32_t cp : codePoints(value.str()))
            chars.push_back(Value::string(fromCodePoint(cp)));
        return chars;
    }
    case ValueKind::Sequence: return value.items();
    case ValueKind::Dict:
    {
        std::vector<Value> keys;
        for (const auto& entry : value.entries())
            keys.push_back(entry.first);
        return keys;
    }
    case ValueKind::Generator: return value.takeGenerator();
    default: fail(ErrorKind::Type, "'" + value.typeName() + "' object is not iterable");
    }
}

int64_t length(const Value& value)
{
    switch (value.kind())
    {
    case ValueKind::Undefined: return 0;
    case ValueKind::String: return (int64_t)codePointCount(value.str());
    case ValueKind::Sequence: return (int64_t)value.items().size();
    case ValueKind::Dict: return (int64_t)value.entries().size();
    default: fail(ErrorKind::Type, "object of type '" + value.typeName() + "' has no len()");
    }
}

}}}} // namespace cv::dnn::llm::jinja
