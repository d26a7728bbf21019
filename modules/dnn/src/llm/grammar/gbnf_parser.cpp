// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "gbnf_parser.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cv {
namespace dnn {
namespace llm {

namespace {

using Seq = std::vector<GrammarElement>;
using T = GrammarElementType;

class GbnfParser
{
public:
    GbnfParser(const std::string& text, const GbnfLimits& limits) : s_(text), limits_(limits) {}

    std::shared_ptr<Grammar> parse(const std::string& rootName)
    {
        if (s_.size() > limits_.maxTextBytes)
            CV_Error(Error::StsOutOfRange, format("GBNF grammar: %zu bytes is more than the limit of %zu",
                                                  s_.size(), limits_.maxTextBytes));
        if (s_.find('\0') != std::string::npos)
            fail(s_.find('\0'), "NUL byte in the grammar");
        pos_ = skipSpace(0, true);
        while (pos_ < s_.size())
            parseRule();
        for (size_t i = 0; i < g_->rules.size(); i++)
            if (!defined_[i])
                fail(firstUse_[i], "undefined rule '" + g_->names[i] + "'");
        auto it = ids_.find(rootName);
        if (it == ids_.end())
            CV_Error(Error::StsParseError, "GBNF grammar: no rule named '" + rootName + "' (the start rule)");
        g_->root = it->second;
        checkLeftRecursion();
        return g_;
    }

private:
    [[noreturn]] void fail(size_t at, const std::string& problem) const
    {
        at = std::min(at, s_.size());
        int line = 1, col = 1;
        for (size_t i = 0; i < at; i++)
        {
            if (s_[i] == '\n') { line++; col = 1; }
            else col++;
        }
        CV_Error(Error::StsParseError, format("GBNF grammar: line %d, column %d: %s", line, col, problem.c_str()));
    }

    char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
    static bool isWordChar(char c)
    {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    }

    size_t skipSpace(size_t p, bool newlineOk) const
    {
        while (p < s_.size())
        {
            char c = s_[p];
            if (c == '#')
                while (p < s_.size() && s_[p] != '\n' && s_[p] != '\r') p++;
            else if (c == ' ' || c == '\t' || (newlineOk && (c == '\n' || c == '\r')))
                p++;
            else
                break;
        }
        return p;
    }

    int symbol(const std::string& name, size_t usedAt)
    {
        auto it = ids_.find(name);
        if (it != ids_.end())
            return it->second;
        int id = (int)g_->rules.size();
        ids_[name] = id;
        g_->names.push_back(name);
        g_->rules.emplace_back();
        defined_.push_back(false);
        firstUse_.push_back(usedAt);
        return id;
    }

    int newRule(const std::string& base, size_t at)
    {
        for (;;)
        {
            std::string name = base + "~" + std::to_string(generated_++);
            if (!ids_.count(name))
            {
                int id = symbol(name, at);
                defined_[id] = true;
                return id;
            }
        }
    }

    void countElements(size_t n, size_t where)
    {
        elements_ += n;
        if (elements_ > limits_.maxElements)
            fail(where, format("the grammar expands to more than %zu elements", limits_.maxElements));
    }

    void setRule(int id, Seq&& elements, size_t where)
    {
        countElements(elements.size(), where);
        g_->rules[id] = std::move(elements);
    }

    void parseRule()
    {
        size_t nameStart = pos_;
        size_t p = pos_;
        while (isWordChar(at(p))) p++;
        if (p == nameStart)
            fail(p, "expecting a rule name");
        std::string name = s_.substr(nameStart, p - nameStart);
        p = skipSpace(p, false);
        if (s_.compare(p, 3, "::=") != 0)
            fail(p, "expecting ::= after the rule name '" + name + "'");
        int id = symbol(name, nameStart);
        if (defined_[id])
            fail(nameStart, "rule '" + name + "' is defined twice");
        defined_[id] = true;
        pos_ = skipSpace(p + 3, true);
        Seq rule = parseAlternatives(name, false, 0);
        setRule(id, std::move(rule), nameStart);
        if (at(pos_) == '\r')
            pos_ += at(pos_ + 1) == '\n' ? 2 : 1;
        else if (at(pos_) == '\n')
            pos_++;
        else if (pos_ < s_.size())
            fail(pos_, std::string("expecting a newline or the end after a rule, found '") + at(pos_) + "'");
        pos_ = skipSpace(pos_, true);
    }

    Seq parseAlternatives(const std::string& name, bool nested, int depth)
    {
        if (depth > limits_.maxNesting)
            fail(pos_, format("parentheses nested deeper than %d", limits_.maxNesting));
        Seq out;
        parseSequence(name, nested, depth, out);
        while (at(pos_) == '|')
        {
            out.push_back({T::Alt, 0});
            pos_ = skipSpace(pos_ + 1, true);
            parseSequence(name, nested, depth, out);
        }
        out.push_back({T::End, 0});
        return out;
    }

    uint32_t parseHex(size_t p, int digits)
    {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++)
        {
            char c = at(p + i);
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0)
                fail(p + i, format("expecting %d hex digits", digits));
            v = v * 16 + (uint32_t)d;
        }
        if (v > 0x10FFFF)
            fail(p, "code point above U+10FFFF");
        return v;
    }

    //! One (possibly escaped) character at pos_; advances pos_.
    uint32_t parseChar()
    {
        size_t p = pos_;
        unsigned char c = (unsigned char)at(p);
        if (p >= s_.size())
            fail(p, "unexpected end of the grammar");
        if (c == '\\')
        {
            char e = at(p + 1);
            switch (e)
            {
            case 'x': pos_ = p + 4; return parseHex(p + 2, 2);
            case 'u': pos_ = p + 6; return parseHex(p + 2, 4);
            case 'U': pos_ = p + 10; return parseHex(p + 2, 8);
            case 't': pos_ = p + 2; return '\t';
            case 'r': pos_ = p + 2; return '\r';
            case 'n': pos_ = p + 2; return '\n';
            case '\\': case '"': case '[': case ']': case '-': pos_ = p + 2; return (uint32_t)e;
            default: fail(p, std::string("unknown escape '\\") + (e ? std::string(1, e) : std::string()) + "'");
            }
        }
        int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (n == 0)
            fail(p, "invalid UTF-8");
        uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
        for (int i = 1; i < n; i++)
        {
            unsigned char b = (unsigned char)at(p + i);
            if ((b & 0xC0) != 0x80 || p + i >= s_.size())
                fail(p, "invalid UTF-8");
            cp = (cp << 6) | (b & 0x3F);
        }
        pos_ = p + n;
        return cp;
    }

    size_t parseInt(uint64_t& value)
    {
        size_t start = pos_;
        value = 0;
        while (at(pos_) >= '0' && at(pos_) <= '9')
        {
            value = value * 10 + (uint64_t)(at(pos_) - '0');
            if (value > 1000000000ull)
                fail(start, "repetition count too large");
            pos_++;
        }
        if (pos_ == start)
            fail(pos_, "expecting an integer");
        return start;
    }

    // Rewrites the last symbol of `out` (from lastStart) as min..max repetitions (max < 0: unbounded).
    void repeat(Seq& out, size_t lastStart, int64_t minTimes, int64_t maxTimes, const std::string& name, size_t where)
    {
        if (lastStart == out.size())
            fail(where, "a repetition operator with nothing before it");
        Seq prev(out.begin() + (long)lastStart, out.end());
        out.resize(lastStart);
        countElements(prev.size() * (size_t)(minTimes + (maxTimes > minTimes ? maxTimes - minTimes : 1) + 1), where);
        for (int64_t i = 0; i < minTimes; i++)
            out.insert(out.end(), prev.begin(), prev.end());
        if (maxTimes < 0)
        {
            // R ::= prev R |
            int r = newRule(name, where);
            starRules_.insert(r);
            Seq rule = prev;
            rule.push_back({T::RuleRef, (uint32_t)r});
            rule.push_back({T::Alt, 0});
            rule.push_back({T::End, 0});
            setRule(r, std::move(rule), where);
            out.push_back({T::RuleRef, (uint32_t)r});
            return;
        }
        // (maxTimes - minTimes) nested optionals: R1 ::= prev R2 | ; ... Rk ::= prev |
        int next = -1;
        for (int64_t i = 0; i < maxTimes - minTimes; i++)
        {
            int r = newRule(name, where);
            Seq rule = prev;
            if (next >= 0)
                rule.push_back({T::RuleRef, (uint32_t)next});
            rule.push_back({T::Alt, 0});
            rule.push_back({T::End, 0});
            setRule(r, std::move(rule), where);
            next = r;
        }
        if (next >= 0)
            out.push_back({T::RuleRef, (uint32_t)next});
    }

    void parseSequence(const std::string& name, bool nested, int depth, Seq& out)
    {
        size_t seqStart = out.size();
        size_t lastStart = out.size();
        for (;;)
        {
            const size_t here = pos_;
            const char c = at(pos_);
            if (pos_ >= s_.size())
                break;
            if (c == '"')
            {
                lastStart = out.size();
                pos_++;
                while (at(pos_) != '"')
                {
                    if (pos_ >= s_.size())
                        fail(here, "unterminated string literal");
                    out.push_back({T::Char, parseChar()});
                }
                pos_ = skipSpace(pos_ + 1, nested);
            }
            else if (c == '[')
            {
                lastStart = out.size();
                pos_++;
                T first = T::Char;
                if (at(pos_) == '^')
                {
                    first = T::CharNot;
                    pos_++;
                }
                if (at(pos_) == ']')
                    fail(pos_, "empty character class");
                bool isFirst = true;
                while (at(pos_) != ']')
                {
                    if (pos_ >= s_.size())
                        fail(here, "unterminated character class");
                    uint32_t lo = parseChar();
                    out.push_back({isFirst ? first : T::CharAlt, lo});
                    isFirst = false;
                    if (at(pos_) == '-' && at(pos_ + 1) != ']' && pos_ + 1 < s_.size())
                    {
                        size_t rangeAt = pos_;
                        pos_++;
                        uint32_t hi = parseChar();
                        if (hi < lo)
                            fail(rangeAt, "character range with its upper end below its lower end");
                        out.push_back({T::CharRangeUpper, hi});
                    }
                }
                pos_ = skipSpace(pos_ + 1, nested);
            }
            else if (isWordChar(c))
            {
                lastStart = out.size();
                size_t p = pos_;
                while (isWordChar(at(p))) p++;
                int ref = symbol(s_.substr(pos_, p - pos_), pos_);
                out.push_back({T::RuleRef, (uint32_t)ref});
                pos_ = skipSpace(p, nested);
            }
            else if (c == '(')
            {
                lastStart = out.size();
                pos_ = skipSpace(pos_ + 1, true);
                int r = newRule(name, here);
                Seq group = parseAlternatives(name, true, depth + 1);
                setRule(r, std::move(group), here);
                if (at(pos_) != ')')
                    fail(pos_, "expecting ')' to close the group opened at column " + std::to_string(columnOf(here)));
                out.push_back({T::RuleRef, (uint32_t)r});
                pos_ = skipSpace(pos_ + 1, nested);
            }
            else if (c == '.')
            {
                lastStart = out.size();
                out.push_back({T::CharAny, 0});
                pos_ = skipSpace(pos_ + 1, nested);
            }
            else if (c == '*' || c == '+' || c == '?')
            {
                if (lastStart == out.size() || lastStart < seqStart)
                    fail(pos_, std::string("'") + c + "' with nothing before it");
                pos_ = skipSpace(pos_ + 1, nested);
                repeat(out, lastStart, c == '+' ? 1 : 0, c == '?' ? 1 : -1, name, here);
            }
            else if (c == '{')
            {
                if (lastStart == out.size() || lastStart < seqStart)
                    fail(pos_, "'{' with nothing before it");
                pos_ = skipSpace(pos_ + 1, nested);
                uint64_t minTimes = 0, maxTimes = 0;
                size_t minAt = parseInt(minTimes);
                pos_ = skipSpace(pos_, nested);
                int64_t maxT;
                if (at(pos_) == '}')
                    maxT = (int64_t)minTimes;
                else if (at(pos_) == ',')
                {
                    pos_ = skipSpace(pos_ + 1, nested);
                    if (at(pos_) >= '0' && at(pos_) <= '9')
                    {
                        size_t maxAt = parseInt(maxTimes);
                        if (maxTimes < minTimes)
                            fail(maxAt, "repetition maximum below its minimum");
                        pos_ = skipSpace(pos_, nested);
                        maxT = (int64_t)maxTimes;
                    }
                    else
                        maxT = -1;
                    if (at(pos_) != '}')
                        fail(pos_, "expecting '}'");
                }
                else
                    fail(pos_, "expecting ',' or '}'");
                pos_ = skipSpace(pos_ + 1, nested);
                if (minTimes > (uint64_t)limits_.maxRepetition)
                    fail(minAt, format("repetition minimum above the limit of %d", limits_.maxRepetition));
                if (maxT > limits_.maxRepetition)
                    maxT = -1;
                repeat(out, lastStart, (int64_t)minTimes, maxT, name, here);
            }
            else if (c == '<')
                fail(pos_, "token references (<[id]>, <|name|>) are not supported: grammars match text");
            else
                break;
        }
    }

    int columnOf(size_t at) const
    {
        size_t lineStart = s_.rfind('\n', at == 0 ? 0 : at - 1);
        return (int)(lineStart == std::string::npos ? at + 1 : at - lineStart);
    }

    // A top-down matcher loops on a rule that can reach itself without consuming a character.
    void checkLeftRecursion()
    {
        const size_t n = g_->rules.size();
        std::vector<char> nullable(n, 0);
        for (bool changed = true; changed;)
        {
            changed = false;
            for (size_t r = 0; r < n; r++)
            {
                if (nullable[r]) continue;
                const Seq& rule = g_->rules[r];
                bool altNullable = true;
                for (size_t i = 0; i < rule.size(); i++)
                {
                    const GrammarElement& e = rule[i];
                    if (e.type == T::Alt || e.type == T::End)
                    {
                        if (altNullable) { nullable[r] = 1; changed = true; break; }
                        altNullable = true;
                    }
                    else if (e.type == T::RuleRef) { if (!nullable[e.value]) altNullable = false; }
                    else altNullable = false;
                }
            }
        }
        // edges: r -> rules that can start r
        std::vector<std::vector<uint32_t> > starts(n);
        for (size_t r = 0; r < n; r++)
        {
            const Seq& rule = g_->rules[r];
            bool leading = true;
            for (const GrammarElement& e : rule)
            {
                if (e.type == T::Alt || e.type == T::End) { leading = true; continue; }
                if (!leading) continue;
                if (e.type == T::RuleRef)
                {
                    // "x*" is R ::= x R | (): when x may match nothing, R reaches itself, but the
                    // matcher drops that empty loop (llama.cpp accepts such grammars too)
                    if (!(e.value == r && starRules_.count((int)r)))
                        starts[r].push_back(e.value);
                    if (!nullable[e.value]) leading = false;
                }
                else if (e.type == T::Char || e.type == T::CharNot || e.type == T::CharAny)
                    leading = false;
            }
        }
        // iterative DFS for a cycle
        std::vector<char> color(n, 0);
        for (size_t s = 0; s < n; s++)
        {
            if (color[s]) continue;
            std::vector<std::pair<uint32_t, size_t> > stack{{(uint32_t)s, 0}};
            color[s] = 1;
            while (!stack.empty())
            {
                auto& top = stack.back();
                if (top.second < starts[top.first].size())
                {
                    uint32_t next = starts[top.first][top.second++];
                    if (color[next] == 1)
                        CV_Error(Error::StsParseError, "GBNF grammar: rule '" + originalName(next) +
                                 "' is left-recursive (it can reach itself without matching a character)");
                    if (color[next] == 0)
                    {
                        color[next] = 1;
                        stack.push_back({next, 0});
                    }
                }
                else
                {
                    color[top.first] = 2;
                    stack.pop_back();
                }
            }
        }
    }

    std::string originalName(uint32_t id) const
    {
        const std::string& name = g_->names[id];
        // generated rules are named after the rule they appear in
        size_t us = name.rfind('~');
        if (us != std::string::npos && ids_.count(name.substr(0, us)) &&
            name.find_first_not_of("0123456789", us + 1) == std::string::npos)
            return name.substr(0, us);
        return name;
    }

    const std::string& s_;
    GbnfLimits limits_;
    size_t pos_ = 0;
    size_t elements_ = 0;
    int generated_ = 1;
    std::shared_ptr<Grammar> g_ = std::make_shared<Grammar>();
    std::map<std::string, int> ids_;
    std::vector<bool> defined_;
    std::vector<size_t> firstUse_;
    std::set<int> starRules_;
};

} // namespace

std::shared_ptr<const Grammar> parseGbnf(const std::string& text, const std::string& rootName, const GbnfLimits& limits)
{
    GbnfParser parser(text, limits);
    return parser.parse(rootName);
}

}}} // namespace cv::dnn::llm
