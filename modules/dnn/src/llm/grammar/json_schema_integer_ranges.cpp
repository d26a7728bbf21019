// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Integer ranges as GBNF. [lo, hi] is cut by digit count, then each piece of texts of one length
// by their leading digits, e.g. [123, 456] ->
//   [1] [2] [3-9] | [1] [3-9] [0-9]{1} | [2-3] [0-9]{2} | [4] [0-4] [0-9]{1} | [4] [5] [0-6]

#include "../../precomp.hpp"
#include "json_schema_integer_ranges.hpp"

#include <vector>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Appends the alternatives of the texts in [low, high] (both of one length, low <= high), each
// after `prefix` (the digits written so far).
void appendSameLengthRange(const std::string& low, const std::string& high, const std::string& prefix,
                           std::vector<std::string>& out)
{
    if (low.empty()) { out.push_back(prefix.empty() ? "\"\"" : prefix); return; }
    auto digit = [](char c) { return std::string("[") + c + "]"; };
    auto afterPrefix = [&](const std::string& a) { return prefix + (prefix.empty() ? "" : " ") + a; };
    if (low[0] == high[0])
    {
        appendSameLengthRange(low.substr(1), high.substr(1), afterPrefix(digit(low[0])), out);
        return;
    }
    const size_t k = low.size() - 1;
    const std::string zeros(k, '0'), nines(k, '9');
    auto anyDigitsAfter = [&](const std::string& p) { return k == 0 ? p : p + format(" [0-9]{%d}", (int)k); };
    char midLo = low[0], midHi = high[0];
    if (low.substr(1) != zeros)
    {
        appendSameLengthRange(low.substr(1), nines, afterPrefix(digit(low[0])), out);
        midLo = (char)(low[0] + 1);
    }
    bool upper = high.substr(1) != nines;
    if (upper)
        midHi = (char)(high[0] - 1);
    if (midLo <= midHi)
        out.push_back(afterPrefix(anyDigitsAfter(std::string("[") + midLo + "-" + midHi + "]")));
    if (upper)
        appendSameLengthRange(zeros, high.substr(1), afterPrefix(digit(high[0])), out);
}

// Non-negative integers in [lo, hi]; hi < 0: unbounded (up to 16 digits).
std::vector<std::string> nonNegativeRange(int64_t lo, int64_t hi)
{
    std::vector<std::string> out;
    const int maxDigits = 16;
    const std::string loText = std::to_string(lo);
    const int loLen = (int)loText.size();
    const int hiLen = hi < 0 ? maxDigits : (int)std::to_string(hi).size();
    for (int len = loLen; len <= hiLen; len++)
    {
        std::string a = len == loLen ? loText : "1" + std::string((size_t)len - 1, '0');
        if (len == 1 && len != loLen) a = "0";
        std::string b = hi >= 0 && len == hiLen ? std::to_string(hi) : std::string((size_t)len, '9');
        if (hi < 0 && len > loLen)
        {
            // all longer numbers at once
            out.push_back(format("[1-9] [0-9]{%d,%d}", len - 1, maxDigits - 1));
            break;
        }
        if (a.size() == b.size() && a <= b)
            appendSameLengthRange(a, b, "", out);
    }
    return out;
}

} // namespace

std::string integerRangeGbnf(bool hasMin, int64_t minValue, bool hasMax, int64_t maxValue)
{
    std::vector<std::string> alts;
    if (!hasMin || minValue < 0)
    {
        // negative part: "-" then |x| in [hasMax && maxValue < 0 ? -maxValue : 1, hasMin ? -minValue : inf]
        // "-0" too when there is a lower bound, as llama.cpp
        int64_t absLo = hasMax && maxValue < 0 ? -maxValue : hasMin ? 0 : 1;
        int64_t absHi = hasMin ? -minValue : -1;
        if (absHi < 0 || absLo <= absHi)
            for (const std::string& a : nonNegativeRange(absLo, absHi))
                alts.push_back("\"-\" " + a);
    }
    if (!hasMax || maxValue >= 0)
    {
        int64_t lo = hasMin && minValue > 0 ? minValue : 0;
        int64_t hi = hasMax ? maxValue : -1;
        if (hi < 0 || lo <= hi)
            for (const std::string& a : nonNegativeRange(lo, hi))
                alts.push_back(a);
    }
    if (alts.empty())
        return "";
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); i++)
        out += (i ? " | " : "") + alts[i];
    return out + ")";
}

}}} // namespace cv::dnn::llm
