// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "parser_impl.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

std::string describeToken(const Token& t)
{
    switch (t.type)
    {
    case TokenType::Data: return "template data";
    case TokenType::VariableBegin: return "begin of print statement";
    case TokenType::VariableEnd: return "end of print statement";
    case TokenType::BlockBegin: return "begin of statement block";
    case TokenType::BlockEnd: return "end of statement block";
    case TokenType::Name: return "'" + t.text + "'";
    case TokenType::String: return "string";
    case TokenType::Integer: return "integer";
    case TokenType::Float: return "float";
    case TokenType::Operator: return "'" + t.text + "'";
    case TokenType::Eof: return "end of template";
    }
    return "token";
}

NodeList Parser::parse()
{
    NodeList body = subparse({});
    if (current().type != TokenType::Eof)
        error("unexpected " + describeToken(current()), current().offset);
    return body;
}

NodeList Parser::subparse(const std::vector<const char*>& endTokens)
{
    NodeList body;
    OutputNode* output = nullptr;
    auto addOutput = [&](NodePtr item) {
        if (!output)
        {
            body.emplace_back(new OutputNode(item->offset));
            output = static_cast<OutputNode*>(body.back().get());
        }
        output->items.push_back(std::move(item));
    };
    while (current().type != TokenType::Eof)
    {
        const Token& t = current();
        if (t.type == TokenType::Data)
        {
            addOutput(NodePtr(new DataNode(t.offset, t.text)));
            next();
        }
        else if (t.type == TokenType::VariableBegin)
        {
            next();
            addOutput(parseTuple(false, true, {}, false));
            expect(TokenType::VariableEnd, "end of print statement");
        }
        else if (t.type == TokenType::BlockBegin)
        {
            output = nullptr;
            next();
            for (const char* end : endTokens)
                if (isName(current(), end))
                    return body;
            body.push_back(parseStatement());
            expect(TokenType::BlockEnd, "end of statement block");
        }
        else
            error("unexpected " + describeToken(t), t.offset);
    }
    return body;
}

NodeList Parser::parseStatements(const std::vector<const char*>& endTokens, bool dropNeedle)
{
    skipOp(":");
    expect(TokenType::BlockEnd, "end of statement block");
    NodeList body = subparse(endTokens);
    if (current().type == TokenType::Eof)
    {
        std::string names;
        for (const char* end : endTokens)
            names += std::string(names.empty() ? "" : " or ") + "'" + end + "'";
        error("unexpected end of template; Jinja was looking for the following tags: " + names, current().offset);
    }
    if (dropNeedle)
        next();
    return body;
}

NodeList Parser::parseBody(const std::vector<const char*>& endTokens, bool dropNeedle, Frame inner)
{
    frames_.push_back(inner);
    NodeList body = parseStatements(endTokens, dropNeedle);
    frames_.pop_back();
    return body;
}

Parser::Frame Parser::innerFrame(bool inLoop, MacroNode* macro)
{
    Frame f;
    f.inLoop = inLoop;
    f.macro = macro ? macro : frame().macro;
    return f;
}

NodePtr Parser::parseStatement()
{
    DepthGuard guard(*this);
    guard.add();
    const Token& t = current();
    if (t.type != TokenType::Name)
        error("tag name expected", t.offset);
    const std::string tag = t.text;
    if (tag == "for") return parseFor();
    if (tag == "if") return parseIf();
    if (tag == "set") return parseSet();
    if (tag == "macro") return parseMacro();
    if (tag == "call") return parseCallBlock();
    if (tag == "filter") return parseFilterBlock();
    if (tag == "with") return parseWith();
    if (tag == "print") return parsePrint();
    if (tag == "break" || tag == "continue")
    {
        if (!frame().inLoop)
            error("'" + tag + "' outside loop", t.offset);
        next();
        return NodePtr(new Node(tag == "break" ? NodeType::Break : NodeType::Continue, t.offset));
    }
    if (tag == "block" || tag == "generation")
    {
        next();
        std::unique_ptr<BodyNode> node(new BodyNode(NodeType::Scope, t.offset));
        if (tag == "block")
        {
            const std::string name = expect(TokenType::Name, "block name").text;
            skipName("scoped");
            skipName("required");
            node->body = parseBody({"endblock"}, true, innerFrame(false));
            skipName(name.c_str());
        }
        else
            node->body = parseBody({"endgeneration"}, true, innerFrame(frame().inLoop));
        return NodePtr(node.release());
    }
    if (tag == "autoescape")
    {
        next();
        std::unique_ptr<BodyNode> node(new BodyNode(NodeType::Autoescape, t.offset));
        node->value = parseExpression(true);
        node->body = parseBody({"endautoescape"}, true, innerFrame(frame().inLoop));
        return NodePtr(node.release());
    }
    if (tag == "extends" || tag == "include" || tag == "import" || tag == "from")
    {
        // No loader: these parse (roughly) and fail when reached, as jinja2 without a loader.
        next();
        while (current().type != TokenType::BlockEnd && current().type != TokenType::Eof)
            next();
        return NodePtr(new UnsupportedNode(t.offset, tag));
    }
    error("Encountered unknown tag '" + tag + "'.", t.offset);
}

NodePtr Parser::parseFor()
{
    std::unique_ptr<ForNode> node(new ForNode(next().offset));
    node->target = parseAssignTarget(true, false, {"in"}, false);
    expectName("in");
    node->iterable = parseTuple(false, false, {"recursive"}, false);
    frames_.push_back(innerFrame(true));
    if (skipName("if"))
        node->filter = parseExpression(true);
    frames_.pop_back();
    node->recursive = skipName("recursive");
    node->body = parseBody({"endfor", "else"}, false, innerFrame(true));
    if (next().text == "endfor")
        return NodePtr(node.release());
    node->otherwise = parseBody({"endfor"}, true, innerFrame(frame().inLoop));
    return NodePtr(node.release());
}

NodePtr Parser::parseIf()
{
    std::unique_ptr<IfNode> node(new IfNode(next().offset));
    while (true)
    {
        NodePtr test = parseTuple(false, false, {}, false);
        NodeList body = parseStatements({"elif", "else", "endif"});
        node->branches.emplace_back(std::move(test), std::move(body));
        const Token& t = next();
        if (t.text == "elif")
            continue;
        if (t.text == "else")
            node->otherwise = parseStatements({"endif"}, true);
        break;
    }
    return NodePtr(node.release());
}

NodePtr Parser::parseSet()
{
    const size_t offset = next().offset;
    NodePtr target = parseAssignTarget(true, false, {}, true);
    if (skipOp("="))
    {
        std::unique_ptr<SetNode> node(new SetNode(offset));
        node->target = std::move(target);
        node->value = parseTuple(false, true, {}, false);
        return NodePtr(node.release());
    }
    std::unique_ptr<SetBlockNode> node(new SetBlockNode(offset));
    node->target = std::move(target);
    node->filter = parseFilter(nullptr, false);
    node->body = parseBody({"endset"}, true, innerFrame(frame().inLoop));
    return NodePtr(node.release());
}

void Parser::parseSignature(MacroNode& node)
{
    expectOp("(");
    while (!isOp(current(), ")"))
    {
        if (!node.params.empty())
            expectOp(",");
        const Token& name = expect(TokenType::Name, "parameter name");
        checkAssignableName(name);
        if (skipOp("="))
            node.defaults.push_back(parseExpression(true));
        else if (!node.defaults.empty())
            error("non-default argument follows default argument", name.offset);
        node.params.push_back(name.text);
    }
    expectOp(")");
}

NodePtr Parser::parseMacro()
{
    std::unique_ptr<MacroNode> node(new MacroNode(NodeType::Macro, next().offset));
    const Token& name = expect(TokenType::Name, "macro name");
    checkAssignableName(name);
    node->name = name.text;
    frames_.push_back(innerFrame(false, node.get()));
    parseSignature(*node);
    frames_.pop_back();
    node->body = parseBody({"endmacro"}, true, innerFrame(false, node.get()));
    return NodePtr(node.release());
}

NodePtr Parser::parseCallBlock()
{
    std::unique_ptr<MacroNode> node(new MacroNode(NodeType::CallBlock, next().offset));
    node->name = "caller";
    frames_.push_back(innerFrame(false, node.get()));
    if (isOp(current(), "("))
        parseSignature(*node);
    frames_.pop_back();
    node->call = parseExpression(true);
    if (node->call->type != NodeType::Call)
        error("expected call", node->offset);
    node->body = parseBody({"endcall"}, true, innerFrame(false, node.get()));
    return NodePtr(node.release());
}

NodePtr Parser::parseFilterBlock()
{
    std::unique_ptr<FilterBlockNode> node(new FilterBlockNode(next().offset));
    node->filter = parseFilter(nullptr, true);
    node->body = parseBody({"endfilter"}, true, innerFrame(frame().inLoop));
    return NodePtr(node.release());
}

NodePtr Parser::parseWith()
{
    std::unique_ptr<WithNode> node(new WithNode(next().offset));
    while (current().type != TokenType::BlockEnd)
    {
        if (!node->targets.empty())
            expectOp(",");
        node->targets.push_back(parseAssignTarget(true, false, {}, false));
        expectOp("=");
        node->values.push_back(parseExpression(true));
    }
    node->body = parseBody({"endwith"}, true, innerFrame(frame().inLoop));
    return NodePtr(node.release());
}

NodePtr Parser::parsePrint()
{
    std::unique_ptr<OutputNode> node(new OutputNode(next().offset));
    while (current().type != TokenType::BlockEnd)
    {
        if (!node->items.empty())
            expectOp(",");
        node->items.push_back(parseExpression(true));
    }
    return NodePtr(node.release());
}

void Parser::checkAssignableName(const Token& t) const
{
    static const char* const constants[] = {"true", "false", "none", "True", "False", "None"};
    for (const char* c : constants)
        if (t.text == c)
            error("can't assign to 'const'", t.offset);
}

void Parser::checkAssignable(const Node& target) const
{
    if (target.type == NodeType::Name)
        return;
    if (target.type == NodeType::Tuple)
    {
        for (const NodePtr& item : static_cast<const SequenceNode&>(target).items)
            checkAssignable(*item);
        return;
    }
    error("can't assign to this expression", target.offset);
}

NodePtr Parser::parseAssignTarget(bool withTuple, bool nameOnly, const std::vector<const char*>& extraEnd, bool withNamespace)
{
    if (withNamespace && isOp(look(), "."))
    {
        const Token& name = expect(TokenType::Name, "name");
        next();
        const Token& attribute = expect(TokenType::Name, "attribute name");
        return NodePtr(new NamespaceRefNode(name.offset, name.text, attribute.text));
    }
    if (nameOnly)
    {
        const Token& name = expect(TokenType::Name, "name");
        checkAssignableName(name);
        return NodePtr(new NameNode(name.offset, name.text));
    }
    NodePtr target = withTuple ? parseTuple(true, true, extraEnd, false) : parsePrimary();
    if (target->type == NodeType::Const)
        error("can't assign to 'const'", target->offset);
    checkAssignable(*target);
    return target;
}

NodeList parseTemplate(const std::vector<Token>& tokens)
{
    NodeList body = Parser(tokens).parse();
    checkFilterAndTestNames(body);
    return body;
}

}}}} // namespace cv::dnn::llm::jinja
