// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Methods of str, dict, list and tuple that templates call (message.content.strip(),
// tool.get('name'), ...). jinja2's ImmutableSandboxedEnvironment, which transformers uses,
// refuses the methods that modify a list or dict (append, pop, update, ...): they read as an
// Undefined whose use raises SecurityError, as there.

#include "../../precomp.hpp"
#include "builtins.hpp"
#include "interpreter.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

const char* const kStringMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "replace", "upper", "lower",
    "title", "capitalize", "swapcase", "casefold", "find", "rfind", "index", "rindex", "count", "join", "format",
    "center", "ljust", "rjust", "zfill", "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace",
    "islower", "isupper", "istitle", "partition", "rpartition", "removeprefix", "removesuffix"};
const char* const kDictMethods[] = {"get", "items", "keys", "values", "copy"};
const char* const kDictMutators[] = {"pop", "popitem", "setdefault", "update", "clear"};
const char* const kListMethods[] = {"count", "index", "copy"};
const char* const kListMutators[] = {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"};

template <size_t N>
bool inList(const char* const (&names)[N], const std::string& name)
{
    for (const char* n : names)
        if (name == n)
            return true;
    return false;
}

const std::string* optionalString(const std::string& method, const Value& v)
{
    return v.isNone() ? nullptr : &stringArgument(method, v);
}

// The part of `text` that str.find / startswith / ... look at: text[start:end] in code points.
std::string window(const std::string& text, const Value& start, const Value& end)
{
    if (start.isNone() && end.isNone())
        return text;
    return sliceText(text, !start.isNone(), start.isNone() ? 0 : integerArgument("slice", start), !end.isNone(),
                     end.isNone() ? 0 : integerArgument("slice", end), 1);
}

bool affixMatch(const std::string& method, const std::string& text, const Value& affix, bool prefix)
{
    if (affix.isTuple())
    {
        for (const Value& a : affix.items())
            if (affixMatch(method, text, a, prefix))
                return true;
        return false;
    }
    if (!affix.isString())
        fail(ErrorKind::Type, method + " first arg must be str or a tuple of str, not " + affix.typeName());
    return prefix ? startsWith(text, affix.str()) : endsWith(text, affix.str());
}

Value stringList(const std::vector<std::string>& parts)
{
    std::vector<Value> items;
    for (const std::string& p : parts)
        items.push_back(Value::string(p));
    return Value::sequence(std::move(items));
}

bool allCharacters(const std::string& text, bool (*predicate)(uint32_t))
{
    const std::vector<uint32_t> cps = codePoints(text);
    if (cps.empty())
        return false;
    for (uint32_t cp : cps)
        if (!predicate(cp))
            return false;
    return true;
}

Value callStringMethod(Interpreter& in, const Value& self, const std::string& name, const CallArgs& args)
{
    const std::string& s = self.str();
    Budget& budget = in.budget();
    budget.chargeBytes(s.size());
    const std::string method = "str." + name;
    if (name == "strip" || name == "lstrip" || name == "rstrip")
    {
        const std::vector<Value> a = bindArguments(method, args, {{"chars", Value::none()}});
        return Value::string(strip(s, optionalString(method, a[0]), name != "rstrip", name != "lstrip"), self.isMarkup());
    }
    if (name == "split" || name == "rsplit")
    {
        const std::vector<Value> a = bindArguments(method, args, {{"sep", Value::none()}, {"maxsplit", Value::integer(-1)}});
        const int64_t maxsplit = integerArgument(method, a[1]);
        const std::string* sep = optionalString(method, a[0]);
        return stringList(name == "split" ? split(s, sep, maxsplit) : rsplit(s, sep, maxsplit));
    }
    if (name == "splitlines")
    {
        const std::vector<Value> a = bindArguments(method, args, {{"keepends", Value::boolean(false)}});
        return stringList(splitLines(s, truthy(a[0])));
    }
    if (name == "startswith" || name == "endswith")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("prefix"), {"start", Value::none()}, {"end", Value::none()}});
        return Value::boolean(affixMatch(method, window(s, a[1], a[2]), a[0], name == "startswith"));
    }
    if (name == "replace")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("old"), required("new"), {"count", Value::integer(-1)}});
        return Value::string(replace(s, stringArgument(method, a[0]), stringArgument(method, a[1]), integerArgument(method, a[2]),
                                     budget.limits().maxOutputBytes), self.isMarkup());
    }
    if (name == "upper" || name == "lower" || name == "casefold" || name == "title" || name == "capitalize" || name == "swapcase")
    {
        bindArguments(method, args, {});
        const std::string r = name == "upper" ? toUpper(s) : name == "title" ? pythonTitle(s) : name == "capitalize" ? capitalize(s)
                            : name == "swapcase" ? swapCase(s) : toLower(s);
        return Value::string(r, self.isMarkup());
    }
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("sub"), {"start", Value::none()}, {"end", Value::none()}});
        const std::string text = window(s, a[1], a[2]);
        const std::string& sub = stringArgument(method, a[0]);
        if (name == "count")
            return Value::integer(countOccurrences(text, sub));
        int64_t at = find(text, sub, name[0] == 'r');
        if (at >= 0 && !a[1].isNone())
        {
            int64_t start = integerArgument(method, a[1]);
            const int64_t n = (int64_t)codePointCount(s);
            start = start < 0 ? std::max<int64_t>(0, start + n) : std::min(start, n);
            at += start;
        }
        if (at < 0 && (name == "index" || name == "rindex"))
            fail(ErrorKind::Value, "substring not found");
        return Value::integer(at);
    }
    if (name == "join")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("iterable")});
        std::string out;
        size_t i = 0;
        for (const Value& item : iterate(a[0], budget))
        {
            if (!item.isString())
                fail(ErrorKind::Type, "sequence item " + std::to_string(i) + ": expected str instance, " + item.typeName() + " found");
            out += (i++ ? s : std::string()) + item.str();
            budget.checkSize(out.size());
        }
        return Value::string(out);
    }
    if (name == "format")
        return Value::string(strFormat(s, args, budget), self.isMarkup());
    if (name == "center" || name == "ljust" || name == "rjust")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("width"), {"fillchar", Value::string(" ")}});
        const int64_t width = integerArgument(method, a[0]);
        const std::string& fill = stringArgument(method, a[1]);
        if (codePointCount(fill) != 1)
            fail(ErrorKind::Type, "The fill character must be exactly one character long");
        const int64_t n = (int64_t)codePointCount(s);
        if (width <= n)
            return self;
        budget.checkSize((size_t)width * fill.size());
        const int64_t margin = width - n;
        const int64_t left = name == "ljust" ? 0 : name == "rjust" ? margin : margin / 2 + (margin & width & 1);
        std::string out;
        for (int64_t i = 0; i < left; i++)
            out += fill;
        out += s;
        for (int64_t i = left; i < margin; i++)
            out += fill;
        return Value::string(out);
    }
    if (name == "zfill")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("width")});
        const int64_t width = integerArgument(method, a[0]);
        const int64_t n = (int64_t)codePointCount(s);
        if (width <= n)
            return self;
        budget.checkSize((size_t)width);
        const size_t signLength = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
        return Value::string(s.substr(0, signLength) + std::string((size_t)(width - n), '0') + s.substr(signLength));
    }
    if (name == "partition" || name == "rpartition")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("sep")});
        const std::string& sep = stringArgument(method, a[0]);
        if (sep.empty())
            fail(ErrorKind::Value, "empty separator");
        const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
        std::vector<Value> parts;
        if (at == std::string::npos)
            parts = name == "partition" ? std::vector<Value>{self, Value::string(""), Value::string("")}
                                        : std::vector<Value>{Value::string(""), Value::string(""), self};
        else
            parts = {Value::string(s.substr(0, at)), Value::string(sep), Value::string(s.substr(at + sep.size()))};
        return Value::sequence(std::move(parts), SequenceKind::Tuple);
    }
    if (name == "removeprefix" || name == "removesuffix")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("affix")});
        const std::string& affix = stringArgument(method, a[0]);
        if (name == "removeprefix")
            return Value::string(startsWith(s, affix) ? s.substr(affix.size()) : s);
        return Value::string(!affix.empty() && endsWith(s, affix) ? s.substr(0, s.size() - affix.size()) : s);
    }
    bindArguments(method, args, {});
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric")
        return Value::boolean(allCharacters(s, isAsciiDigit));
    if (name == "isalpha")
        return Value::boolean(allCharacters(s, isAlpha));
    if (name == "isalnum")
        return Value::boolean(allCharacters(s, [](uint32_t c) { return isAlpha(c) || isAsciiDigit(c); }));
    if (name == "isspace")
        return Value::boolean(allCharacters(s, isSpace));
    bool cased = false, lower = true, upper = true, title = true, previousCased = false;
    for (uint32_t cp : codePoints(s))
    {
        const bool u = isUpperCase(cp), l = isLowerCase(cp);
        cased = cased || u || l;
        lower = lower && !u;
        upper = upper && !l;
        if ((u && previousCased) || (l && !previousCased))
            title = false;
        previousCased = u || l;
    }
    if (name == "islower")
        return Value::boolean(cased && lower);
    if (name == "isupper")
        return Value::boolean(cased && upper);
    return Value::boolean(cased && title);  // istitle
}

Value callDictMethod(Interpreter& in, const Value& self, const std::string& name, const CallArgs& args)
{
    const std::string method = "dict." + name;
    if (name == "get")
    {
        const std::vector<Value> a = bindArguments(method, args, {required("key"), {"default", Value::none()}});
        const Value* v = self.findKey(a[0]);
        return v ? *v : a[1];
    }
    bindArguments(method, args, {});
    in.budget().charge((int64_t)self.entries().size());
    if (name == "copy")
        return self;
    std::vector<Value> items;
    for (const auto& entry : self.entries())
    {
        if (name == "keys")
            items.push_back(entry.first);
        else if (name == "values")
            items.push_back(entry.second);
        else
            items.push_back(Value::sequence({entry.first, entry.second}, SequenceKind::Tuple));
    }
    return Value::sequence(std::move(items), name == "keys" ? SequenceKind::DictKeys : name == "values" ? SequenceKind::DictValues
                                                                                                       : SequenceKind::DictItems);
}

Value callListMethod(Interpreter& in, const Value& self, const std::string& name, const CallArgs& args)
{
    const std::string method = self.typeName() + "." + name;
    if (name == "copy")
    {
        bindArguments(method, args, {});
        return self;
    }
    const std::vector<Value> a = bindArguments(method, args, {required("value")});
    int64_t count = 0, index = 0;
    for (const Value& item : self.items())
    {
        if (equals(item, a[0], in.budget()))
        {
            if (name == "index")
                return Value::integer(index);
            count++;
        }
        index++;
    }
    if (name == "index")
        fail(ErrorKind::Value, repr(a[0], in.budget()) + " is not in list");
    return Value::integer(count);
}

Value boundMethod(const Value& self, const std::string& name,
                  Value (*function)(Interpreter&, const Value&, const std::string&, const CallArgs&))
{
    return makeFunction(name, [self, name, function](Interpreter& in, const CallArgs& args) { return function(in, self, name, args); });
}

Value unsafe(const Value& self, const std::string& name)
{
    return Value::undefinedWithHint("access to attribute '" + name + "' of '" + self.typeName() + "' object is unsafe.",
                                    ErrorKind::Security);
}

} // namespace

bool findMethod(const Value& self, const std::string& name, Value& method)
{
    if (self.isString() && inList(kStringMethods, name))
        method = boundMethod(self, name, callStringMethod);
    else if (self.isDict() && inList(kDictMethods, name))
        method = boundMethod(self, name, callDictMethod);
    else if (self.isDict() && inList(kDictMutators, name))
        method = unsafe(self, name);
    else if ((self.isList() || self.isTuple()) && inList(kListMethods, name) && !(self.isTuple() && name == "copy"))
        method = boundMethod(self, name, callListMethod);
    else if (self.isList() && inList(kListMutators, name))
        method = unsafe(self, name);
    else
        return false;
    return true;
}

}}}} // namespace cv::dnn::llm::jinja
