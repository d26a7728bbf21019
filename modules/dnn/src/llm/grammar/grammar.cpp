// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "grammar.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {

using T = GrammarElementType;

bool matchCharClass(const GrammarElement* e, uint32_t cp, const GrammarElement** next)
{
    if (e->type == T::CharAny)
    {
        if (next) *next = e + 1;
        return true;
    }
    const bool positive = e->type == T::Char;
    bool found = false;
    do
    {
        if (e[1].type == T::CharRangeUpper)
        {
            found = found || (e->value <= cp && cp <= e[1].value);
            e += 2;
        }
        else
        {
            found = found || e->value == cp;
            e += 1;
        }
    } while (e->type == T::CharAlt);
    if (next) *next = e;
    return found == positive;
}

bool charClassIntersects(const GrammarElement* e, uint32_t lo, uint32_t hi)
{
    if (e->type == T::CharAny)
        return true;
    const bool positive = e->type == T::Char;
    std::vector<std::pair<uint32_t, uint32_t> > ranges;
    do
    {
        if (e[1].type == T::CharRangeUpper)
        {
            ranges.push_back({e->value, e[1].value});
            e += 2;
        }
        else
        {
            ranges.push_back({e->value, e->value});
            e += 1;
        }
    } while (e->type == T::CharAlt);
    if (positive)
    {
        for (const auto& r : ranges)
            if (r.first <= hi && lo <= r.second)
                return true;
        return false;
    }
    // negated: some code point of [lo, hi] is outside every range
    std::sort(ranges.begin(), ranges.end());
    uint64_t cur = lo;
    for (const auto& r : ranges)
    {
        if (r.first > cur)
            break;
        if ((uint64_t)r.second + 1 > cur)
            cur = (uint64_t)r.second + 1;
        if (cur > hi)
            return false;
    }
    return cur <= hi;
}

int Grammar::ruleId(const std::string& name) const
{
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : (int)(it - names.begin());
}

static std::string codePointText(uint32_t cp)
{
    if (cp == '\\' || cp == '"' || cp == '[' || cp == ']' || cp == '-')
        return std::string("\\") + (char)cp;
    if (cp == '\n') return "\\n";
    if (cp == '\t') return "\\t";
    if (cp == '\r') return "\\r";
    if (cp < 0x20 || cp == 0x7F) return format("\\x%02X", cp);
    if (cp < 0x80) return std::string(1, (char)cp);
    return cp <= 0xFFFF ? format("\\u%04X", cp) : format("\\U%08X", cp);
}

std::string Grammar::toString() const
{
    std::string out;
    for (size_t r = 0; r < rules.size(); r++)
    {
        out += names[r] + " ::=";
        const auto& rule = rules[r];
        for (size_t i = 0; i < rule.size(); i++)
        {
            const GrammarElement& e = rule[i];
            switch (e.type)
            {
            case T::End: break;
            case T::Alt: out += " |"; break;
            case T::RuleRef: out += " " + names[e.value]; break;
            case T::CharAny: out += " ."; break;
            case T::Char:
            case T::CharNot:
                out += e.type == T::CharNot ? " [^" : " [";
                out += codePointText(e.value);
                break;
            case T::CharRangeUpper: out += "-" + codePointText(e.value); break;
            case T::CharAlt: out += codePointText(e.value); break;
            }
            if ((e.type == T::Char || e.type == T::CharNot || e.type == T::CharRangeUpper || e.type == T::CharAlt) &&
                i + 1 < rule.size() && rule[i + 1].type != T::CharAlt && rule[i + 1].type != T::CharRangeUpper)
                out += "]";
        }
        out += "\n";
    }
    return out;
}

}}} // namespace cv::dnn::llm
