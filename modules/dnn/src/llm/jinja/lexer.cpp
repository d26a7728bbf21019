// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "lexer.hpp"
#include "errors.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include "../common/utf8.hpp"

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

enum class TagKind { Variable, Block, Comment, Raw };

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentifierStart(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80; }
bool isIdentifierChar(unsigned char c) { return isIdentifierStart(c) || isDigit((char)c); }

int hexValue(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

class Lexer
{
public:
    Lexer(const std::string& source, const LexerOptions& options) : src_(source), options_(options) {}

    std::vector<Token> run()
    {
        while (pos_ < src_.size())
        {
            size_t tagPos;
            TagKind kind;
            if (!findTag(pos_, tagPos, kind))
            {
                addData(src_.substr(pos_), pos_);
                break;
            }
            const size_t signPos = tagPos + 2;
            const char sign = signPos < src_.size() && (src_[signPos] == '-' || src_[signPos] == '+') ? src_[signPos] : 0;
            size_t rawEnd = 0;
            if (kind == TagKind::Block && matchRawBegin(tagPos, rawEnd))
                kind = TagKind::Raw;
            addData(stripBeforeTag(src_.substr(pos_, tagPos - pos_), sign, kind != TagKind::Variable), pos_);
            lineStarting_ = false;
            const size_t bodyStart = signPos + (sign ? 1 : 0);
            switch (kind)
            {
            case TagKind::Comment: lexComment(tagPos, bodyStart); break;
            case TagKind::Raw: lexRaw(tagPos, rawEnd); break;
            default: lexTag(kind, tagPos, bodyStart);
            }
        }
        Token eof;
        eof.type = TokenType::Eof;
        eof.offset = src_.size();
        tokens_.push_back(eof);
        return std::move(tokens_);
    }

private:
    [[noreturn]] void error(const std::string& message, size_t offset) const
    {
        throw TemplateError(ErrorKind::Syntax, message, offset);
    }

    bool findTag(size_t from, size_t& tagPos, TagKind& kind) const
    {
        for (size_t p = src_.find('{', from); p != std::string::npos && p + 1 < src_.size(); p = src_.find('{', p + 1))
        {
            const char c = src_[p + 1];
            if (c == '{' || c == '%' || c == '#')
            {
                tagPos = p;
                kind = c == '{' ? TagKind::Variable : c == '%' ? TagKind::Block : TagKind::Comment;
                return true;
            }
        }
        return false;
    }

    size_t skipSpaces(size_t p) const
    {
        while (p < src_.size())
        {
            size_t next = p;
            if (!isSpace(decodeUtf8(src_, next)))
                break;
            p = next;
        }
        return p;
    }

    bool matchWord(size_t p, const char* word, size_t& end) const
    {
        const size_t n = strlen(word);
        if (src_.compare(p, n, word) != 0)
            return false;
        end = p + n;
        return true;
    }

    // {%(-|+|)\s*raw\s*(-%}\s*|%}) at p; `end` is the position after it.
    bool matchRawBegin(size_t p, size_t& end) const
    {
        size_t q = p + 2;
        if (q < src_.size() && (src_[q] == '-' || src_[q] == '+'))
            q++;
        q = skipSpaces(q);
        if (!matchWord(q, "raw", q))
            return false;
        q = skipSpaces(q);
        if (matchWord(q, "-%}", q))
            end = skipSpaces(q);
        else if (matchWord(q, "%}", q))
            end = q;
        else
            return false;
        return true;
    }

    std::string stripBeforeTag(std::string text, char sign, bool lstripApplies) const
    {
        if (sign == '-')
            return strip(text, nullptr, false, true);
        if (sign != '+' && lstripApplies && options_.lstripBlocks)
        {
            const size_t lineStart = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
            if ((lineStart > 0 || lineStarting_) && lineStart < text.size())
            {
                const std::string tail = text.substr(lineStart);
                if (strip(tail, nullptr, true, false).empty())
                    text.resize(lineStart);
            }
        }
        return text;
    }

    void addData(const std::string& text, size_t offset)
    {
        if (text.empty())
            return;
        Token t;
        t.type = TokenType::Data;
        t.text = text;
        t.offset = offset;
        tokens_.push_back(std::move(t));
    }

    void addToken(TokenType type, size_t offset, std::string text = std::string())
    {
        Token t;
        t.type = type;
        t.offset = offset;
        t.text = std::move(text);
        tokens_.push_back(std::move(t));
    }

    // Block and comment ends: "+%}", "-%}" and the whitespace after it, "%}" and (trim_blocks)
    // one newline after it. Returns the position after the end, or npos.
    size_t matchTagEnd(size_t p, char closer, bool trims) const
    {
        if (p + 3 <= src_.size() && src_[p] == '+' && src_[p + 1] == closer && src_[p + 2] == '}')
            return p + 3;
        if (p + 3 <= src_.size() && src_[p] == '-' && src_[p + 1] == closer && src_[p + 2] == '}')
            return skipSpaces(p + 3);
        if (p + 2 <= src_.size() && src_[p] == closer && src_[p + 1] == '}')
        {
            size_t end = p + 2;
            if (trims && options_.trimBlocks && end < src_.size() && src_[end] == '\n')
                end++;
            return end;
        }
        return std::string::npos;
    }

    void finishTag(size_t end)
    {
        lineStarting_ = end > 0 && src_[end - 1] == '\n';
        pos_ = end;
    }

    void lexComment(size_t tagPos, size_t p)
    {
        for (; p < src_.size(); p++)
        {
            const size_t end = matchTagEnd(p, '#', true);
            if (end != std::string::npos)
            {
                finishTag(end);
                return;
            }
        }
        error("Missing end of comment tag", tagPos);
    }

    void lexRaw(size_t tagPos, size_t p)
    {
        // The text up to {%(-|+|)\s*endraw\s*(+%}|-%}\s*|%}\n?), lstrip rules applied to it.
        for (size_t q = src_.find("{%", p); q != std::string::npos; q = src_.find("{%", q + 1))
        {
            size_t r = q + 2;
            const char sign = r < src_.size() && (src_[r] == '-' || src_[r] == '+') ? src_[r] : 0;
            if (sign)
                r++;
            r = skipSpaces(r);
            if (!matchWord(r, "endraw", r))
                continue;
            r = skipSpaces(r);
            const size_t end = matchTagEnd(r, '%', true);
            if (end == std::string::npos)
                continue;
            addData(stripBeforeTag(src_.substr(p, q - p), sign, true), p);
            finishTag(end);
            return;
        }
        error("Missing end of raw directive", tagPos);
    }

    void lexTag(TagKind kind, size_t tagPos, size_t p)
    {
        const bool block = kind == TagKind::Block;
        addToken(block ? TokenType::BlockBegin : TokenType::VariableBegin, tagPos);
        std::vector<char> balance;
        while (true)
        {
            if (p >= src_.size())
                error(block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'", p);
            if (balance.empty())
            {
                size_t end = std::string::npos;
                if (block)
                    end = matchTagEnd(p, '%', true);
                else if (src_.compare(p, 3, "-}}") == 0)
                    end = skipSpaces(p + 3);
                else if (src_.compare(p, 2, "}}") == 0)
                    end = p + 2;
                if (end != std::string::npos)
                {
                    addToken(block ? TokenType::BlockEnd : TokenType::VariableEnd, p);
                    finishTag(end);
                    return;
                }
            }
            const size_t afterSpace = skipSpaces(p);
            if (afterSpace != p)
            {
                p = afterSpace;
                continue;
            }
            p = lexExpressionToken(p, balance);
        }
    }

    // (\d+_)*\d+ at p: the end, or npos.
    size_t matchDigits(size_t p) const
    {
        if (p >= src_.size() || !isDigit(src_[p]))
            return std::string::npos;
        while (p < src_.size())
        {
            while (p < src_.size() && isDigit(src_[p]))
                p++;
            if (p + 1 < src_.size() && src_[p] == '_' && isDigit(src_[p + 1]))
                p++;
            else
                break;
        }
        return p;
    }

    size_t matchFloat(size_t p) const
    {
        if (p > 0 && src_[p - 1] == '.')
            return std::string::npos;
        size_t q = matchDigits(p);
        if (q == std::string::npos)
            return q;
        bool fraction = false;
        if (q < src_.size() && src_[q] == '.')
        {
            const size_t f = matchDigits(q + 1);
            if (f != std::string::npos)
            {
                q = f;
                fraction = true;
            }
        }
        if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E'))
        {
            size_t e = q + 1;
            if (e < src_.size() && (src_[e] == '+' || src_[e] == '-'))
                e++;
            const size_t x = matchDigits(e);
            if (x != std::string::npos)
                return x;
        }
        return fraction ? q : std::string::npos;
    }

    size_t matchInteger(size_t p) const
    {
        if (p >= src_.size() || !isDigit(src_[p]))
            return std::string::npos;
        if (src_[p] == '0' && p + 1 < src_.size() && strchr("bBoOxX", src_[p + 1]))
        {
            const char base = (char)tolower((unsigned char)src_[p + 1]);
            auto digitOk = [&](char c) {
                return base == 'b' ? (c == '0' || c == '1') : base == 'o' ? (c >= '0' && c <= '7') : hexValue(c) >= 0;
            };
            size_t q = p + 2, end = std::string::npos;
            while (q < src_.size())
            {
                if (src_[q] == '_' && q + 1 < src_.size() && digitOk(src_[q + 1]))
                    q++;
                if (!digitOk(src_[q]))
                    break;
                end = ++q;
            }
            if (end != std::string::npos)
                return end;
        }
        if (src_[p] == '0')
        {
            size_t q = p + 1;
            while (q < src_.size())
            {
                if (src_[q] == '0')
                    q++;
                else if (src_[q] == '_' && q + 1 < src_.size() && src_[q + 1] == '0')
                    q += 2;
                else
                    break;
            }
            return q;
        }
        return matchDigits(p);
    }

    std::string decodeString(size_t begin, size_t end) const
    {
        std::string out;
        for (size_t i = begin; i < end; i++)
        {
            const char c = src_[i];
            if (c != '\\' || i + 1 >= end)
            {
                out += c;
                continue;
            }
            const char e = src_[++i];
            switch (e)
            {
            case '\n': break;
            case '\\': out += '\\'; break;
            case '\'': out += '\''; break;
            case '"': out += '"'; break;
            case 'a': out += '\a'; break;
            case 'b': out += '\b'; break;
            case 'f': out += '\f'; break;
            case 'n': out += '\n'; break;
            case 'r': out += '\r'; break;
            case 't': out += '\t'; break;
            case 'v': out += '\v'; break;
            case 'x': case 'u': case 'U':
            {
                const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                uint32_t cp = 0;
                for (int k = 0; k < digits; k++)
                {
                    const int h = i + 1 + k < end ? hexValue(src_[i + 1 + k]) : -1;
                    if (h < 0)
                        error(std::string("truncated \\") + e + " escape in a string", begin - 1);
                    cp = cp * 16 + (uint32_t)h;
                }
                if (cp > 0x10FFFF)
                    error("illegal Unicode character in a string escape", begin - 1);
                i += (size_t)digits;
                appendUtf8(cp, out);
                break;
            }
            case 'N': error("\\N{...} escapes are not supported", begin - 1);
            default:
                if (e >= '0' && e <= '7')
                {
                    uint32_t cp = (uint32_t)(e - '0');
                    for (int k = 0; k < 2 && i + 1 < end && src_[i + 1] >= '0' && src_[i + 1] <= '7'; k++)
                        cp = cp * 8 + (uint32_t)(src_[++i] - '0');
                    appendUtf8(cp, out);
                }
                else
                {
                    out += '\\';
                    out += e;
                }
            }
        }
        return out;
    }

    size_t lexExpressionToken(size_t p, std::vector<char>& balance)
    {
        const char c = src_[p];
        size_t end = matchFloat(p);
        if (end != std::string::npos)
        {
            std::string digits;
            for (size_t i = p; i < end; i++)
                if (src_[i] != '_')
                    digits += src_[i];
            Token t;
            t.type = TokenType::Float;
            t.offset = p;
            t.real = std::strtod(digits.c_str(), nullptr);
            tokens_.push_back(t);
            return end;
        }
        end = matchInteger(p);
        if (end != std::string::npos)
        {
            Token t;
            t.type = TokenType::Integer;
            t.offset = p;
            try
            {
                if (!parseInt(src_.substr(p, end - p), 0, t.integer))
                    error("invalid integer literal", p);
            }
            catch (const TemplateError& e)
            {
                error(e.message, p);
            }
            tokens_.push_back(t);
            return end;
        }
        if (isIdentifierStart((unsigned char)c))
        {
            size_t q = p;
            while (q < src_.size() && isIdentifierChar((unsigned char)src_[q]))
            {
                if ((unsigned char)src_[q] >= 0x80)
                {
                    size_t next = q;
                    if (isSpace(decodeUtf8(src_, next)))
                        break;
                    q = next;
                }
                else
                    q++;
            }
            if (q > p)
            {
                addToken(TokenType::Name, p, src_.substr(p, q - p));
                return q;
            }
        }
        if (c == '\'' || c == '"')
        {
            for (size_t q = p + 1; q < src_.size(); q++)
            {
                if (src_[q] == '\\')
                {
                    q++;
                    continue;
                }
                if (src_[q] == c)
                {
                    Token t;
                    t.type = TokenType::String;
                    t.offset = p;
                    t.text = decodeString(p + 1, q);
                    tokens_.push_back(std::move(t));
                    return q + 1;
                }
            }
        }
        static const char* const twoCharOperators[] = {"**", "//", "==", "!=", ">=", "<="};
        for (const char* op : twoCharOperators)
            if (src_.compare(p, 2, op) == 0)
            {
                addToken(TokenType::Operator, p, op);
                return p + 2;
            }
        if (c && strchr("+-/*%~[](){}><=.:|,;", c))
        {
            if (c == '(' || c == '[' || c == '{')
                balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
            else if (c == ')' || c == ']' || c == '}')
            {
                if (balance.empty())
                    error(std::string("unexpected '") + c + "'", p);
                if (balance.back() != c)
                    error(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", p);
                balance.pop_back();
            }
            addToken(TokenType::Operator, p, std::string(1, c));
            return p + 1;
        }
        size_t next = p;
        const uint32_t cp = decodeUtf8(src_, next);
        error("unexpected char " + reprString(fromCodePoint(cp)), p);
    }

    const std::string& src_;
    LexerOptions options_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
    bool lineStarting_ = true;
};

} // namespace

std::string normalizeNewlines(const std::string& source)
{
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); i++)
    {
        if (source[i] == '\r')
        {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n')
                i++;
        }
        else
            out += source[i];
    }
    if (!out.empty() && out.back() == '\n')
        out.pop_back();
    return out;
}

std::vector<Token> tokenize(const std::string& source, const LexerOptions& options)
{
    return Lexer(source, options).run();
}

}}}} // namespace cv::dnn::llm::jinja
