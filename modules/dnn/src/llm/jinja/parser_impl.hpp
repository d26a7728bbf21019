// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The parser's class, shared by parser.cpp (statements) and parser_expressions.cpp.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_PARSER_IMPL_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_PARSER_IMPL_HPP

#include "parser.hpp"
#include "errors.hpp"

#include <algorithm>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

//! How a token reads in a message: "'endif'", "end of statement block".
std::string describeToken(const Token& t);
inline bool isName(const Token& t, const char* value) { return t.type == TokenType::Name && t.text == value; }
inline bool isOp(const Token& t, const char* value) { return t.type == TokenType::Operator && t.text == value; }

//! Fails on a filter or test that does not exist where jinja2's compiler refuses one.
void checkFilterAndTestNames(const NodeList& body);

class Parser
{
public:
    explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

    NodeList parse();

private:
    // Counts nesting along the path being parsed (see kMaxParseDepth).
    struct DepthGuard
    {
        explicit DepthGuard(Parser& p) : parser(p) {}
        ~DepthGuard() { parser.depth_ -= added; }
        void add()
        {
            added++;
            if (++parser.depth_ > kMaxParseDepth)
                parser.error("the template nests expressions or statements deeper than " +
                             std::to_string(kMaxParseDepth) + " levels", parser.current().offset);
        }
        Parser& parser;
        int added = 0;
    };

    // Where the parser is: whether a loop encloses it (break and continue), and the macro
    // whose body it is.
    struct Frame
    {
        bool inLoop = false;
        MacroNode* macro = nullptr;
    };

    [[noreturn]] void error(const std::string& message, size_t offset) const
    {
        throw TemplateError(ErrorKind::Syntax, message, offset);
    }

    const Token& current() const { return tokens_[pos_]; }
    const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
    const Token& next()
    {
        const Token& t = tokens_[pos_];
        if (pos_ + 1 < tokens_.size())
            pos_++;
        return t;
    }
    bool skipName(const char* name)
    {
        if (!isName(current(), name))
            return false;
        next();
        return true;
    }
    bool skipOp(const char* op)
    {
        if (!isOp(current(), op))
            return false;
        next();
        return true;
    }
    const Token& expect(TokenType type, const char* what)
    {
        if (current().type != type)
            error(std::string("expected ") + what + ", got " + describeToken(current()), current().offset);
        return next();
    }
    const Token& expectName(const char* name)
    {
        if (!isName(current(), name))
            error(std::string("expected '") + name + "', got " + describeToken(current()), current().offset);
        return next();
    }
    const Token& expectOp(const char* op)
    {
        if (!isOp(current(), op))
            error(std::string("expected '") + op + "', got " + describeToken(current()), current().offset);
        return next();
    }

    Frame& frame() { return frames_.back(); }

    // statements (parser.cpp)
    NodeList subparse(const std::vector<const char*>& endTokens);
    NodeList parseStatements(const std::vector<const char*>& endTokens, bool dropNeedle = false);
    NodeList parseBody(const std::vector<const char*>& endTokens, bool dropNeedle, Frame inner);
    Frame innerFrame(bool inLoop, MacroNode* macro = nullptr);
    NodePtr parseStatement();
    NodePtr parseFor();
    NodePtr parseIf();
    NodePtr parseSet();
    void parseSignature(MacroNode& node);
    NodePtr parseMacro();
    NodePtr parseCallBlock();
    NodePtr parseFilterBlock();
    NodePtr parseWith();
    NodePtr parsePrint();
    void checkAssignableName(const Token& t) const;
    void checkAssignable(const Node& target) const;
    NodePtr parseAssignTarget(bool withTuple, bool nameOnly, const std::vector<const char*>& extraEnd, bool withNamespace);

    // expressions (parser_expressions.cpp)
    NodePtr parseExpression(bool withCondexpr);
    NodePtr parseCondexpr();
    NodePtr parseOr();
    NodePtr parseAnd();
    NodePtr parseNot();
    NodePtr parseCompare();
    NodePtr parseMath1();
    NodePtr parseConcat();
    NodePtr parseMath2();
    NodePtr parsePow();
    NodePtr parseUnary(bool withFilter);
    NodePtr parsePrimary();
    bool isTupleEnd(const std::vector<const char*>& extraEnd) const;
    NodePtr parseTuple(bool simplified, bool withCondexpr, const std::vector<const char*>& extraEnd, bool explicitParens);
    NodePtr parseList();
    NodePtr parseDict();
    NodePtr parsePostfix(NodePtr node, DepthGuard& guard);
    NodePtr parseFilterExpr(NodePtr node, DepthGuard& guard);
    NodePtr parseSubscript(NodePtr node);
    NodePtr parseSubscribed();
    CallArguments parseCallArgs();
    NodePtr parseCall(NodePtr callee);
    std::string parseDottedName();
    NodePtr parseFilter(NodePtr node, bool startInline);
    NodePtr parseTest(NodePtr node);

    const std::vector<Token>& tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    std::vector<Frame> frames_ = std::vector<Frame>(1);
};

}}}} // namespace cv::dnn::llm::jinja

#endif
