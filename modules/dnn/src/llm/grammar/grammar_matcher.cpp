// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "grammar_matcher.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {

using T = GrammarElementType;

static uint32_t minCodePoint(int length)
{
    return length == 2 ? 0x80 : length == 3 ? 0x800 : length == 4 ? 0x10000 : 0;
}

int Utf8Partial::feed(unsigned char b, uint32_t& cp)
{
    if (remaining == 0)
    {
        if (b < 0x80) { cp = b; return 1; }
        if ((b & 0xE0) == 0xC0) { value = b & 0x1F; remaining = 1; length = 2; }
        else if ((b & 0xF0) == 0xE0) { value = b & 0x0F; remaining = 2; length = 3; }
        else if ((b & 0xF8) == 0xF0) { value = b & 0x07; remaining = 3; length = 4; }
        else return -1;
        uint32_t lo, hi;
        range(lo, hi);
        return lo <= hi ? 0 : -1;
    }
    if ((b & 0xC0) != 0x80)
        return -1;
    value = (value << 6) | (b & 0x3F);
    if (--remaining > 0)
    {
        uint32_t lo, hi;
        range(lo, hi);
        return lo <= hi ? 0 : -1;
    }
    cp = value;
    value = 0;
    const int len = length;
    length = 0;
    if (cp < minCodePoint(len) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    return 1;
}

void Utf8Partial::range(uint32_t& lo, uint32_t& hi) const
{
    const int shift = 6 * remaining;
    lo = std::max(value << shift, minCodePoint(length));
    hi = std::min((value << shift) | ((1u << shift) - 1), 0x10FFFFu);
}

GrammarMatcher::GrammarMatcher(const std::shared_ptr<const Grammar>& grammar, const Limits& limits)
    : grammar_(grammar), limits_(limits)
{
    CV_Assert(grammar_ && grammar_->root >= 0 && grammar_->root < (int)grammar_->rules.size());
    size_t work = 0;
    ExpansionPath path;
    expandRule(Stack(), (uint32_t)grammar_->root, stacks_, work, path);
    finish(stacks_);
}

void GrammarMatcher::expandRule(const Stack& base, uint32_t rule, Stacks& out, size_t& work, ExpansionPath& path) const
{
    // A repetition of something that may match nothing ("( [x]* )*") can come back to the same
    // rule with the same stack without consuming anything: that expansion adds nothing new.
    for (const auto& seen : path)
        if (seen.first == rule && *seen.second == base)
            return;
    path.push_back({rule, &base});
    const GrammarElement* alt = grammar_->rules[rule].data();
    for (;;)
    {
        Stack s;
        s.reserve(base.size() + 1);
        s = base;
        if (!isEndOfSequence(alt))
            s.push_back(alt);
        expand(s, out, work, path);
        while (!isEndOfSequence(alt))
            alt++;
        if (alt->type != T::Alt)
            break;
        alt++;
    }
    path.pop_back();
}

void GrammarMatcher::expand(Stack& stack, Stacks& out, size_t& work, ExpansionPath& path) const
{
    if (++work > limits_.maxExpansions)
        CV_Error(Error::StsOutOfRange, format("grammar: more than %zu expansions for one character "
                                              "(the grammar is too ambiguous)", limits_.maxExpansions));
    if (stack.size() > limits_.maxDepth)
        CV_Error(Error::StsOutOfRange, format("grammar: the text nests deeper than %zu grammar elements",
                                              limits_.maxDepth));
    if (stack.empty() || stack.back()->type != T::RuleRef)
    {
        out.push_back(std::move(stack));
        if (out.size() > 4 * limits_.maxStacks)
            finish(out);
        return;
    }
    const GrammarElement* pos = stack.back();
    stack.pop_back();
    if (!isEndOfSequence(pos + 1))
        stack.push_back(pos + 1);
    expandRule(stack, pos->value, out, work, path);
}

void GrammarMatcher::finish(Stacks& out) const
{
    if (out.size() > 1)
    {
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }
    if (out.size() > limits_.maxStacks)
        CV_Error(Error::StsOutOfRange, format("grammar: more than %zu parse stacks at once "
                                              "(the grammar is too ambiguous)", limits_.maxStacks));
}

void GrammarMatcher::advance(const Stacks& in, uint32_t cp, Stacks& out) const
{
    out.clear();
    size_t work = 0;
    ExpansionPath path;
    for (const Stack& stack : in)
    {
        if (stack.empty())
            continue;
        const GrammarElement* next = nullptr;
        if (!matchCharClass(stack.back(), cp, &next))
            continue;
        Stack s;
        s.reserve(stack.size() + 2);
        s.assign(stack.begin(), stack.end() - 1);
        if (!isEndOfSequence(next))
            s.push_back(next);
        expand(s, out, work, path);
    }
    finish(out);
}

bool GrammarMatcher::partialFeasible(const Stacks& stacks, const Utf8Partial& partial) const
{
    if (partial.remaining == 0)
        return !stacks.empty();
    uint32_t lo, hi;
    partial.range(lo, hi);
    if (lo > hi)
        return false;
    for (const Stack& stack : stacks)
        if (!stack.empty() && charClassIntersects(stack.back(), lo, hi))
            return true;
    return false;
}

bool GrammarMatcher::acceptByte(unsigned char b)
{
    if (stacks_.empty())
        return false;
    uint32_t cp = 0;
    const int r = partial_.feed(b, cp);
    if (r < 0)
    {
        stacks_.clear();
        return false;
    }
    if (r == 0)
    {
        if (!partialFeasible(stacks_, partial_))
            stacks_.clear();
        return !stacks_.empty();
    }
    Stacks next;
    advance(stacks_, cp, next);
    stacks_.swap(next);
    return !stacks_.empty();
}

bool GrammarMatcher::accept(const std::string& bytes)
{
    for (char c : bytes)
        if (!acceptByte((unsigned char)c))
            return false;
    return !stacks_.empty();
}

bool GrammarMatcher::canEnd() const
{
    if (partial_.remaining != 0)
        return false;
    for (const Stack& s : stacks_)
        if (s.empty())
            return true;
    return false;
}

bool GrammarMatcher::isComplete() const
{
    if (partial_.remaining != 0 || stacks_.empty())
        return false;
    for (const Stack& s : stacks_)
        if (!s.empty())
            return false;
    return true;
}

}}} // namespace cv::dnn::llm
