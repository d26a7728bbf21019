// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// jinja2's filters on sequences and mappings (jinja2/filters.py). Those that return Python
// generators there (map, select, reject, selectattr, rejectattr, unique, items, batch, slice,
// reverse) return generator values here too: always true, iterable once, no length, and not
// JSON serializable, as in jinja2.

#include "../../precomp.hpp"
#include "builtins.hpp"
#include "interpreter.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

Value ignoreCase(const Value& v, bool caseSensitive)
{
    return !caseSensitive && v.isString() ? Value::string(toLower(v.str())) : v;
}

// The value unique, min, max and groupby compare (jinja2's make_attrgetter): an attribute,
// lowercased unless case sensitive.
Value sortKey(Interpreter& in, const Value& item, const Value& attribute, bool caseSensitive)
{
    return ignoreCase(in.getAttributePath(item, attribute), caseSensitive);
}

// sort's key (make_multi_attrgetter): the list of the comma-separated attributes' values, so
// that items compare as Python compares lists (equal items, Undefined ones too, keep their order).
Value multiSortKey(Interpreter& in, const Value& item, const Value& attribute, bool caseSensitive)
{
    std::vector<Value> keys;
    if (attribute.isString())
    {
        const std::string comma = ",";
        for (const std::string& part : split(attribute.str(), &comma, -1))
            keys.push_back(sortKey(in, item, Value::string(part), caseSensitive));
    }
    else
        keys.push_back(sortKey(in, item, attribute, caseSensitive));
    return Value::sequence(std::move(keys));
}

void checkHashable(const Value& key)
{
    if (key.isList() || key.isDict() || (key.isSequence() && !key.isTuple()))
        fail(ErrorKind::Type, "unhashable type: '" + key.typeName() + "'");
}

std::vector<Value> sortedItems(Interpreter& in, std::vector<Value> items, const std::vector<Value>& keys, bool reverse)
{
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    in.budget().charge((int64_t)items.size() * 8);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return reverse ? compare(keys[b], keys[a], in.budget()) == -1 : compare(keys[a], keys[b], in.budget()) == -1;
    });
    std::vector<Value> out;
    out.reserve(items.size());
    for (size_t i : order)
        out.push_back(items[i]);
    return out;
}

Value filterLength(Interpreter&, const Value& input, const CallArgs& args)
{
    bindArguments("length", args, {});
    return Value::integer(length(input));
}

Value filterFirst(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("first", args, {});
    if (input.isGenerator())
    {
        const std::vector<Value> rest = input.takeGenerator();
        if (!rest.empty())
            return rest[0];
    }
    else
    {
        if (input.isSequence() && !input.items().empty())
            return input.items()[0];
        if (!input.isSequence())
        {
            const std::vector<Value> items = iterate(input, in.budget());
            if (!items.empty())
                return items[0];
        }
    }
    return Value::undefinedWithHint("No first item, sequence was empty.");
}

Value filterLast(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("last", args, {});
    if (input.isGenerator())
        fail(ErrorKind::Type, "'generator' object is not reversible");
    const std::vector<Value> items = input.isSequence() ? input.items() : iterate(input, in.budget());
    if (items.empty())
        return Value::undefinedWithHint("No last item, sequence was empty.");
    return items.back();
}

Value filterList(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("list", args, {});
    return Value::sequence(iterate(input, in.budget()));
}

Value filterJoin(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("join", args, {{"d", Value::string("")}, {"attribute", Value::none()}});
    const std::string separator = toStr(a[0], in.budget());
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input, in.budget()))
    {
        const Value v = in.getAttributePath(item, a[1]);
        if (!first)
            out += separator;
        first = false;
        out += toStr(v, in.budget());
        in.budget().checkSize(out.size());
        in.budget().charge();
    }
    return Value::string(out);
}

Value filterItems(Interpreter&, const Value& input, const CallArgs& args)
{
    bindArguments("items", args, {});
    if (input.isUndefined())
        return Value::generator({});
    if (!input.isDict())
        fail(ErrorKind::Type, "Can only get item pairs from a mapping.");
    std::vector<Value> pairs;
    for (const auto& entry : input.entries())
        pairs.push_back(Value::sequence({entry.first, entry.second}, SequenceKind::Tuple));
    return Value::generator(std::move(pairs));
}

Value filterDictsort(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("dictsort", args, {{"case_sensitive", Value::boolean(false)}, {"by", Value::string("key")},
                                                                  {"reverse", Value::boolean(false)}});
    if (!input.isDict())
        fail(ErrorKind::Type, "'" + input.typeName() + "' object has no attribute 'items'");
    const std::string by = toStr(a[1], in.budget());
    if (by != "key" && by != "value")
        fail(ErrorKind::Runtime, "You can only sort by either \"key\" or \"value\"");
    std::vector<Value> items, keys;
    for (const auto& entry : input.entries())
    {
        items.push_back(Value::sequence({entry.first, entry.second}, SequenceKind::Tuple));
        keys.push_back(sortKey(in, by == "key" ? entry.first : entry.second, Value::none(), truthy(a[0])));
    }
    return Value::sequence(sortedItems(in, std::move(items), keys, truthy(a[2])));
}

Value filterSort(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("sort", args, {{"reverse", Value::boolean(false)}, {"case_sensitive", Value::boolean(false)},
                                                              {"attribute", Value::none()}});
    std::vector<Value> items = iterate(input, in.budget()), keys;
    for (const Value& item : items)
        keys.push_back(multiSortKey(in, item, a[2], truthy(a[1])));
    return Value::sequence(sortedItems(in, std::move(items), keys, truthy(a[0])));
}

Value filterUnique(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("unique", args, {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}});
    std::vector<Value> out, seen;
    for (const Value& item : iterate(input, in.budget()))
    {
        const Value key = sortKey(in, item, a[1], truthy(a[0]));
        checkHashable(key);
        bool duplicate = false;
        for (const Value& s : seen)
            if (equals(s, key, in.budget()))
            {
                duplicate = true;
                break;
            }
        if (!duplicate)
        {
            seen.push_back(key);
            out.push_back(item);
        }
    }
    return Value::generator(std::move(out));
}

Value minOrMax(Interpreter& in, const Value& input, const CallArgs& args, bool wantMax, const char* name)
{
    const std::vector<Value> a = bindArguments(name, args, {{"case_sensitive", Value::boolean(false)}, {"attribute", Value::none()}});
    const std::vector<Value> items = iterate(input, in.budget());
    if (items.empty())
        return Value::undefinedWithHint("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value bestKey = sortKey(in, items[0], a[1], truthy(a[0]));
    for (size_t i = 1; i < items.size(); i++)
    {
        const Value key = sortKey(in, items[i], a[1], truthy(a[0]));
        if (compare(key, bestKey, in.budget()) == (wantMax ? 1 : -1))
        {
            best = i;
            bestKey = key;
        }
    }
    return items[best];
}

Value filterMin(Interpreter& in, const Value& input, const CallArgs& args) { return minOrMax(in, input, args, false, "min"); }
Value filterMax(Interpreter& in, const Value& input, const CallArgs& args) { return minOrMax(in, input, args, true, "max"); }

Value filterSum(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("sum", args, {{"attribute", Value::none()}, {"start", Value::integer(0)}});
    Value total = a[1];
    for (const Value& item : iterate(input, in.budget()))
    {
        const Value v = in.getAttributePath(item, a[0]);
        total = arithmetic(BinaryOp::Add, total, v, in.budget());
    }
    return total;
}

Value filterAbs(Interpreter&, const Value& input, const CallArgs& args)
{
    bindArguments("abs", args, {});
    if (input.isFloat())
        return Value::number(std::fabs(input.asDouble()));
    if (input.isInteger())
    {
        if (input.asInt() == INT64_MIN)
            fail(ErrorKind::Overflow, "integer result does not fit in 64 bits");
        return Value::integer(input.asInt() < 0 ? -input.asInt() : input.asInt());
    }
    if (input.isUndefined())
        input.failUndefined();
    fail(ErrorKind::Type, "bad operand type for abs(): '" + input.typeName() + "'");
}

Value filterRound(Interpreter&, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("round", args, {{"precision", Value::integer(0)}, {"method", Value::string("common")}});
    const std::string method = a[1].isString() ? a[1].str() : std::string();
    if (method != "common" && method != "ceil" && method != "floor")
        fail(ErrorKind::Runtime, "method must be common, ceil or floor");
    const int64_t precision = integerArgument("round", a[0]);
    if (input.isUndefined())
        input.failUndefined();
    if (!input.isNumber())
        fail(ErrorKind::Type, "type " + input.typeName() + " doesn't define __round__ method");
    if (method == "common")
    {
        if (input.isInteger())
            return Value::integer(input.asInt());  // round(int, n) stays an int
        return Value::number(roundHalfEven(input.asDouble(), (int)std::max<int64_t>(-400, std::min<int64_t>(precision, 400))));
    }
    const double scale = std::pow(10.0, (double)precision);
    const double v = input.asDouble() * scale;
    return Value::number((method == "ceil" ? std::ceil(v) : std::floor(v)) / scale);
}

Value filterReverse(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("reverse", args, {});
    if (input.isString())
        return Value::string(sliceText(input.str(), false, 0, false, 0, -1), input.isMarkup());
    std::vector<Value> items = iterate(input, in.budget());
    std::reverse(items.begin(), items.end());
    if (input.isGenerator())
        return Value::sequence(std::move(items));
    return Value::generator(std::move(items), input.isDict() ? "dict_reversekeyiterator" : "list_reverseiterator");
}

Value filterBatch(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("batch", args, {required("linecount"), {"fill_with", Value::none()}});
    const int64_t count = integerArgument("batch", a[0]);
    if (count <= 0)
        fail(ErrorKind::Value, "batch: linecount must be positive");
    std::vector<Value> batches, current;
    for (const Value& item : iterate(input, in.budget()))
    {
        current.push_back(item);
        if ((int64_t)current.size() == count)
        {
            batches.push_back(Value::sequence(std::move(current)));
            current.clear();
        }
    }
    if (!current.empty())
    {
        if (!a[1].isNone())
            while ((int64_t)current.size() < count)
                current.push_back(a[1]);
        batches.push_back(Value::sequence(std::move(current)));
    }
    return Value::generator(std::move(batches));
}

Value filterSlice(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("slice", args, {required("slices"), {"fill_with", Value::none()}});
    const int64_t slices = integerArgument("slice", a[0]);
    if (slices <= 0)
        fail(ErrorKind::ZeroDivision, "integer division or modulo by zero");
    const std::vector<Value> items = iterate(input, in.budget());
    const int64_t n = (int64_t)items.size(), perSlice = n / slices, withExtra = n % slices;
    std::vector<Value> out;
    int64_t offset = 0;
    for (int64_t s = 0; s < slices; s++)
    {
        const int64_t start = offset + s * perSlice;
        if (s < withExtra)
            offset++;
        const int64_t end = offset + (s + 1) * perSlice;
        std::vector<Value> part(items.begin() + start, items.begin() + end);
        if (!a[1].isNone() && s >= withExtra)
            part.push_back(a[1]);
        out.push_back(Value::sequence(std::move(part)));
    }
    return Value::generator(std::move(out));
}

// map('filter', args...) or map(attribute='a.b', default=x).
Value filterMap(Interpreter& in, const Value& input, const CallArgs& args)
{
    if (!truthy(input))  // jinja2: `if value:` before iterating
        return Value::generator({});
    const std::vector<Value> items = iterate(input, in.budget());
    std::vector<Value> out;
    if (args.positional.empty())
    {
        const Value* attribute = args.keyword("attribute");
        if (!attribute)
        {
            if (!args.keywords.empty())
                fail(ErrorKind::Runtime, "Unexpected keyword argument '" + args.keywords[0].first + "'");
            return Value::generator(items);
        }
        const Value* fallback = args.keyword("default");
        for (const auto& kw : args.keywords)
            if (kw.first != "attribute" && kw.first != "default")
                fail(ErrorKind::Runtime, "Unexpected keyword argument '" + kw.first + "'");
        for (const Value& item : items)
            out.push_back(in.getAttributePath(item, *attribute, fallback && !fallback->isNone() ? fallback : nullptr));
        return Value::generator(std::move(out));
    }
    const std::string name = toStr(args.positional[0], in.budget());
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    for (const Value& item : items)
        out.push_back(in.applyFilter(name, item, rest));
    return Value::generator(std::move(out));
}

// select / reject (attribute empty) and selectattr / rejectattr.
Value selectOrReject(Interpreter& in, const Value& input, const CallArgs& args, bool byAttribute, bool keep)
{
    if (!truthy(input))  // jinja2: `if value:` before iterating
        return Value::generator({});
    size_t next = 0;
    Value attribute;
    if (byAttribute)
    {
        if (args.positional.empty())
            fail(ErrorKind::Runtime, "Missing parameter for attribute name");
        attribute = args.positional[next++];
    }
    std::string test;
    CallArgs testArgs;
    if (next < args.positional.size())
    {
        test = toStr(args.positional[next++], in.budget());
        testArgs.positional.assign(args.positional.begin() + (std::ptrdiff_t)next, args.positional.end());
        testArgs.keywords = args.keywords;
    }
    std::vector<Value> out;
    for (const Value& item : iterate(input, in.budget()))
    {
        const Value v = byAttribute ? in.getAttributePath(item, attribute) : item;
        const bool passes = test.empty() ? truthy(v) : in.applyTest(test, v, testArgs);
        if (passes == keep)
            out.push_back(item);
    }
    return Value::generator(std::move(out));
}

Value filterSelect(Interpreter& in, const Value& input, const CallArgs& args) { return selectOrReject(in, input, args, false, true); }
Value filterReject(Interpreter& in, const Value& input, const CallArgs& args) { return selectOrReject(in, input, args, false, false); }
Value filterSelectattr(Interpreter& in, const Value& input, const CallArgs& args) { return selectOrReject(in, input, args, true, true); }
Value filterRejectattr(Interpreter& in, const Value& input, const CallArgs& args) { return selectOrReject(in, input, args, true, false); }

Value filterGroupby(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("groupby", args, {required("attribute"), {"default", Value::none()},
                                                                 {"case_sensitive", Value::boolean(false)}});
    std::vector<Value> items = iterate(input, in.budget()), keys;
    const Value* fallback = a[1].isNone() ? nullptr : &a[1];
    for (const Value& item : items)
        keys.push_back(ignoreCase(in.getAttributePath(item, a[0], fallback), truthy(a[2])));
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); i++)
        order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return compare(keys[x], keys[y], in.budget()) == -1; });
    std::vector<Value> groups;
    for (size_t i = 0; i < order.size();)
    {
        std::vector<Value> members;
        size_t j = i;
        while (j < order.size() && equals(keys[order[j]], keys[order[i]], in.budget()))
            members.push_back(items[order[j++]]);
        // The grouper is the first member's own value, not its lowercased key.
        const Value grouper = in.getAttributePath(members[0], a[0], fallback);
        groups.push_back(Value::sequence({grouper, Value::sequence(std::move(members))}, SequenceKind::GroupTuple));
        i = j;
    }
    return Value::sequence(std::move(groups));
}

Value filterAttr(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("attr", args, {required("name")});
    const std::string name = toStr(a[0], in.budget());
    if (input.isDict())
    {
        Value method;
        if (findMethod(input, name, method))
            return method;
        return Value::undefinedMember(input, a[0]);
    }
    return in.getAttribute(input, name);
}

} // namespace

const std::vector<FilterEntry>& sequenceFilters()
{
    static const std::vector<FilterEntry> filters = {
        {"length", filterLength}, {"count", filterLength}, {"first", filterFirst}, {"last", filterLast},
        {"list", filterList}, {"join", filterJoin}, {"items", filterItems}, {"dictsort", filterDictsort},
        {"sort", filterSort}, {"unique", filterUnique}, {"min", filterMin}, {"max", filterMax}, {"sum", filterSum},
        {"abs", filterAbs}, {"round", filterRound}, {"reverse", filterReverse}, {"batch", filterBatch},
        {"slice", filterSlice}, {"map", filterMap}, {"select", filterSelect}, {"reject", filterReject},
        {"selectattr", filterSelectattr}, {"rejectattr", filterRejectattr}, {"groupby", filterGroupby},
        {"attr", filterAttr},
    };
    return filters;
}

}}}} // namespace cv::dnn::llm::jinja
