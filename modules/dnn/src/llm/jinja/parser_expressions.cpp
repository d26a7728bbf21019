// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "parser_impl.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

NodePtr Parser::parseExpression(bool withCondexpr)
{
    return withCondexpr ? parseCondexpr() : parseOr();
}

NodePtr Parser::parseCondexpr()
{
    DepthGuard guard(*this);
    const size_t offset = current().offset;
    NodePtr expr = parseOr();
    while (isName(current(), "if"))
    {
        guard.add();
        next();
        std::unique_ptr<CondExprNode> node(new CondExprNode(offset));
        node->then = std::move(expr);
        node->test = parseOr();
        if (skipName("else"))
            node->otherwise = parseCondexpr();
        expr.reset(node.release());
    }
    return expr;
}

NodePtr Parser::parseOr()
{
    DepthGuard guard(*this);
    NodePtr left = parseAnd();
    while (isName(current(), "or"))
    {
        guard.add();
        const size_t offset = next().offset;
        left.reset(new BinaryNode(NodeType::Or, offset, BinaryOp::Add, std::move(left), parseAnd()));
    }
    return left;
}

NodePtr Parser::parseAnd()
{
    DepthGuard guard(*this);
    NodePtr left = parseNot();
    while (isName(current(), "and"))
    {
        guard.add();
        const size_t offset = next().offset;
        left.reset(new BinaryNode(NodeType::And, offset, BinaryOp::Add, std::move(left), parseNot()));
    }
    return left;
}

NodePtr Parser::parseNot()
{
    if (isName(current(), "not"))
    {
        DepthGuard guard(*this);
        guard.add();
        const size_t offset = next().offset;
        return NodePtr(new UnaryNode(NodeType::Not, offset, parseNot()));
    }
    return parseCompare();
}

NodePtr Parser::parseCompare()
{
    const size_t offset = current().offset;
    NodePtr expr = parseMath1();
    std::unique_ptr<CompareNode> node;
    while (true)
    {
        CompareOp op;
        const Token& t = current();
        if (isOp(t, "==")) op = CompareOp::Eq;
        else if (isOp(t, "!=")) op = CompareOp::Ne;
        else if (isOp(t, "<")) op = CompareOp::Lt;
        else if (isOp(t, "<=")) op = CompareOp::Le;
        else if (isOp(t, ">")) op = CompareOp::Gt;
        else if (isOp(t, ">=")) op = CompareOp::Ge;
        else if (isName(t, "in")) op = CompareOp::In;
        else if (isName(t, "not") && isName(look(), "in"))
        {
            next();
            op = CompareOp::NotIn;
        }
        else
            break;
        next();
        if (!node)
        {
            node.reset(new CompareNode(offset));
            node->first = std::move(expr);
        }
        node->rest.emplace_back(op, parseMath1());
    }
    return node ? NodePtr(node.release()) : std::move(expr);
}

NodePtr Parser::parseMath1()
{
    DepthGuard guard(*this);
    NodePtr left = parseConcat();
    while (isOp(current(), "+") || isOp(current(), "-"))
    {
        guard.add();
        const Token& t = next();
        left.reset(new BinaryNode(NodeType::Binary, t.offset, t.text == "+" ? BinaryOp::Add : BinaryOp::Sub,
                                  std::move(left), parseConcat()));
    }
    return left;
}

NodePtr Parser::parseConcat()
{
    const size_t offset = current().offset;
    NodePtr first = parseMath2();
    if (!isOp(current(), "~"))
        return first;
    std::unique_ptr<ConcatNode> node(new ConcatNode(offset));
    node->parts.push_back(std::move(first));
    while (skipOp("~"))
        node->parts.push_back(parseMath2());
    return NodePtr(node.release());
}

NodePtr Parser::parseMath2()
{
    DepthGuard guard(*this);
    NodePtr left = parsePow();
    while (true)
    {
        BinaryOp op;
        if (isOp(current(), "*")) op = BinaryOp::Mul;
        else if (isOp(current(), "/")) op = BinaryOp::Div;
        else if (isOp(current(), "//")) op = BinaryOp::FloorDiv;
        else if (isOp(current(), "%")) op = BinaryOp::Mod;
        else break;
        guard.add();
        const size_t offset = next().offset;
        left.reset(new BinaryNode(NodeType::Binary, offset, op, std::move(left), parsePow()));
    }
    return left;
}

NodePtr Parser::parsePow()
{
    DepthGuard guard(*this);
    NodePtr left = parseUnary(true);
    while (isOp(current(), "**"))
    {
        guard.add();
        const size_t offset = next().offset;
        left.reset(new BinaryNode(NodeType::Binary, offset, BinaryOp::Pow, std::move(left), parseUnary(true)));
    }
    return left;
}

NodePtr Parser::parseUnary(bool withFilter)
{
    DepthGuard guard(*this);
    guard.add();
    NodePtr node;
    if (isOp(current(), "-") || isOp(current(), "+"))
    {
        const Token& t = next();
        node.reset(new UnaryNode(t.text == "-" ? NodeType::Neg : NodeType::Pos, t.offset, parseUnary(false)));
    }
    else
        node = parsePrimary();
    node = parsePostfix(std::move(node), guard);
    if (withFilter)
        node = parseFilterExpr(std::move(node), guard);
    return node;
}

NodePtr Parser::parsePrimary()
{
    const Token& t = current();
    switch (t.type)
    {
    case TokenType::Name:
    {
        next();
        if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False")
            return NodePtr(new ConstNode(t.offset, Value::boolean(t.text[0] == 't' || t.text[0] == 'T')));
        if (t.text == "none" || t.text == "None")
            return NodePtr(new ConstNode(t.offset, Value::none()));
        if (frame().macro && (t.text == "caller" || t.text == "varargs" || t.text == "kwargs"))
        {
            MacroNode* macro = frame().macro;
            (t.text == "caller" ? macro->usesCaller : t.text == "varargs" ? macro->usesVarargs : macro->usesKwargs) = true;
        }
        return NodePtr(new NameNode(t.offset, t.text));
    }
    case TokenType::String:
    {
        const size_t offset = t.offset;
        std::string text;
        while (current().type == TokenType::String)
            text += next().text;
        return NodePtr(new ConstNode(offset, Value::string(text)));
    }
    case TokenType::Integer: next(); return NodePtr(new ConstNode(t.offset, Value::integer(t.integer)));
    case TokenType::Float: next(); return NodePtr(new ConstNode(t.offset, Value::number(t.real)));
    case TokenType::Operator:
        if (t.text == "(")
        {
            next();
            NodePtr node = parseTuple(false, true, {}, true);
            expectOp(")");
            return node;
        }
        if (t.text == "[")
            return parseList();
        if (t.text == "{")
            return parseDict();
        break;
    default: break;
    }
    error("unexpected " + describeToken(t), t.offset);
}

bool Parser::isTupleEnd(const std::vector<const char*>& extraEnd) const
{
    const Token& t = current();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || isOp(t, ")") || t.type == TokenType::Eof)
        return true;
    for (const char* end : extraEnd)
        if (isName(t, end))
            return true;
    return false;
}

NodePtr Parser::parseTuple(bool simplified, bool withCondexpr, const std::vector<const char*>& extraEnd, bool explicitParens)
{
    const size_t offset = current().offset;
    NodeList items;
    bool isTuple = false;
    while (true)
    {
        if (!items.empty())
            expectOp(",");
        if (isTupleEnd(extraEnd))
            break;
        items.push_back(simplified ? parsePrimary() : parseExpression(withCondexpr));
        if (isOp(current(), ","))
            isTuple = true;
        else
            break;
    }
    if (!isTuple)
    {
        if (!items.empty())
            return std::move(items[0]);
        if (!explicitParens)
            error("Expected an expression, got " + describeToken(current()), current().offset);
    }
    std::unique_ptr<SequenceNode> node(new SequenceNode(NodeType::Tuple, offset));
    node->items = std::move(items);
    return NodePtr(node.release());
}

NodePtr Parser::parseList()
{
    std::unique_ptr<SequenceNode> node(new SequenceNode(NodeType::List, expectOp("[").offset));
    while (!isOp(current(), "]"))
    {
        if (!node->items.empty())
            expectOp(",");
        if (isOp(current(), "]"))
            break;
        node->items.push_back(parseExpression(true));
    }
    expectOp("]");
    return NodePtr(node.release());
}

NodePtr Parser::parseDict()
{
    std::unique_ptr<DictNode> node(new DictNode(expectOp("{").offset));
    while (!isOp(current(), "}"))
    {
        if (!node->pairs.empty())
            expectOp(",");
        if (isOp(current(), "}"))
            break;
        NodePtr key = parseExpression(true);
        expectOp(":");
        node->pairs.emplace_back(std::move(key), parseExpression(true));
    }
    expectOp("}");
    return NodePtr(node.release());
}

NodePtr Parser::parsePostfix(NodePtr node, DepthGuard& guard)
{
    while (true)
    {
        if (isOp(current(), ".") || isOp(current(), "["))
            node = parseSubscript(std::move(node));
        else if (isOp(current(), "("))
            node = parseCall(std::move(node));
        else
            break;
        guard.add();
    }
    return node;
}

NodePtr Parser::parseFilterExpr(NodePtr node, DepthGuard& guard)
{
    while (true)
    {
        if (isOp(current(), "|"))
            node = parseFilter(std::move(node), false);
        else if (isName(current(), "is"))
            node = parseTest(std::move(node));
        else if (isOp(current(), "("))
            node = parseCall(std::move(node));
        else
            break;
        guard.add();
    }
    return node;
}

NodePtr Parser::parseSubscript(NodePtr node)
{
    const Token& t = next();
    if (t.text == ".")
    {
        const Token& attribute = next();
        if (attribute.type == TokenType::Name)
            return NodePtr(new GetattrNode(t.offset, std::move(node), attribute.text));
        if (attribute.type != TokenType::Integer)
            error("expected name or number", attribute.offset);
        return NodePtr(new GetitemNode(t.offset, std::move(node),
                                       NodePtr(new ConstNode(attribute.offset, Value::integer(attribute.integer)))));
    }
    NodeList args;
    while (!isOp(current(), "]"))
    {
        if (!args.empty())
            expectOp(",");
        args.push_back(parseSubscribed());
    }
    expectOp("]");
    if (args.size() == 1)
        return NodePtr(new GetitemNode(t.offset, std::move(node), std::move(args[0])));
    std::unique_ptr<SequenceNode> tuple(new SequenceNode(NodeType::Tuple, t.offset));
    tuple->items = std::move(args);
    return NodePtr(new GetitemNode(t.offset, std::move(node), NodePtr(tuple.release())));
}

NodePtr Parser::parseSubscribed()
{
    const size_t offset = current().offset;
    std::unique_ptr<SliceNode> slice(new SliceNode(offset));
    if (isOp(current(), ":"))
        next();
    else
    {
        NodePtr expr = parseExpression(true);
        if (!isOp(current(), ":"))
            return expr;
        next();
        slice->start = std::move(expr);
    }
    if (!isOp(current(), ":") && !isOp(current(), "]") && !isOp(current(), ","))
        slice->stop = parseExpression(true);
    if (skipOp(":"))
        if (!isOp(current(), "]") && !isOp(current(), ","))
            slice->step = parseExpression(true);
    return NodePtr(slice.release());
}

CallArguments Parser::parseCallArgs()
{
    const Token& open = expectOp("(");
    CallArguments args;
    bool requireComma = false;
    auto ensure = [&](bool ok) {
        if (!ok)
            error("invalid syntax for function call expression", open.offset);
    };
    while (!isOp(current(), ")"))
    {
        if (requireComma)
        {
            expectOp(",");
            if (isOp(current(), ")"))
                break;
        }
        if (isOp(current(), "*"))
        {
            ensure(!args.starArgs && !args.starKwargs);
            next();
            args.starArgs = parseExpression(true);
        }
        else if (isOp(current(), "**"))
        {
            ensure(!args.starKwargs);
            next();
            args.starKwargs = parseExpression(true);
        }
        else if (current().type == TokenType::Name && isOp(look(), "="))
        {
            ensure(!args.starKwargs);
            const std::string key = next().text;
            next();
            args.keywords.emplace_back(key, parseExpression(true));
        }
        else
        {
            ensure(!args.starArgs && !args.starKwargs && args.keywords.empty());
            args.positional.push_back(parseExpression(true));
        }
        requireComma = true;
    }
    expectOp(")");
    return args;
}

NodePtr Parser::parseCall(NodePtr callee)
{
    std::unique_ptr<CallNode> node(new CallNode(callee->offset));  // errors point at what was called
    node->callee = std::move(callee);
    node->args = parseCallArgs();
    return NodePtr(node.release());
}

std::string Parser::parseDottedName()
{
    std::string name = expect(TokenType::Name, "name").text;
    while (isOp(current(), "."))
    {
        next();
        name += "." + expect(TokenType::Name, "name").text;
    }
    return name;
}

NodePtr Parser::parseFilter(NodePtr node, bool startInline)
{
    while (isOp(current(), "|") || startInline)
    {
        if (!startInline)
            next();
        const size_t offset = current().offset;
        std::unique_ptr<FilterNode> filter(new FilterNode(NodeType::Filter, offset));
        filter->name = parseDottedName();
        if (isOp(current(), "("))
            filter->args = parseCallArgs();
        filter->input = std::move(node);
        node.reset(filter.release());
        startInline = false;
    }
    return node;
}

NodePtr Parser::parseTest(NodePtr node)
{
    const Token& is = next();
    const bool negated = skipName("not");
    std::unique_ptr<FilterNode> test(new FilterNode(NodeType::Test, current().offset));
    test->name = parseDottedName();
    const Token& t = current();
    if (isOp(t, "("))
        test->args = parseCallArgs();
    else if ((t.type == TokenType::Name || t.type == TokenType::String || t.type == TokenType::Integer ||
              t.type == TokenType::Float || isOp(t, "[") || isOp(t, "{")) &&
             !isName(t, "else") && !isName(t, "or") && !isName(t, "and"))
    {
        if (isName(t, "is"))
            error("You cannot chain multiple tests with is", t.offset);
        DepthGuard guard(*this);
        guard.add();
        test->args.positional.push_back(parsePostfix(parsePrimary(), guard));
    }
    test->input = std::move(node);
    NodePtr result(test.release());
    if (negated)
        result.reset(new UnaryNode(NodeType::Not, is.offset, std::move(result)));
    return result;
}

}}}} // namespace cv::dnn::llm::jinja
