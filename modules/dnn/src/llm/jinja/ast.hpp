// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The syntax tree the parser builds and the interpreter walks: jinja2's nodes (jinja2/nodes.py)
// for the statements and expressions chat templates use. Every node keeps the offset of its
// first token, for error messages.

#ifndef OPENCV_DNN_SRC_LLM_JINJA_AST_HPP
#define OPENCV_DNN_SRC_LLM_JINJA_AST_HPP

#include "value.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

enum class NodeType
{
    // expressions
    Const, Name, List, Tuple, Dict, Getattr, Getitem, Slice, Call, Filter, Test, CondExpr,
    And, Or, Not, Neg, Pos, Binary, Concat, Compare, NamespaceRef,
    // statements
    Data, Output, If, For, Set, SetBlock, Macro, CallBlock, FilterBlock, With, Break, Continue,
    Scope,        //!< {% block %} and transformers' {% generation %}: the body, rendered in place
    Autoescape,
    Unsupported   //!< {% include %}, {% import %}, {% extends %}: no loader, an error when reached
};

struct Node
{
    Node(NodeType type, size_t offset) : type(type), offset(offset) {}
    virtual ~Node() {}
    NodeType type;
    size_t offset;
};

using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

struct ConstNode : Node
{
    ConstNode(size_t offset, Value value) : Node(NodeType::Const, offset), value(std::move(value)) {}
    Value value;
};

struct NameNode : Node
{
    NameNode(size_t offset, std::string name) : Node(NodeType::Name, offset), name(std::move(name)) {}
    std::string name;
};

//! List and Tuple literals; also tuple targets of for and set.
struct SequenceNode : Node
{
    SequenceNode(NodeType type, size_t offset) : Node(type, offset) {}
    NodeList items;
};

struct DictNode : Node
{
    explicit DictNode(size_t offset) : Node(NodeType::Dict, offset) {}
    std::vector<std::pair<NodePtr, NodePtr> > pairs;
};

struct GetattrNode : Node
{
    GetattrNode(size_t offset, NodePtr object, std::string attribute)
        : Node(NodeType::Getattr, offset), object(std::move(object)), attribute(std::move(attribute)) {}
    NodePtr object;
    std::string attribute;
};

struct GetitemNode : Node
{
    GetitemNode(size_t offset, NodePtr object, NodePtr index)
        : Node(NodeType::Getitem, offset), object(std::move(object)), index(std::move(index)) {}
    NodePtr object, index;
};

struct SliceNode : Node
{
    explicit SliceNode(size_t offset) : Node(NodeType::Slice, offset) {}
    NodePtr start, stop, step;  //!< null where omitted
};

struct CallArguments
{
    NodeList positional;
    std::vector<std::pair<std::string, NodePtr> > keywords;
    NodePtr starArgs, starKwargs;  //!< *args, **kwargs
};

struct CallNode : Node
{
    explicit CallNode(size_t offset) : Node(NodeType::Call, offset) {}
    NodePtr callee;
    CallArguments args;
};

//! `input | name(args)` and `input is name(args)`; input is null in {% filter %} and
//! {% set x | filter %}, where the filter applies to the block's text.
struct FilterNode : Node
{
    FilterNode(NodeType type, size_t offset) : Node(type, offset) {}
    NodePtr input;
    std::string name;
    CallArguments args;
};

struct CondExprNode : Node
{
    explicit CondExprNode(size_t offset) : Node(NodeType::CondExpr, offset) {}
    NodePtr test, then, otherwise;  //!< otherwise: null without `else`
};

//! Not, Neg, Pos.
struct UnaryNode : Node
{
    UnaryNode(NodeType type, size_t offset, NodePtr operand) : Node(type, offset), operand(std::move(operand)) {}
    NodePtr operand;
};

enum class BinaryOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };

//! And, Or, and the arithmetic of Binary.
struct BinaryNode : Node
{
    BinaryNode(NodeType type, size_t offset, BinaryOp op, NodePtr left, NodePtr right)
        : Node(type, offset), op(op), left(std::move(left)), right(std::move(right)) {}
    BinaryOp op;
    NodePtr left, right;
};

struct ConcatNode : Node
{
    explicit ConcatNode(size_t offset) : Node(NodeType::Concat, offset) {}
    NodeList parts;
};

enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct CompareNode : Node
{
    explicit CompareNode(size_t offset) : Node(NodeType::Compare, offset) {}
    NodePtr first;
    std::vector<std::pair<CompareOp, NodePtr> > rest;
};

//! The target of {% set ns.attribute = ... %}.
struct NamespaceRefNode : Node
{
    NamespaceRefNode(size_t offset, std::string name, std::string attribute)
        : Node(NodeType::NamespaceRef, offset), name(std::move(name)), attribute(std::move(attribute)) {}
    std::string name, attribute;
};

struct DataNode : Node
{
    DataNode(size_t offset, std::string text) : Node(NodeType::Data, offset), text(std::move(text)) {}
    std::string text;
};

//! Template text and {{ expressions }}, in order.
struct OutputNode : Node
{
    explicit OutputNode(size_t offset) : Node(NodeType::Output, offset) {}
    NodeList items;
};

struct IfNode : Node
{
    explicit IfNode(size_t offset) : Node(NodeType::If, offset) {}
    std::vector<std::pair<NodePtr, NodeList> > branches;  //!< if and elif: condition, body
    NodeList otherwise;
};

struct ForNode : Node
{
    explicit ForNode(size_t offset) : Node(NodeType::For, offset) {}
    NodePtr target, iterable, filter;  //!< filter: `for x in xs if condition`, or null
    bool recursive = false;
    NodeList body, otherwise;
};

struct SetNode : Node
{
    explicit SetNode(size_t offset) : Node(NodeType::Set, offset) {}
    NodePtr target, value;  //!< target: Name, Tuple of names, or NamespaceRef
};

struct SetBlockNode : Node
{
    explicit SetBlockNode(size_t offset) : Node(NodeType::SetBlock, offset) {}
    NodePtr target, filter;  //!< filter: a chain of FilterNodes ending in a null input, or null
    NodeList body;
};

//! A macro or the body of a {% call %} block (the `caller`).
struct MacroNode : Node
{
    MacroNode(NodeType type, size_t offset) : Node(type, offset) {}
    std::string name;
    std::vector<std::string> params;
    NodeList defaults;        //!< defaults of the last defaults.size() params
    NodeList body;
    NodePtr call;             //!< CallBlock only: the call of the macro that receives `caller`
    bool usesCaller = false, usesVarargs = false, usesKwargs = false;
};

struct FilterBlockNode : Node
{
    explicit FilterBlockNode(size_t offset) : Node(NodeType::FilterBlock, offset) {}
    NodePtr filter;
    NodeList body;
};

struct WithNode : Node
{
    explicit WithNode(size_t offset) : Node(NodeType::With, offset) {}
    NodeList targets, values;
    NodeList body;
};

//! Scope ({% block %}, {% generation %}) and Autoescape bodies.
struct BodyNode : Node
{
    BodyNode(NodeType type, size_t offset) : Node(type, offset) {}
    NodePtr value;  //!< Autoescape: the condition
    NodeList body;
};

struct UnsupportedNode : Node
{
    UnsupportedNode(size_t offset, std::string tag) : Node(NodeType::Unsupported, offset), tag(std::move(tag)) {}
    std::string tag;
};

}}}} // namespace cv::dnn::llm::jinja

#endif
