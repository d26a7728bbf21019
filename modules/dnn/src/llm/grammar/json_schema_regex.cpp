// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Regular expression -> GBNF by recursive descent: alternatives of sequences of quantified atoms.
// Characters are written as they appear inside a JSON string (a quote as \", a newline as \n),
// and classes that exclude characters never let a raw quote, backslash or control character
// through, as JSON strings hold those only escaped.

#include "../../precomp.hpp"
#include "json_schema_regex.hpp"
#include "json_schema_common.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Appended to every negated class: what a JSON string holds only escaped.
const std::string kEscapedInJsonStrings = "\"\\\\\\x00-\\x1F\\x7F";

// The contents of the class that \d, \w or \s stands for, or "" for any other letter.
std::string classEscapeContents(char c)
{
    switch (c)
    {
    case 'd': return "0-9";
    case 'w': return "a-zA-Z0-9_";
    case 's': return " \\t\\n\\r";
    default: return "";
    }
}

// One ASCII character as a GBNF literal of JSON string content (escaped as JSON writes it).
std::string jsonStringChar(char c)
{
    if (c == '"') return gbnfLiteral("\\\"");
    if (c == '\\') return gbnfLiteral("\\\\");
    if (c == '\n') return gbnfLiteral("\\n");
    if (c == '\t') return gbnfLiteral("\\t");
    if (c == '\r') return gbnfLiteral("\\r");
    return gbnfLiteral(std::string(1, c));
}

class PatternTranslator
{
public:
    //! `pattern`: without its anchors.
    PatternTranslator(const std::string& pattern, const std::string& path) : pattern_(pattern), path_(path) {}

    std::string translate()
    {
        size_t pos = 0;
        std::string out = alternatives(pos, 0);
        if (pos != pattern_.size())
            fail(format("unexpected '%c' at offset %zu of the pattern", pattern_[pos], pos));
        return "(" + out + ")";
    }

private:
    [[noreturn]] void fail(const std::string& problem) const { failSchema(path_, problem); }

    std::string alternatives(size_t& pos, int depth)
    {
        if (depth > 100) fail("the pattern nests too deeply");
        std::string out = sequence(pos, depth);
        while (pos < pattern_.size() && pattern_[pos] == '|')
        {
            pos++;
            out += " | " + sequence(pos, depth);
        }
        return out;
    }

    std::string sequence(size_t& pos, int depth)
    {
        std::vector<std::string> items;
        while (pos < pattern_.size() && pattern_[pos] != '|' && pattern_[pos] != ')')
        {
            const char c = pattern_[pos];
            std::string atom;
            if (c == '(')
            {
                pos++;
                if (pattern_.compare(pos, 2, "?:") == 0) pos += 2;
                atom = "(" + alternatives(pos, depth + 1) + ")";
                if (pos >= pattern_.size() || pattern_[pos] != ')')
                    fail("unbalanced parenthesis in the pattern");
                pos++;
            }
            else if (c == '[')
                atom = characterClass(pos);
            else if (c == '.')
            {
                // one raw character of the string (as llama.cpp, without escape sequences)
                atom = "[^" + kEscapedInJsonStrings + "]";
                pos++;
            }
            else if (c == '\\')
                atom = escape(pos);
            else if (c == '*' || c == '+' || c == '?' || c == '{')
                fail(format("a quantifier with nothing before it at offset %zu of the pattern", pos));
            else if (c == '^' || c == '$')
                fail("anchors inside the pattern are not supported");
            else
                atom = utf8Character(pos);
            items.push_back(quantified(atom, pos));
        }
        if (items.empty())
            return "\"\"";
        std::string out;
        for (size_t i = 0; i < items.size(); i++)
            out += (i ? " " : "") + items[i];
        return out;
    }

    // [...] or [^...] at pos.
    std::string characterClass(size_t& pos)
    {
        const size_t start = pos++;
        std::string cls = "[";
        if (pos < pattern_.size() && pattern_[pos] == '^') { cls += "^"; pos++; }
        while (pos < pattern_.size() && pattern_[pos] != ']')
        {
            if (pattern_[pos] == '\\' && pos + 1 < pattern_.size())
            {
                std::string e = classEscapeContents(pattern_[pos + 1]);
                cls += e.empty() ? gbnfClassChar((unsigned char)pattern_[pos + 1]) : e;
                pos += 2;
            }
            else if (pattern_[pos] == '-' && cls.size() > 1 && pos + 1 < pattern_.size() && pattern_[pos + 1] != ']')
            {
                cls += "-";
                pos++;
            }
            else
            {
                // UTF-8 bytes of one character go through as they are
                unsigned char b = (unsigned char)pattern_[pos];
                if (b < 0x80) cls += gbnfClassChar(b);
                else cls += (char)b;
                pos++;
            }
        }
        if (pos >= pattern_.size())
            fail(format("unterminated character class at offset %zu of the pattern", start));
        pos++;
        if (cls == "[" || cls == "[^")
            fail("empty character class in the pattern");
        if (cls.compare(0, 2, "[^") == 0)
            return "[^" + kEscapedInJsonStrings + cls.substr(2) + "]";
        return cls + "]";
    }

    // A backslash and the character after it, at pos.
    std::string escape(size_t& pos)
    {
        if (pos + 1 >= pattern_.size())
            fail("a pattern ending with a backslash");
        const char e = pattern_[pos + 1];
        if ((unsigned char)e >= 0x80)
        {
            // an escaped non-ASCII character is that character, all of its UTF-8 bytes
            pos++;
            return utf8Character(pos);
        }
        pos += 2;
        const std::string cls = classEscapeContents(e);
        if (!cls.empty()) return "[" + cls + "]";
        if (e == 'D' || e == 'W' || e == 'S')
            return "[^" + classEscapeContents((char)std::tolower((unsigned char)e)) + kEscapedInJsonStrings + "]";
        if (e == 'n') return jsonStringChar('\n');
        if (e == 't') return jsonStringChar('\t');
        if (e == 'r') return jsonStringChar('\r');
        if (std::isalnum((unsigned char)e))
            fail(std::string("unsupported escape \\") + e + " in the pattern");
        return jsonStringChar(e);
    }

    // One UTF-8 character at pos, taken literally.
    std::string utf8Character(size_t& pos)
    {
        const unsigned char b = (unsigned char)pattern_[pos];
        const size_t n = std::min<size_t>(b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4,
                                          pattern_.size() - pos);
        std::string atom = n == 1 ? jsonStringChar((char)b) : gbnfLiteral(pattern_.substr(pos, n));
        pos += n;
        return atom;
    }

    // `atom` with the quantifier at pos, if any.
    std::string quantified(const std::string& atom, size_t& pos)
    {
        if (pos >= pattern_.size())
            return atom;
        std::string out = atom;
        const char q = pattern_[pos];
        if (q == '*' || q == '+' || q == '?')
        {
            out = "(" + atom + ")" + q;
            pos++;
        }
        else if (q == '{')
        {
            size_t close = pattern_.find('}', pos);
            if (close == std::string::npos)
                fail("unterminated {} in the pattern");
            std::string inner = pattern_.substr(pos + 1, close - pos - 1);
            if (inner.empty() || inner.find_first_not_of("0123456789,") != std::string::npos || inner[0] == ',')
                fail("bad {} quantifier in the pattern");
            out = "(" + atom + "){" + inner + "}";
            pos = close + 1;
        }
        if (pos < pattern_.size() && pattern_[pos] == '?')
            pos++;  // lazy quantifier: same language
        return out;
    }

    const std::string& pattern_;
    const std::string path_;
};

} // namespace

std::string patternToGbnf(const std::string& pattern, const std::string& path)
{
    std::string body = pattern;
    if (!body.empty() && body[0] == '^') body = body.substr(1);
    if (!body.empty() && body.back() == '$' && (body.size() < 2 || body[body.size() - 2] != '\\')) body.pop_back();
    return PatternTranslator(body, path).translate();
}

}}} // namespace cv::dnn::llm
