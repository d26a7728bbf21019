// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "parser_impl.hpp"
#include "builtins.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

// jinja2's compiler refuses an unknown filter or test, except in a "soft" frame (an if
// statement or inline if, not inside a loop, macro or block within it), where it becomes a
// runtime error.
class FilterNameCheck
{
public:
    void body(const NodeList& nodes, bool soft)
    {
        for (const NodePtr& n : nodes)
            node(n.get(), soft);
    }

    void node(const Node* n, bool soft)
    {
        if (!n)
            return;
        switch (n->type)
        {
        case NodeType::Filter:
        case NodeType::Test:
        {
            const FilterNode* f = static_cast<const FilterNode*>(n);
            const bool known = n->type == NodeType::Filter ? findFilter(f->name) != nullptr : findTest(f->name) != nullptr;
            if (!known && !soft)
                throw TemplateError(ErrorKind::Syntax, std::string("No ") + (n->type == NodeType::Filter ? "filter" : "test") +
                                    " named '" + f->name + "'.", n->offset);
            node(f->input.get(), soft);
            arguments(f->args, soft);
            break;
        }
        case NodeType::CondExpr:
        {
            const CondExprNode* c = static_cast<const CondExprNode*>(n);
            node(c->test.get(), true);
            node(c->then.get(), true);
            node(c->otherwise.get(), true);
            break;
        }
        case NodeType::List:
        case NodeType::Tuple: body(static_cast<const SequenceNode*>(n)->items, soft); break;
        case NodeType::Dict:
            for (const auto& p : static_cast<const DictNode*>(n)->pairs)
            {
                node(p.first.get(), soft);
                node(p.second.get(), soft);
            }
            break;
        case NodeType::Getattr: node(static_cast<const GetattrNode*>(n)->object.get(), soft); break;
        case NodeType::Getitem:
            node(static_cast<const GetitemNode*>(n)->object.get(), soft);
            node(static_cast<const GetitemNode*>(n)->index.get(), soft);
            break;
        case NodeType::Slice:
        {
            const SliceNode* s = static_cast<const SliceNode*>(n);
            node(s->start.get(), soft);
            node(s->stop.get(), soft);
            node(s->step.get(), soft);
            break;
        }
        case NodeType::Call:
            node(static_cast<const CallNode*>(n)->callee.get(), soft);
            arguments(static_cast<const CallNode*>(n)->args, soft);
            break;
        case NodeType::Not:
        case NodeType::Neg:
        case NodeType::Pos: node(static_cast<const UnaryNode*>(n)->operand.get(), soft); break;
        case NodeType::And:
        case NodeType::Or:
        case NodeType::Binary:
            node(static_cast<const BinaryNode*>(n)->left.get(), soft);
            node(static_cast<const BinaryNode*>(n)->right.get(), soft);
            break;
        case NodeType::Concat: body(static_cast<const ConcatNode*>(n)->parts, soft); break;
        case NodeType::Compare:
            node(static_cast<const CompareNode*>(n)->first.get(), soft);
            for (const auto& r : static_cast<const CompareNode*>(n)->rest)
                node(r.second.get(), soft);
            break;
        case NodeType::Output: body(static_cast<const OutputNode*>(n)->items, soft); break;
        case NodeType::If:
            for (const auto& b : static_cast<const IfNode*>(n)->branches)
            {
                node(b.first.get(), true);
                body(b.second, true);
            }
            body(static_cast<const IfNode*>(n)->otherwise, true);
            break;
        case NodeType::For:
        {
            const ForNode* f = static_cast<const ForNode*>(n);
            node(f->iterable.get(), soft);
            node(f->filter.get(), false);
            body(f->body, false);
            body(f->otherwise, false);
            break;
        }
        case NodeType::Set: node(static_cast<const SetNode*>(n)->value.get(), soft); break;
        case NodeType::SetBlock:
            node(static_cast<const SetBlockNode*>(n)->filter.get(), false);
            body(static_cast<const SetBlockNode*>(n)->body, false);
            break;
        case NodeType::Macro:
        case NodeType::CallBlock:
        {
            const MacroNode* m = static_cast<const MacroNode*>(n);
            node(m->call.get(), soft);
            body(m->defaults, false);
            body(m->body, false);
            break;
        }
        case NodeType::FilterBlock:
            node(static_cast<const FilterBlockNode*>(n)->filter.get(), false);
            body(static_cast<const FilterBlockNode*>(n)->body, false);
            break;
        case NodeType::With:
            body(static_cast<const WithNode*>(n)->values, soft);
            body(static_cast<const WithNode*>(n)->body, false);
            break;
        case NodeType::Scope:
        case NodeType::Autoescape:
            node(static_cast<const BodyNode*>(n)->value.get(), soft);
            body(static_cast<const BodyNode*>(n)->body, false);
            break;
        default: break;
        }
    }

private:
    void arguments(const CallArguments& args, bool soft)
    {
        body(args.positional, soft);
        for (const auto& kw : args.keywords)
            node(kw.second.get(), soft);
        node(args.starArgs.get(), soft);
        node(args.starKwargs.get(), soft);
    }
};

} // namespace

void checkFilterAndTestNames(const NodeList& body)
{
    FilterNameCheck().body(body, false);
}

}}}} // namespace cv::dnn::llm::jinja
