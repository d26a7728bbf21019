// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// jinja2's filters on text and single values (jinja2/filters.py), and transformers' tojson.

#include "../../precomp.hpp"
#include "builtins.hpp"
#include "interpreter.hpp"
#include "json_bridge.hpp"
#include "pretty_print.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

// jinja2's soft_str: str(value), Markup kept as Markup.
Value softStr(const Value& v, Budget& budget)
{
    return v.isString() ? v : Value::string(toStr(v, budget));
}

Value filterDefault(Interpreter&, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("default", args, {{"default_value", Value::string("")}, {"boolean", Value::boolean(false)}});
    if (input.isUndefined() || (truthy(a[1]) && !truthy(input)))
        return a[0];
    return input;
}

Value filterUpper(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("upper", args, {});
    const Value s = softStr(input, in.budget());
    return Value::string(toUpper(s.str()), s.isMarkup());
}

Value filterLower(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("lower", args, {});
    const Value s = softStr(input, in.budget());
    return Value::string(toLower(s.str()), s.isMarkup());
}

Value filterCapitalize(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("capitalize", args, {});
    const Value s = softStr(input, in.budget());
    return Value::string(capitalize(s.str()), s.isMarkup());
}

Value filterTitle(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("title", args, {});
    // jinja2 splits before runs of "-", whitespace and opening brackets and capitalizes each piece.
    const Value s = softStr(input, in.budget());
    const std::vector<uint32_t> cps = codePoints(s.str());
    auto isBreak = [](uint32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || isSpace(c); };
    std::string out;
    size_t i = 0;
    while (i < cps.size())
    {
        size_t j = i;
        const bool breakRun = isBreak(cps[i]);
        while (j < cps.size() && isBreak(cps[j]) == breakRun)
            j++;
        const std::string piece = fromCodePoints(cps, i, j);
        out += breakRun ? piece : toUpper(fromCodePoints(cps, i, i + 1)) + toLower(fromCodePoints(cps, i + 1, j));
        i = j;
    }
    return Value::string(out, s.isMarkup());
}

Value filterTrim(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("trim", args, {{"chars", Value::none()}});
    const Value s = softStr(input, in.budget());
    const std::string* chars = a[0].isNone() ? nullptr : &stringArgument("trim", a[0]);
    return Value::string(strip(s.str(), chars, true, true), s.isMarkup());
}

Value filterString(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("string", args, {});
    return softStr(input, in.budget());
}

Value filterSafe(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("safe", args, {});
    return Value::string(toStr(input, in.budget()), true);
}

Value filterEscape(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("escape", args, {});
    if (input.isMarkup())
        return input;
    return Value::string(escapeHtml(toStr(input, in.budget())), true);
}

Value filterForceEscape(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("forceescape", args, {});
    return Value::string(escapeHtml(toStr(input, in.budget())), true);
}

Value filterReplace(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("replace", args, {required("old"), required("new"), {"count", Value::none()}});
    const int64_t count = a[2].isNone() ? -1 : integerArgument("replace", a[2]);
    const std::string text = toStr(input, in.budget());
    in.budget().chargeBytes(text.size());
    return Value::string(replace(text, toStr(a[0], in.budget()), toStr(a[1], in.budget()), count,
                                 in.budget().limits().maxOutputBytes));
}

Value filterCenter(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("center", args, {{"width", Value::integer(80)}});
    const int64_t width = integerArgument("center", a[0]);
    in.budget().checkSize((size_t)std::max<int64_t>(width, 0));
    return Value::string(center(toStr(input, in.budget()), width));
}

Value filterIndent(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("indent", args, {{"width", Value::integer(4)}, {"first", Value::boolean(false)},
                                                                {"blank", Value::boolean(false)}});
    if (input.isUndefined())
        input.failUndefined();
    if (!input.isString())
        fail(ErrorKind::Type, "indent: can only concatenate str (not \"" + input.typeName() + "\") to str");
    std::string indention;
    if (a[0].isString())
        indention = a[0].str();
    else
    {
        const int64_t width = integerArgument("indent", a[0]);
        in.budget().checkSize((size_t)std::max<int64_t>(width, 0));
        indention.assign((size_t)std::max<int64_t>(width, 0), ' ');
    }
    const std::string s = toStr(input, in.budget()) + "\n";  // jinja2's quirk for splitlines
    std::vector<std::string> lines = splitLines(s, false);
    std::string out;
    if (truthy(a[2]))
    {
        for (size_t i = 0; i < lines.size(); i++)
            out += (i ? "\n" + indention : std::string()) + lines[i];
    }
    else
    {
        out = lines.empty() ? std::string() : lines[0];
        for (size_t i = 1; i < lines.size(); i++)
            out += "\n" + (lines[i].empty() ? std::string() : indention) + lines[i];
    }
    if (truthy(a[1]))
        out = indention + out;
    in.budget().checkSize(out.size());
    return Value::string(out, input.isMarkup());
}

Value filterTruncate(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("truncate", args, {{"length", Value::integer(255)}, {"killwords", Value::boolean(false)},
                                                                  {"end", Value::string("...")}, {"leeway", Value::none()}});
    // len(s) decides; only a str can be cut (jinja2 fails on longer lists, as here).
    if (!input.isString())
    {
        const int64_t n = length(input);
        if (n <= integerArgument("truncate", a[0]) + (a[3].isNone() ? 5 : integerArgument("truncate", a[3])))
            return input;
        fail(ErrorKind::Type, "truncate: '" + input.typeName() + "' object has no attribute 'rsplit'");
    }
    const std::string s = input.str();
    const int64_t length = integerArgument("truncate", a[0]);
    const std::string end = toStr(a[2], in.budget());
    const int64_t leeway = a[3].isNone() ? 5 : integerArgument("truncate", a[3]);
    const int64_t endLength = (int64_t)codePointCount(end);
    if (length < endLength)
        fail(ErrorKind::Value, "expected length >= " + std::to_string(endLength) + ", got " + std::to_string(length));
    if (leeway < 0)
        fail(ErrorKind::Value, "expected leeway >= 0, got " + std::to_string(leeway));
    if ((int64_t)codePointCount(s) <= length + leeway)
        return Value::string(s);
    const std::string head = sliceText(s, false, 0, true, length - endLength, 1);
    if (truthy(a[1]))
        return Value::string(head + end);
    const std::string sep = " ";
    return Value::string(rsplit(head, &sep, 1)[0] + end);
}

Value filterWordcount(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("wordcount", args, {});
    int64_t words = 0;
    bool inWord = false;
    for (uint32_t cp : codePoints(toStr(input, in.budget())))
    {
        const bool wordChar = isAlpha(cp) || isAsciiDigit(cp) || cp == '_';
        if (wordChar && !inWord)
            words++;
        inWord = wordChar;
    }
    return Value::integer(words);
}

Value filterInt(Interpreter&, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("int", args, {{"default", Value::integer(0)}, {"base", Value::integer(10)}});
    if (input.isUndefined())
        input.failUndefined();  // int(Undefined) raises
    int64_t i = 0;
    double d = 0;
    if (input.isString())
    {
        if (parseInt(input.str(), (int)integerArgument("int", a[1]), i))
            return Value::integer(i);
        if (!parseFloat(input.str(), d))
            return a[0];
    }
    else if (input.isInteger())
        return Value::integer(input.asInt());
    else if (input.isFloat())
        d = input.asDouble();
    else
        return a[0];
    if (std::isnan(d))
        fail(ErrorKind::Value, "cannot convert float NaN to integer");
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
        fail(ErrorKind::Overflow, "cannot convert float infinity to integer");
    return Value::integer((int64_t)d);
}

Value filterFloat(Interpreter&, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("float", args, {{"default", Value::number(0.0)}});
    if (input.isUndefined())
        input.failUndefined();
    double d = 0;
    if (input.isNumber())
        return Value::number(input.asDouble());
    if (input.isString() && parseFloat(input.str(), d))
        return Value::number(d);
    return a[0];
}

Value filterFormat(Interpreter& in, const Value& input, const CallArgs& args)
{
    if (!args.positional.empty() && !args.keywords.empty())
        fail(ErrorKind::Runtime, "can't handle positional and keyword arguments at the same time");
    const Value s = softStr(input, in.budget());
    Value formatArgs;
    if (!args.keywords.empty())
    {
        std::vector<std::pair<Value, Value> > entries;
        for (const auto& kw : args.keywords)
            entries.emplace_back(Value::string(kw.first), kw.second);
        formatArgs = Value::dict(std::move(entries));
    }
    else
        formatArgs = Value::sequence(args.positional, SequenceKind::Tuple);
    return Value::string(percentFormat(s.str(), formatArgs, in.budget()), s.isMarkup());
}

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value filterToJson(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("tojson", args, {{"ensure_ascii", Value::boolean(false)}, {"indent", Value::none()},
                                                                {"separators", Value::none()}, {"sort_keys", Value::boolean(false)}});
    JsonDumpOptions options;
    options.ensureAscii = truthy(a[0]);
    if (!a[1].isNone())
    {
        options.indented = true;
        if (a[1].isString())
            options.indent = a[1].str();
        else
        {
            const int64_t width = integerArgument("tojson", a[1]);
            options.indent.assign((size_t)std::min<int64_t>(std::max<int64_t>(width, 0), 1000), ' ');
        }
        options.itemSeparator = ",";
    }
    if (!a[2].isNone())
    {
        const std::vector<Value> parts = iterate(a[2], in.budget());
        if (parts.size() != 2 || !parts[0].isString() || !parts[1].isString())
            fail(ErrorKind::Value, "tojson: separators must be two strings (item separator, key separator)");
        options.itemSeparator = parts[0].str();
        options.keySeparator = parts[1].str();
    }
    options.sortKeys = truthy(a[3]);
    return Value::string(dumpJson(input, options, in.budget()));
}

Value filterPprint(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("pprint", args, {});
    return Value::string(prettyFormat(input, in.budget()));
}

Value filterStriptags(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("striptags", args, {});
    std::string s = toStr(input, in.budget()), out;
    for (size_t i = 0; i < s.size(); i++)
    {
        if (s.compare(i, 4, "<!--") == 0)
        {
            const size_t end = s.find("-->", i + 4);
            if (end != std::string::npos)
            {
                i = end + 2;
                continue;
            }
        }
        if (s[i] == '<')
        {
            const size_t end = s.find('>', i);
            if (end != std::string::npos)
            {
                i = end;
                continue;
            }
        }
        out += s[i];
    }
    std::string joined;
    for (const std::string& word : split(out, nullptr, -1))
        joined += (joined.empty() ? "" : " ") + word;
    const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"}, {"&gt;", ">"}, {"&#34;", "\""}, {"&#39;", "'"},
                                                            {"&quot;", "\""}, {"&amp;", "&"}};
    for (const auto& e : entities)
        joined = replace(joined, e.first, e.second, -1, in.budget().limits().maxOutputBytes);
    return Value::string(joined);
}

Value filterFilesizeformat(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("filesizeformat", args, {{"binary", Value::boolean(false)}});
    const bool binary = truthy(a[0]);
    double bytes = 0;
    if (input.isNumber())
        bytes = input.asDouble();
    else if (!input.isString() || !parseFloat(input.str(), bytes))
        fail(ErrorKind::Value, "could not convert string to float: " + repr(input, in.budget()));
    const double base = binary ? 1024 : 1000;
    static const char* const decimal[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char* const binaryUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1)
        return Value::string("1 Byte");
    if (bytes < base)
        return Value::string(std::to_string((int64_t)bytes) + " Bytes");
    for (int i = 0; i < 8; i++)
    {
        const double unit = std::pow(base, i + 2);
        if (bytes < unit || i == 7)
        {
            char buf[64];
            snprintf(buf, sizeof(buf), "%.1f %s", base * bytes / unit, binary ? binaryUnits[i] : decimal[i]);
            return Value::string(buf);
        }
    }
    return Value::string("");
}

Value filterUrlencode(Interpreter& in, const Value& input, const CallArgs& args)
{
    bindArguments("urlencode", args, {});
    auto quote = [](const std::string& s, bool formEncoding) {
        std::string out;
        char buf[4];
        for (unsigned char c : s)
        {
            if (isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (!formEncoding && c == '/'))
                out += (char)c;
            else if (formEncoding && c == ' ')
                out += '+';
            else
            {
                snprintf(buf, sizeof(buf), "%%%02X", c);
                out += buf;
            }
        }
        return out;
    };
    const bool iterable = input.isSequence() || input.isDict() || input.isGenerator() || input.isUndefined();
    if (input.isString() || !iterable)
        return Value::string(quote(toStr(input, in.budget()), false));
    std::vector<std::pair<Value, Value> > pairs;
    if (input.isDict())
        pairs = input.entries();
    else
        for (const Value& item : iterate(input, in.budget()))
        {
            const std::vector<Value> kv = iterate(item, in.budget());
            if (kv.size() != 2)
                fail(ErrorKind::Value, "urlencode: expected pairs");
            pairs.emplace_back(kv[0], kv[1]);
        }
    std::string out;
    for (const auto& kv : pairs)
        out += (out.empty() ? "" : "&") + quote(toStr(kv.first, in.budget()), true) + "=" + quote(toStr(kv.second, in.budget()), true);
    return Value::string(out);
}

Value filterWordwrap(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("wordwrap", args, {{"width", Value::integer(79)}, {"break_long_words", Value::boolean(true)},
                                                                  {"wrapstring", Value::none()}, {"break_on_hyphens", Value::boolean(true)}});
    const int64_t width = integerArgument("wordwrap", a[0]);
    if (width <= 0)
        fail(ErrorKind::Value, "invalid width " + std::to_string(width) + " (must be > 0)");
    const std::string wrap = a[2].isNone() ? "\n" : toStr(a[2], in.budget());
    // Each paragraph line wrapped at spaces (textwrap without hyphen and long-word handling).
    std::string out;
    const std::vector<std::string> lines = splitLines(toStr(input, in.budget()), false);
    for (size_t l = 0; l < lines.size(); l++)
    {
        std::string line;
        int64_t lineLength = 0;
        std::string wrapped;
        for (const std::string& word : split(lines[l], nullptr, -1))
        {
            const int64_t n = (int64_t)codePointCount(word);
            if (lineLength > 0 && lineLength + 1 + n > width)
            {
                wrapped += (wrapped.empty() ? "" : wrap) + line;
                line.clear();
                lineLength = 0;
            }
            line += (lineLength ? " " : "") + word;
            lineLength += (lineLength ? 1 : 0) + n;
        }
        if (!line.empty())
            wrapped += (wrapped.empty() ? "" : wrap) + line;
        out += (l ? wrap : "") + wrapped;
        in.budget().checkSize(out.size());
    }
    return Value::string(out);
}

Value filterXmlattr(Interpreter& in, const Value& input, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("xmlattr", args, {{"autospace", Value::boolean(true)}});
    if (!input.isDict())
        fail(ErrorKind::Type, "xmlattr needs a mapping");
    std::string out;
    for (const auto& entry : input.entries())
    {
        if (entry.second.isNone() || entry.second.isUndefined())
            continue;
        const std::string key = toStr(entry.first, in.budget());
        for (char c : key)
            if (c == ' ' || c == '/' || c == '>' || c == '=')
                fail(ErrorKind::Value, "Invalid character in attribute name: " + reprString(key));
        out += (out.empty() ? "" : " ") + escapeHtml(key) + "=\"" + escapeHtml(toStr(entry.second, in.budget())) + "\"";
    }
    if (!out.empty() && truthy(a[0]))
        out = " " + out;
    return Value::string(out, true);
}

Value filterUnsupported(Interpreter&, const Value&, const CallArgs&)
{
    fail(ErrorKind::Runtime, "this filter (random, urlize) has no reproducible result and is not supported");
}

} // namespace

const std::vector<FilterEntry>& textFilters()
{
    static const std::vector<FilterEntry> filters = {
        {"default", filterDefault}, {"d", filterDefault}, {"upper", filterUpper}, {"lower", filterLower},
        {"capitalize", filterCapitalize}, {"title", filterTitle}, {"trim", filterTrim}, {"string", filterString},
        {"safe", filterSafe}, {"escape", filterEscape}, {"e", filterEscape}, {"forceescape", filterForceEscape},
        {"replace", filterReplace}, {"center", filterCenter}, {"indent", filterIndent}, {"truncate", filterTruncate},
        {"wordcount", filterWordcount}, {"int", filterInt}, {"float", filterFloat}, {"format", filterFormat},
        {"tojson", filterToJson}, {"pprint", filterPprint}, {"striptags", filterStriptags},
        {"filesizeformat", filterFilesizeformat}, {"urlencode", filterUrlencode}, {"wordwrap", filterWordwrap},
        {"xmlattr", filterXmlattr}, {"random", filterUnsupported}, {"urlize", filterUnsupported},
    };
    return filters;
}

}}}} // namespace cv::dnn::llm::jinja
