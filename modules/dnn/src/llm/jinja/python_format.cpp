// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include <charconv>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

std::string cformat(const char* fmt, ...)
{
    char buf[512];
    va_list args;
    va_start(args, fmt);
    const int n = vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    if (n < 0)
        return std::string();
    if ((size_t)n < sizeof(buf))
        return std::string(buf, (size_t)n);
    std::string out((size_t)n + 1, '\0');
    va_start(args, fmt);
    vsnprintf(&out[0], out.size(), fmt, args);
    va_end(args);
    out.resize((size_t)n);
    return out;
}

std::string removeUnderscoresBetweenDigits(const std::string& text, bool& ok)
{
    std::string out;
    ok = true;
    for (size_t i = 0; i < text.size(); i++)
    {
        if (text[i] == '_')
        {
            if (i == 0 || i + 1 == text.size() || !isalnum((unsigned char)text[i - 1]) ||
                !isalnum((unsigned char)text[i + 1]))
                ok = false;
            continue;
        }
        out += text[i];
    }
    return out;
}

std::string padded(const std::string& body, int64_t width, char align, const std::string& fill, size_t signLength)
{
    const int64_t n = (int64_t)codePointCount(body);
    if (width <= n)
        return body;
    const int64_t pad = width - n;
    auto repeat = [&](int64_t k) {
        std::string s;
        for (int64_t i = 0; i < k; i++)
            s += fill;
        return s;
    };
    switch (align)
    {
    case '<': return body + repeat(pad);
    case '^': return repeat(pad / 2) + body + repeat(pad - pad / 2);
    case '=': return body.substr(0, signLength) + repeat(pad) + body.substr(signLength);
    default: return repeat(pad) + body;
    }
}

std::string groupDigits(const std::string& digits, char separator, int group)
{
    std::string out;
    const int n = (int)digits.size();
    for (int i = 0; i < n; i++)
    {
        if (i > 0 && (n - i) % group == 0)
            out += separator;
        out += digits[i];
    }
    return out;
}

const Value& argumentAt(const std::vector<Value>& args, size_t& next)
{
    if (next >= args.size())
        fail(ErrorKind::Type, "not enough arguments for format string");
    return args[next++];
}

double toDouble(const Value& v, char conversion)
{
    if (v.isNumber())
        return v.asDouble();
    fail(ErrorKind::Type, std::string("must be real number, not ") + v.typeName() + " (%" + conversion + " format)");
}

int64_t toInteger(const Value& v, char conversion)
{
    if (v.isInteger())
        return v.asInt();
    if (v.isFloat() && (conversion == 'd' || conversion == 'i' || conversion == 'u'))
    {
        const double d = v.asDouble();
        if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
            fail(ErrorKind::Overflow, "cannot convert float to integer");
        return (int64_t)d;
    }
    fail(ErrorKind::Type, std::string("%") + conversion + " format: an integer is required, not " + v.typeName());
}

} // namespace

std::string formatFloat(double value)
{
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value < 0 ? "-inf" : "inf";
    if (value == 0)
        return std::signbit(value) ? "-0.0" : "0.0";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    const std::string sci(buf, r.ptr);  // e.g. "-1.2345e+17": shortest round-trip digits
    const bool negative = sci[0] == '-';
    const size_t ePos = sci.find('e');
    std::string digits;
    for (size_t i = negative ? 1 : 0; i < ePos; i++)
        if (sci[i] != '.')
            digits += sci[i];
    const int exponent = std::atoi(sci.c_str() + ePos + 1);
    std::string out = negative ? "-" : "";
    if (exponent < -4 || exponent >= 16)
    {
        out += digits[0];
        if (digits.size() > 1)
            out += "." + digits.substr(1);
        out += cformat("e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    }
    else if (exponent >= 0)
    {
        const size_t integerDigits = (size_t)exponent + 1;
        if (digits.size() <= integerDigits)
            out += digits + std::string(integerDigits - digits.size(), '0') + ".0";
        else
            out += digits.substr(0, integerDigits) + "." + digits.substr(integerDigits);
    }
    else
        out += "0." + std::string((size_t)(-exponent - 1), '0') + digits;
    return out;
}

bool parseInt(const std::string& text, int base, int64_t& value)
{
    std::string s = strip(text, nullptr, true, true);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-'))
    {
        negative = s[0] == '-';
        s = s.substr(1);
    }
    auto hasPrefix = [&](char lower) { return s.size() > 2 && s[0] == '0' && tolower((unsigned char)s[1]) == lower; };
    if (base == 0)
        base = hasPrefix('x') ? 16 : hasPrefix('o') ? 8 : hasPrefix('b') ? 2 : 10;
    if ((base == 16 && hasPrefix('x')) || (base == 8 && hasPrefix('o')) || (base == 2 && hasPrefix('b')))
        s = s.substr(2);
    bool ok = true;
    s = removeUnderscoresBetweenDigits(s, ok);
    if (!ok || s.empty() || base < 2 || base > 36)
        return false;
    uint64_t v = 0;
    for (char c : s)
    {
        int digit = isdigit((unsigned char)c) ? c - '0' : isalpha((unsigned char)c) ? tolower((unsigned char)c) - 'a' + 10 : 99;
        if (digit >= base)
            return false;
        if (v > (UINT64_MAX - (uint64_t)digit) / (uint64_t)base)
            fail(ErrorKind::Overflow, "integer " + text + " does not fit in 64 bits");
        v = v * (uint64_t)base + (uint64_t)digit;
    }
    if (v > (uint64_t)INT64_MAX + (negative ? 1 : 0))
        fail(ErrorKind::Overflow, "integer " + text + " does not fit in 64 bits");
    value = negative ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

bool parseFloat(const std::string& text, double& value)
{
    std::string s = strip(text, nullptr, true, true);
    bool ok = true;
    s = removeUnderscoresBetweenDigits(s, ok);
    if (!ok || s.empty())
        return false;
    std::string lower;
    for (char c : s)
        lower += (char)tolower((unsigned char)c);
    const size_t signLength = (lower[0] == '+' || lower[0] == '-') ? 1 : 0;
    const std::string body = lower.substr(signLength);
    if (body == "inf" || body == "infinity" || body == "nan")
    {
        value = body == "nan" ? NAN : INFINITY;
        if (lower[0] == '-')
            value = -value;
        return true;
    }
    for (char c : body)
        if (!isdigit((unsigned char)c) && c != '.' && c != 'e' && c != '+' && c != '-')
            return false;
    char* end = nullptr;
    value = std::strtod(s.c_str(), &end);
    return end && *end == '\0' && end != s.c_str();
}

double roundHalfEven(double value, int digits)
{
    if (!std::isfinite(value))
        return value;
    if (digits > 300)
        return value;
    if (digits < -300)
        return 0.0 * value;
    // printf rounds the exact binary value, ties to even, as Python's round() does.
    if (digits >= 0)
        return std::strtod(cformat("%.*f", digits, value).c_str(), nullptr);
    const double scale = std::pow(10.0, -digits);
    return std::nearbyint(value / scale) * scale;
}

std::string percentFormat(const std::string& format, const Value& args, Budget& budget)
{
    std::vector<Value> positional;
    // Python treats any argument with __getitem__ that is not a tuple or str (dict, list, ...)
    // as a mapping: it may go unused.
    const bool mapping = args.isDict() || (args.isSequence() && !args.isTuple());
    if (args.isTuple())
        positional = args.items();
    else
        positional.push_back(args);
    size_t next = 0;
    bool usedMapping = false;
    std::string out;
    for (size_t i = 0; i < format.size(); i++)
    {
        budget.checkSize(out.size());
        if (format[i] != '%')
        {
            out += format[i];
            continue;
        }
        if (++i >= format.size())
            fail(ErrorKind::Value, "incomplete format");
        const Value* arg = nullptr;
        if (format[i] == '(')
        {
            const size_t close = format.find(')', i);
            if (close == std::string::npos)
                fail(ErrorKind::Value, "incomplete format key");
            if (!mapping)
                fail(ErrorKind::Type, "format requires a mapping");
            arg = args.findKey(format.substr(i + 1, close - i - 1));
            if (!arg)
                fail(ErrorKind::Type, "KeyError: " + reprString(format.substr(i + 1, close - i - 1)));
            usedMapping = true;
            i = close + 1;
        }
        std::string flags;
        while (i < format.size() && strchr("-+ #0", format[i]))
            flags += format[i++];
        int64_t width = -1, precision = -1;
        auto number = [&](int64_t& target) {
            if (i < format.size() && format[i] == '*')
            {
                target = toInteger(argumentAt(positional, next), '*');
                i++;
                return;
            }
            if (i < format.size() && isdigit((unsigned char)format[i]))
            {
                target = 0;
                while (i < format.size() && isdigit((unsigned char)format[i]) && target < 100000)
                    target = target * 10 + (format[i++] - '0');
            }
        };
        number(width);
        if (i < format.size() && format[i] == '.')
        {
            i++;
            precision = 0;
            number(precision);
        }
        while (i < format.size() && strchr("hlL", format[i]))
            i++;
        if (i >= format.size())
            fail(ErrorKind::Value, "incomplete format");
        const char conversion = format[i];
        if (conversion == '%')
        {
            out += '%';
            continue;
        }
        if (!arg)
            arg = &argumentAt(positional, next);
        const bool left = flags.find('-') != std::string::npos;
        std::string body;
        switch (conversion)
        {
        case 's': case 'r': case 'a':
        {
            body = conversion == 's' ? toStr(*arg, budget) : repr(*arg, budget);
            if (precision >= 0)
                body = sliceText(body, false, 0, true, precision, 1);
            body = padded(body, width, left ? '<' : '>', " ", 0);
            break;
        }
        case 'd': case 'i': case 'u': case 'x': case 'X': case 'o':
        {
            const int64_t v = toInteger(*arg, conversion);
            const std::string cfmt = "%" + flags + (width >= 0 ? std::to_string(width) : "") +
                                     (precision >= 0 ? "." + std::to_string(precision) : "") + "ll" +
                                     (conversion == 'u' || conversion == 'i' ? 'd' : conversion);
            body = cformat(cfmt.c_str(), (long long)v);
            break;
        }
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G':
        {
            const double v = toDouble(*arg, conversion);
            const std::string cfmt = "%" + flags + (width >= 0 ? std::to_string(std::min<int64_t>(width, 1000)) : "") + "." +
                                     std::to_string(precision >= 0 ? std::min<int64_t>(precision, 300) : 6) + conversion;
            body = cformat(cfmt.c_str(), v);
            break;
        }
        case 'c':
        {
            if (arg->isInteger())
                body = fromCodePoint((uint32_t)arg->asInt());
            else if (arg->isString() && codePointCount(arg->str()) == 1)
                body = arg->str();
            else
                fail(ErrorKind::Type, "%c requires int or char");
            body = padded(body, width, left ? '<' : '>', " ", 0);
            break;
        }
        default:
            fail(ErrorKind::Value, std::string("unsupported format character '") + conversion + "'");
        }
        out += body;
    }
    if (!usedMapping && !mapping && next < positional.size())
        fail(ErrorKind::Type, "not all arguments converted during string formatting");
    budget.checkSize(out.size());
    return out;
}

std::string formatWithSpec(const Value& value, const std::string& spec, Budget& budget)
{
    if (spec.empty())
        return toStr(value, budget);
    size_t i = 0;
    std::string fill = " ";
    char align = 0, sign = '-';
    const std::vector<uint32_t> cps = codePoints(spec);
    auto isAlign = [](uint32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    std::string rest = spec;
    if (cps.size() >= 2 && isAlign(cps[1]))
    {
        fill = fromCodePoint(cps[0]);
        align = (char)cps[1];
        rest = fromCodePoints(cps, 2, cps.size());
    }
    else if (!cps.empty() && isAlign(cps[0]))
    {
        align = (char)cps[0];
        rest = fromCodePoints(cps, 1, cps.size());
    }
    if (i < rest.size() && (rest[i] == '+' || rest[i] == '-' || rest[i] == ' '))
        sign = rest[i++];
    if (i < rest.size() && rest[i] == 'z')
        i++;
    const bool alternate = i < rest.size() && rest[i] == '#';
    if (alternate)
        i++;
    if (i < rest.size() && rest[i] == '0')
    {
        if (!align)
        {
            fill = "0";
            align = '=';
        }
        i++;
    }
    int64_t width = 0, precision = -1;
    while (i < rest.size() && isdigit((unsigned char)rest[i]) && width < 100000)
        width = width * 10 + (rest[i++] - '0');
    char grouping = 0;
    if (i < rest.size() && (rest[i] == ',' || rest[i] == '_'))
        grouping = rest[i++];
    if (i < rest.size() && rest[i] == '.')
    {
        i++;
        precision = 0;
        while (i < rest.size() && isdigit((unsigned char)rest[i]) && precision < 1000)
            precision = precision * 10 + (rest[i++] - '0');
    }
    char type = 0;
    if (i < rest.size())
        type = rest[i++];
    if (i != rest.size())
        fail(ErrorKind::Value, "Invalid format specifier '" + spec + "'");

    if (value.isString() || (!value.isNumber()))
    {
        if (type && type != 's')
            fail(ErrorKind::Value, std::string("Unknown format code '") + type + "' for object of type '" + value.typeName() + "'");
        std::string body = toStr(value, budget);
        if (precision >= 0)
            body = sliceText(body, false, 0, true, precision, 1);
        return padded(body, width, align ? align : '<', fill, 0);
    }
    std::string body;
    const bool integerType = type == 0 || strchr("bcdoxXn", type);
    if (value.isInteger() && integerType)
    {
        if (value.isBool() && type == 0)
            return padded(toStr(value, budget), width, align ? align : '<', fill, 0);
        const int64_t v = value.asInt();
        uint64_t magnitude = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
        std::string digits, prefix;
        switch (type)
        {
        case 'x': case 'X': digits = cformat(type == 'x' ? "%llx" : "%llX", (unsigned long long)magnitude); prefix = type == 'x' ? "0x" : "0X"; break;
        case 'o': digits = cformat("%llo", (unsigned long long)magnitude); prefix = "0o"; break;
        case 'b':
            do { digits.insert(digits.begin(), (char)('0' + (magnitude & 1))); magnitude >>= 1; } while (magnitude);
            prefix = "0b";
            break;
        case 'c': return padded(fromCodePoint((uint32_t)v), width, align ? align : '<', fill, 0);
        default: digits = std::to_string(magnitude);
        }
        if (grouping)
            digits = groupDigits(digits, grouping, (type == 0 || type == 'd' || type == 'n') ? 3 : 4);
        const std::string signText = v < 0 ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
        body = signText + (alternate ? prefix : "") + digits;
        return padded(body, width, align ? align : '>', fill, signText.size() + (alternate ? prefix.size() : 0));
    }
    if (integerType && type != 0)
        fail(ErrorKind::Value, std::string("Unknown format code '") + type + "' for object of type 'float'");
    double v = value.asDouble();
    const bool percent = type == '%';
    if (percent)
        v *= 100;
    std::string cfmt = std::string("%") + (alternate ? "#" : "") + ".";
    if (type == 0)
        body = precision < 0 ? formatFloat(v) : cformat("%.*g", (int)std::max<int64_t>(precision, 1), v);
    else
        body = cformat((cfmt + "*" + (percent ? 'f' : type)).c_str(), (int)(precision < 0 ? 6 : precision), v);
    if (type == 0 && precision >= 0 && body.find_first_of(".einf") == std::string::npos)
        body += ".0";
    if (percent)
        body += "%";
    if (!body.empty() && body[0] != '-' && (sign == '+' || sign == ' '))
        body.insert(body.begin(), sign);
    if (grouping)
    {
        const size_t signLength = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
        size_t end = signLength;
        while (end < body.size() && isdigit((unsigned char)body[end]))
            end++;
        body = body.substr(0, signLength) + groupDigits(body.substr(signLength, end - signLength), grouping, 3) + body.substr(end);
    }
    const size_t signLength = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
    return padded(body, width, align ? align : '>', fill, signLength);
}

std::string strFormat(const std::string& format, const CallArgs& args, Budget& budget)
{
    std::string out;
    size_t autoIndex = 0;
    bool usedAuto = false, usedManual = false;
    for (size_t i = 0; i < format.size(); i++)
    {
        budget.checkSize(out.size());
        const char c = format[i];
        if (c == '}')
        {
            if (i + 1 < format.size() && format[i + 1] == '}')
            {
                out += '}';
                i++;
                continue;
            }
            fail(ErrorKind::Value, "Single '}' encountered in format string");
        }
        if (c != '{')
        {
            out += c;
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{')
        {
            out += '{';
            i++;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos)
            fail(ErrorKind::Value, "Single '{' encountered in format string");
        std::string field = format.substr(i + 1, close - i - 1);
        i = close;
        std::string spec;
        char conversion = 0;
        const size_t colon = field.find(':');
        if (colon != std::string::npos)
        {
            spec = field.substr(colon + 1);
            field = field.substr(0, colon);
        }
        const size_t bang = field.find('!');
        if (bang != std::string::npos)
        {
            if (bang + 2 != field.size())
                fail(ErrorKind::Value, "expected ':' after conversion specifier");
            conversion = field[bang + 1];
            field = field.substr(0, bang);
        }
        size_t nameEnd = field.find_first_of(".[");
        const std::string name = field.substr(0, nameEnd);
        Value arg;
        if (name.empty())
        {
            if (usedManual)
                fail(ErrorKind::Value, "cannot switch from manual field specification to automatic field numbering");
            usedAuto = true;
            if (autoIndex >= args.positional.size())
                fail(ErrorKind::Type, "Replacement index " + std::to_string(autoIndex) + " out of range for positional args tuple");
            arg = args.positional[autoIndex++];
        }
        else if (isdigit((unsigned char)name[0]))
        {
            if (usedAuto)
                fail(ErrorKind::Value, "cannot switch from automatic field numbering to manual field specification");
            usedManual = true;
            const size_t index = (size_t)std::strtoull(name.c_str(), nullptr, 10);
            if (index >= args.positional.size())
                fail(ErrorKind::Type, "Replacement index " + name + " out of range for positional args tuple");
            arg = args.positional[index];
        }
        else
        {
            const Value* v = args.keyword(name);
            if (!v)
                fail(ErrorKind::Type, "KeyError: " + reprString(name));
            arg = *v;
        }
        // .attribute and [key] after the name: keys of dicts, indices of sequences.
        while (nameEnd != std::string::npos && nameEnd < field.size())
        {
            std::string key;
            if (field[nameEnd] == '.')
            {
                const size_t end = field.find_first_of(".[", nameEnd + 1);
                key = field.substr(nameEnd + 1, end == std::string::npos ? std::string::npos : end - nameEnd - 1);
                nameEnd = end;
            }
            else
            {
                const size_t end = field.find(']', nameEnd);
                if (end == std::string::npos)
                    fail(ErrorKind::Value, "Missing ']' in format string");
                key = field.substr(nameEnd + 1, end - nameEnd - 1);
                nameEnd = end + 1 < field.size() ? end + 1 : std::string::npos;
            }
            const Value* found = nullptr;
            if (arg.isDict())
                found = arg.findKey(key);
            else if (arg.isSequence() && !key.empty() && isdigit((unsigned char)key[0]))
            {
                const size_t index = (size_t)std::strtoull(key.c_str(), nullptr, 10);
                if (index < arg.items().size())
                    found = &arg.items()[index];
            }
            if (!found)
                fail(ErrorKind::Type, "cannot find " + reprString(key) + " in the format argument");
            const Value next = *found;
            arg = next;
        }
        if (conversion == 'r' || conversion == 'a')
            arg = Value::string(repr(arg, budget));
        else if (conversion == 's')
            arg = Value::string(toStr(arg, budget));
        else if (conversion)
            fail(ErrorKind::Value, std::string("Unknown conversion specifier ") + conversion);
        out += formatWithSpec(arg, spec, budget);
    }
    budget.checkSize(out.size());
    return out;
}

}}}} // namespace cv::dnn::llm::jinja
