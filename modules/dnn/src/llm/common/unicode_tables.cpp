// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "unicode_tables.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {
namespace unicode {

namespace {

struct CodePointRange
{
    uint32_t first, last;
};

struct LowercaseRun
{
    uint32_t first, count, stride;
    int32_t delta;
};

struct DecompositionRun
{
    uint32_t first, count, base;
};

#include "unicode_tables_data.hpp"

template <size_t N>
bool inRanges(const CodePointRange (&ranges)[N], uint32_t codePoint)
{
    const CodePointRange* end = ranges + N;
    const CodePointRange* it = std::upper_bound(ranges, end, codePoint,
        [](uint32_t cp, const CodePointRange& r) { return cp < r.first; });
    return it != ranges && codePoint <= (it - 1)->last;
}

// The last run whose first code point is <= codePoint, or nullptr.
template <typename Run, size_t N>
const Run* lastRunStartingAtOrBefore(const Run (&runs)[N], uint32_t codePoint)
{
    const Run* it = std::upper_bound(runs, runs + N, codePoint,
        [](uint32_t cp, const Run& r) { return cp < r.first; });
    return it == runs ? nullptr : it - 1;
}

} // namespace

bool isWhitespace(uint32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}

bool isPunctuation(uint32_t cp) { return inRanges(kPunctuationRanges, cp); }
bool isAccentMark(uint32_t cp) { return inRanges(kAccentMarkRanges, cp); }
bool isControl(uint32_t cp) { return inRanges(kControlRanges, cp); }

bool isChineseCharacter(uint32_t cp)
{
    // The blocks BERT's tokenizer (and HF tokenizers) treat as CJK, 0x2B920 start included.
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

uint32_t toLower(uint32_t cp)
{
    const LowercaseRun* run = lastRunStartingAtOrBefore(kLowercaseRuns, cp);
    if (!run)
        return cp;
    const uint32_t offset = cp - run->first;
    if (offset % run->stride != 0 || offset / run->stride >= run->count)
        return cp;
    return (uint32_t)((int32_t)cp + run->delta);
}

uint32_t decompositionBase(uint32_t cp)
{
    // Hangul syllables decompose algorithmically: 19 leading consonants x 588 syllables each.
    if (cp >= 0xAC00 && cp <= 0xD7A3)
        return 0x1100 + (cp - 0xAC00) / 588;
    const DecompositionRun* run = lastRunStartingAtOrBefore(kDecompositionBaseRuns, cp);
    if (!run || cp - run->first >= run->count)
        return cp;
    return run->base;
}

}}}} // namespace cv::dnn::llm::unicode
