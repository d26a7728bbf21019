// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "text.hpp"
#include "errors.hpp"

#include "../common/unicode_tables.hpp"
#include "../common/utf8.hpp"

#include <algorithm>
#include <unordered_map>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

// Uppercase mappings: the inverse of the simple lowercase mapping (the lowest code point that
// lowercases to a letter is its uppercase), plus letters whose uppercase does not lowercase
// back to them.
const std::unordered_map<uint32_t, uint32_t>& uppercaseTable()
{
    static const std::unordered_map<uint32_t, uint32_t> table = [] {
        std::unordered_map<uint32_t, uint32_t> t;
        for (uint32_t cp = 0x41; cp < 0x1F000; cp++)
        {
            const uint32_t lower = unicode::toLower(cp);
            if (lower != cp && t.find(lower) == t.end())
                t[lower] = cp;
        }
        const uint32_t extra[][2] = {
            {0x00B5, 0x039C}, {0x0131, 0x0049}, {0x017F, 0x0053}, {0x03C2, 0x03A3}, {0x03D0, 0x0392},
            {0x03D1, 0x0398}, {0x03D5, 0x03A6}, {0x03D6, 0x03A0}, {0x03F0, 0x039A}, {0x03F1, 0x03A1},
            {0x03F5, 0x0395}, {0x1E9B, 0x1E60}, {0x1FBE, 0x0399}};
        for (const auto& e : extra)
            t[e[0]] = e[1];
        return t;
    }();
    return table;
}

uint32_t upperOf(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    const auto& table = uppercaseTable();
    const auto it = table.find(cp);
    return it == table.end() ? cp : it->second;
}

uint32_t lowerOf(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return unicode::toLower(cp);
}

void appendUpper(uint32_t cp, std::string& out)
{
    if (cp == 0xDF)  // 'ß'.upper() == 'SS'
        out += "SS";
    else
        appendUtf8(upperOf(cp), out);
}

void appendLower(uint32_t cp, std::string& out)
{
    if (cp == 0x130)  // 'İ'.lower() == 'i̇'
        out += "i\xCC\x87";
    else
        appendUtf8(lowerOf(cp), out);
}

bool isCased(uint32_t cp) { return upperOf(cp) != cp || lowerOf(cp) != cp || cp == 0xDF; }

bool inSet(uint32_t cp, const std::vector<uint32_t>& set) { return std::find(set.begin(), set.end(), cp) != set.end(); }

bool isLineBreak(uint32_t cp)
{
    return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
           cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

} // namespace

std::vector<uint32_t> codePoints(const std::string& text) { return decodeUtf8(text); }

std::string fromCodePoints(const std::vector<uint32_t>& cps, size_t begin, size_t end)
{
    std::string out;
    for (size_t i = begin; i < end && i < cps.size(); i++)
        appendUtf8(cps[i], out);
    return out;
}

std::string fromCodePoint(uint32_t cp)
{
    std::string out;
    appendUtf8(cp, out);
    return out;
}

size_t codePointCount(const std::string& text)
{
    size_t n = 0, pos = 0;
    while (pos < text.size())
    {
        decodeUtf8(text, pos);
        n++;
    }
    return n;
}

bool isSpace(uint32_t cp) { return unicode::isWhitespace(cp) || (cp >= 0x1C && cp <= 0x1F); }
bool isAsciiDigit(uint32_t cp) { return cp >= '0' && cp <= '9'; }

bool isAlpha(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    if (isCased(cp) || unicode::isChineseCharacter(cp))
        return true;
    // Uncased scripts: whatever is not punctuation, a mark, a control, a space or a symbol block.
    const bool symbolBlock = (cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x1F000 && cp <= 0x1FAFF) ||
                             (cp >= 0xFE00 && cp <= 0xFE0F) || (cp >= 0xE000 && cp <= 0xF8FF) || cp == 0xFFFD;
    return !symbolBlock && !unicode::isPunctuation(cp) && !unicode::isAccentMark(cp) && !unicode::isControl(cp) &&
           !isSpace(cp) && cp != 0xD7 && cp != 0xF7 && !(cp >= 0xA0 && cp <= 0xBF);
}

bool isLowerCase(uint32_t cp) { return upperOf(cp) != cp || cp == 0xDF; }
bool isUpperCase(uint32_t cp) { return lowerOf(cp) != cp; }

std::string toUpper(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (uint32_t cp : codePoints(text))
        appendUpper(cp, out);
    return out;
}

std::string toLower(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (uint32_t cp : codePoints(text))
        appendLower(cp, out);
    return out;
}

std::string capitalize(const std::string& text)
{
    std::string out;
    const std::vector<uint32_t> cps = codePoints(text);
    for (size_t i = 0; i < cps.size(); i++)
    {
        if (i == 0)
            appendUpper(cps[i], out);
        else
            appendLower(cps[i], out);
    }
    return out;
}

std::string swapCase(const std::string& text)
{
    std::string out;
    for (uint32_t cp : codePoints(text))
    {
        if (isUpperCase(cp))
            appendLower(cp, out);
        else if (isLowerCase(cp))
            appendUpper(cp, out);
        else
            appendUtf8(cp, out);
    }
    return out;
}

std::string pythonTitle(const std::string& text)
{
    std::string out;
    bool previousCased = false;
    for (uint32_t cp : codePoints(text))
    {
        if (previousCased)
            appendLower(cp, out);
        else
            appendUpper(cp, out);
        previousCased = isCased(cp);
    }
    return out;
}

std::string strip(const std::string& text, const std::string* chars, bool left, bool right)
{
    const std::vector<uint32_t> cps = codePoints(text);
    const std::vector<uint32_t> set = chars ? codePoints(*chars) : std::vector<uint32_t>();
    auto strippable = [&](uint32_t cp) { return chars ? inSet(cp, set) : isSpace(cp); };
    size_t begin = 0, end = cps.size();
    if (left)
        while (begin < end && strippable(cps[begin]))
            begin++;
    if (right)
        while (end > begin && strippable(cps[end - 1]))
            end--;
    if (begin == 0 && end == cps.size())
        return text;
    return fromCodePoints(cps, begin, end);
}

std::vector<std::string> split(const std::string& text, const std::string* sep, int64_t maxsplit)
{
    std::vector<std::string> parts;
    if (sep)
    {
        if (sep->empty())
            fail(ErrorKind::Value, "empty separator");
        size_t pos = 0;
        while (maxsplit < 0 || (int64_t)parts.size() < maxsplit)
        {
            const size_t at = text.find(*sep, pos);
            if (at == std::string::npos)
                break;
            parts.push_back(text.substr(pos, at - pos));
            pos = at + sep->size();
        }
        parts.push_back(text.substr(pos));
        return parts;
    }
    const std::vector<uint32_t> cps = codePoints(text);
    size_t i = 0;
    while (true)
    {
        while (i < cps.size() && isSpace(cps[i]))
            i++;
        if (i == cps.size())
            break;
        if (maxsplit >= 0 && (int64_t)parts.size() == maxsplit)
        {
            size_t end = cps.size();
            while (end > i && isSpace(cps[end - 1]))
                end--;
            parts.push_back(fromCodePoints(cps, i, end));
            break;
        }
        size_t j = i;
        while (j < cps.size() && !isSpace(cps[j]))
            j++;
        parts.push_back(fromCodePoints(cps, i, j));
        i = j;
    }
    return parts;
}

std::vector<std::string> rsplit(const std::string& text, const std::string* sep, int64_t maxsplit)
{
    if (maxsplit < 0)
        return split(text, sep, maxsplit);
    std::vector<std::string> parts;
    if (sep)
    {
        if (sep->empty())
            fail(ErrorKind::Value, "empty separator");
        size_t end = text.size();
        while ((int64_t)parts.size() < maxsplit && end >= sep->size())
        {
            const size_t at = text.rfind(*sep, end - sep->size());
            if (at == std::string::npos)
                break;
            parts.push_back(text.substr(at + sep->size(), end - at - sep->size()));
            end = at;
        }
        parts.push_back(text.substr(0, end));
    }
    else
    {
        const std::vector<uint32_t> cps = codePoints(text);
        size_t j = cps.size();
        while (true)
        {
            while (j > 0 && isSpace(cps[j - 1]))
                j--;
            if (j == 0)
                break;
            if ((int64_t)parts.size() == maxsplit)
            {
                size_t begin = 0;
                while (begin < j && isSpace(cps[begin]))
                    begin++;
                parts.push_back(fromCodePoints(cps, begin, j));
                break;
            }
            size_t i = j;
            while (i > 0 && !isSpace(cps[i - 1]))
                i--;
            parts.push_back(fromCodePoints(cps, i, j));
            j = i;
        }
    }
    std::reverse(parts.begin(), parts.end());
    return parts;
}

std::vector<std::string> splitLines(const std::string& text, bool keepEnds)
{
    const std::vector<uint32_t> cps = codePoints(text);
    std::vector<std::string> lines;
    size_t start = 0, i = 0;
    while (i < cps.size())
    {
        if (!isLineBreak(cps[i]))
        {
            i++;
            continue;
        }
        size_t end = i + 1;
        if (cps[i] == '\r' && end < cps.size() && cps[end] == '\n')
            end++;
        lines.push_back(fromCodePoints(cps, start, keepEnds ? end : i));
        start = i = end;
    }
    if (start < cps.size())
        lines.push_back(fromCodePoints(cps, start, cps.size()));
    return lines;
}

std::string replace(const std::string& text, const std::string& from, const std::string& to, int64_t count,
                    size_t maxBytes)
{
    std::string out;
    auto append = [&](const std::string& piece) {
        out += piece;
        if (out.size() > maxBytes)
            fail(ErrorKind::Limit, "str.replace made a text longer than " + std::to_string(maxBytes) + " bytes");
    };
    if (from.empty())
    {
        // Python inserts `to` before every character and at the end.
        const std::vector<uint32_t> cps = codePoints(text);
        int64_t done = 0;
        for (uint32_t cp : cps)
        {
            if (count < 0 || done < count)
            {
                append(to);
                done++;
            }
            append(fromCodePoint(cp));
        }
        if (count < 0 || done < count)
            append(to);
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count)
    {
        const size_t at = text.find(from, pos);
        if (at == std::string::npos)
            break;
        append(text.substr(pos, at - pos));
        append(to);
        pos = at + from.size();
        done++;
    }
    append(text.substr(pos));
    return out;
}

int64_t find(const std::string& text, const std::string& sub, bool fromRight)
{
    const size_t at = fromRight ? text.rfind(sub) : text.find(sub);
    if (at == std::string::npos)
        return -1;
    return (int64_t)codePointCount(text.substr(0, at));
}

int64_t countOccurrences(const std::string& text, const std::string& sub)
{
    if (sub.empty())
        return (int64_t)codePointCount(text) + 1;
    int64_t n = 0;
    for (size_t pos = text.find(sub); pos != std::string::npos; pos = text.find(sub, pos + sub.size()))
        n++;
    return n;
}

bool startsWith(const std::string& text, const std::string& prefix)
{
    return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

bool endsWith(const std::string& text, const std::string& suffix)
{
    return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string center(const std::string& text, int64_t width)
{
    const int64_t n = (int64_t)codePointCount(text);
    if (width <= n)
        return text;
    const int64_t margin = width - n;
    const int64_t left = margin / 2 + (margin & width & 1);
    return std::string((size_t)left, ' ') + text + std::string((size_t)(margin - left), ' ');
}

std::vector<int64_t> sliceIndices(int64_t length, bool hasStart, int64_t start, bool hasStop, int64_t stop,
                                  int64_t step)
{
    if (step == 0)
        fail(ErrorKind::Value, "slice step cannot be zero");
    // CPython's PySlice_AdjustIndices.
    auto adjust = [&](bool has, int64_t v, int64_t fallback) {
        if (!has)
            return fallback;
        if (v < 0)
        {
            v += length;
            if (v < 0)
                v = step < 0 ? -1 : 0;
        }
        else if (v >= length)
            v = step < 0 ? length - 1 : length;
        return v;
    };
    const int64_t first = adjust(hasStart, start, step < 0 ? length - 1 : 0);
    const int64_t last = adjust(hasStop, stop, step < 0 ? -1 : length);
    std::vector<int64_t> indices;
    if (step > 0)
        for (int64_t i = first; i < last; i += step)
            indices.push_back(i);
    else
        for (int64_t i = first; i > last; i += step)
            indices.push_back(i);
    return indices;
}

std::string sliceText(const std::string& text, bool hasStart, int64_t start, bool hasStop, int64_t stop, int64_t step)
{
    const std::vector<uint32_t> cps = codePoints(text);
    std::string out;
    for (int64_t i : sliceIndices((int64_t)cps.size(), hasStart, start, hasStop, stop, step))
        appendUtf8(cps[(size_t)i], out);
    return out;
}

std::string escapeHtml(const std::string& text)
{
    std::string out;
    out.reserve(text.size());
    for (char c : text)
    {
        switch (c)
        {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

}}}} // namespace cv::dnn::llm::jinja
