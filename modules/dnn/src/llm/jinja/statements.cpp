// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "interpreter.hpp"
#include "text.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

// jinja2's LoopContext: `loop` inside a for loop.
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject>
{
public:
    LoopObject(std::vector<Value> items, int depth, const ForNode* recursiveNode, ScopePtr scope)
        : items_(std::move(items)), depth_(depth), node_(recursiveNode), scope_(std::move(scope)) {}

    void setIndex(size_t index) { index_ = index; }
    std::string typeName() const override { return "LoopContext"; }
    bool isCallable() const override { return true; }
    std::string repr(Budget&, int) const override
    {
        return "<LoopContext " + std::to_string(index_ + 1) + "/" + std::to_string(items_.size()) + ">";
    }

    Value call(Interpreter& interpreter, const CallArgs& args) override
    {
        if (!node_)
            fail(ErrorKind::Type, "The loop must have the 'recursive' marker to be called recursively.");
        if (args.positional.size() != 1 || !args.keywords.empty())
            fail(ErrorKind::Type, "loop() takes one argument, the items of the next level");
        return Value::string(interpreter.runRecursiveLoop(*node_, scope_, args.positional[0], depth_ + 1));
    }

    Value getAttribute(const std::string& name) const override
    {
        const int64_t n = (int64_t)items_.size(), i = (int64_t)index_;
        if (name == "index") return Value::integer(i + 1);
        if (name == "index0") return Value::integer(i);
        if (name == "revindex") return Value::integer(n - i);
        if (name == "revindex0") return Value::integer(n - i - 1);
        if (name == "first") return Value::boolean(i == 0);
        if (name == "last") return Value::boolean(i == n - 1);
        if (name == "length") return Value::integer(n);
        if (name == "depth") return Value::integer(depth_);
        if (name == "depth0") return Value::integer(depth_ - 1);
        if (name == "previtem")
            return i > 0 ? items_[(size_t)i - 1] : Value::undefinedWithHint("there is no previous item");
        if (name == "nextitem")
            return i + 1 < n ? items_[(size_t)i + 1] : Value::undefinedWithHint("there is no next item");
        if (name == "cycle")
        {
            const size_t index = index_;
            return makeFunction("cycle", [index](Interpreter&, const CallArgs& args) {
                if (args.positional.empty())
                    fail(ErrorKind::Type, "no items for cycling given");
                return args.positional[index % args.positional.size()];
            });
        }
        if (name == "changed")
        {
            const std::shared_ptr<LoopObject> self = std::const_pointer_cast<LoopObject>(shared_from_this());
            return makeFunction("changed", [self](Interpreter& interpreter, const CallArgs& args) {
                const Value current = Value::sequence(args.positional, SequenceKind::Tuple);
                const bool changed = !self->hasLastChanged_ || !equals(current, self->lastChanged_, interpreter.budget());
                self->lastChanged_ = current;
                self->hasLastChanged_ = true;
                return Value::boolean(changed);
            });
        }
        return Object::getAttribute(name);
    }

private:
    std::vector<Value> items_;
    size_t index_ = 0;
    int depth_;
    const ForNode* node_;
    ScopePtr scope_;
    Value lastChanged_;
    bool hasLastChanged_ = false;
};

} // namespace

Interpreter::Flow Interpreter::execute(const NodeList& body)
{
    for (const NodePtr& node : body)
    {
        const Flow flow = executeNode(*node);
        if (flow != Flow::Normal)
            return flow;
    }
    return Flow::Normal;
}

Interpreter::Flow Interpreter::executeNode(const Node& node)
{
    budget_.charge();
    try
    {
        return executeStatement(node);
    }
    catch (TemplateError& e)
    {
        if (e.offset == kNoPosition)
            e.offset = node.offset;
        throw;
    }
}

Interpreter::Flow Interpreter::executeStatement(const Node& node)
{
    switch (node.type)
    {
    case NodeType::Output: writeOutput(static_cast<const OutputNode&>(node)); return Flow::Normal;
    case NodeType::If:
    {
        const IfNode& n = static_cast<const IfNode&>(node);
        for (const auto& branch : n.branches)
            if (truthy(eval(*branch.first)))
                return execute(branch.second);
        return execute(n.otherwise);
    }
    case NodeType::For:
    {
        const ForNode& n = static_cast<const ForNode&>(node);
        return executeFor(n, eval(*n.iterable), 1);
    }
    case NodeType::Set: executeSet(static_cast<const SetNode&>(node)); return Flow::Normal;
    case NodeType::SetBlock: executeSetBlock(static_cast<const SetBlockNode&>(node)); return Flow::Normal;
    case NodeType::Macro: executeMacroDefinition(static_cast<const MacroNode&>(node)); return Flow::Normal;
    case NodeType::CallBlock: executeCallBlock(static_cast<const MacroNode&>(node)); return Flow::Normal;
    case NodeType::FilterBlock:
    {
        const FilterBlockNode& n = static_cast<const FilterBlockNode&>(node);
        Flow flow = Flow::Normal;
        const Value text = Value::string(capture(n.body, &flow));
        write(toStr(evalFilter(static_cast<const FilterNode&>(*n.filter), &text), budget_));
        return flow;
    }
    case NodeType::With: executeWith(static_cast<const WithNode&>(node)); return Flow::Normal;
    case NodeType::Break: return Flow::Break;
    case NodeType::Continue: return Flow::Continue;
    case NodeType::Scope:
    {
        ScopeGuard guard(*this, scope_);
        return execute(static_cast<const BodyNode&>(node).body);
    }
    case NodeType::Autoescape:
    {
        const BodyNode& n = static_cast<const BodyNode&>(node);
        const bool saved = autoescape_;
        autoescape_ = truthy(eval(*n.value));
        ScopeGuard guard(*this, scope_);
        Flow flow;
        try
        {
            flow = execute(n.body);
        }
        catch (...)
        {
            autoescape_ = saved;
            throw;
        }
        autoescape_ = saved;
        return flow;
    }
    case NodeType::Unsupported:
        fail(ErrorKind::Type, "{% " + static_cast<const UnsupportedNode&>(node).tag +
                              " %} needs a template loader, and chat templates have none");
    default:
        fail(ErrorKind::Runtime, "unexpected statement");
    }
}

void Interpreter::writeOutput(const OutputNode& node)
{
    for (const NodePtr& item : node.items)
    {
        if (item->type == NodeType::Data)
        {
            write(static_cast<const DataNode&>(*item).text);
            continue;
        }
        const Value v = eval(*item);
        if (autoescape_ && !v.isMarkup())
            write(escapeHtml(toStr(v, budget_)));
        else
            write(toStr(v, budget_));
    }
}

Interpreter::Flow Interpreter::executeFor(const ForNode& node, const Value& iterable, int depth)
{
    const ScopePtr outer = scope_;
    std::vector<Value> items = iterate(iterable, budget_);
    if (node.filter)
    {
        std::vector<Value> kept;
        for (const Value& item : items)
        {
            budget_.chargeLoopIteration();
            ScopeGuard guard(*this, outer);
            assign(*node.target, item);
            if (truthy(eval(*node.filter)))
                kept.push_back(item);
        }
        items.swap(kept);
    }
    if (items.empty())
    {
        ScopeGuard guard(*this, outer);
        return execute(node.otherwise);
    }
    auto loop = std::make_shared<LoopObject>(items, depth, node.recursive ? &node : nullptr, outer);
    const Value loopValue = Value::object(loop);
    for (size_t i = 0; i < items.size(); i++)
    {
        budget_.chargeLoopIteration();
        ScopeGuard guard(*this, outer);
        assign(*node.target, items[i]);
        loop->setIndex(i);
        guard.scope().set("loop", loopValue);
        const Flow flow = execute(node.body);
        if (flow == Flow::Break)
            break;
    }
    return Flow::Normal;
}

std::string Interpreter::runRecursiveLoop(const ForNode& node, const ScopePtr& scope, const Value& items, int depth)
{
    if (callDepth_ >= options_.limits.maxCallDepth)
        fail(ErrorKind::Limit, "recursive loop calls nested deeper than " + std::to_string(options_.limits.maxCallDepth) + " levels");
    callDepth_++;
    std::string text;
    try
    {
        ScopeGuard guard(*this, scope);
        OutputGuard output(*this, text);
        executeFor(node, items, depth);
    }
    catch (...)
    {
        callDepth_--;
        throw;
    }
    callDepth_--;
    return text;
}

void Interpreter::assign(const Node& target, const Value& value)
{
    switch (target.type)
    {
    case NodeType::Name: scope_->set(static_cast<const NameNode&>(target).name, value); return;
    case NodeType::Tuple:
    {
        const NodeList& names = static_cast<const SequenceNode&>(target).items;
        const std::vector<Value> values = iterate(value, budget_);
        if (values.size() < names.size())
            fail(ErrorKind::Value, "not enough values to unpack (expected " + std::to_string(names.size()) + ", got " +
                                   std::to_string(values.size()) + ")");
        if (values.size() > names.size())
            fail(ErrorKind::Value, "too many values to unpack (expected " + std::to_string(names.size()) + ")");
        for (size_t i = 0; i < names.size(); i++)
            assign(*names[i], values[i]);
        return;
    }
    case NodeType::NamespaceRef:
    {
        const NamespaceRefNode& ref = static_cast<const NamespaceRefNode&>(target);
        if (!setNamespaceAttribute(lookup(ref.name), ref.attribute, value))
            fail(ErrorKind::Runtime, "cannot assign attribute on non-namespace object");
        return;
    }
    default: fail(ErrorKind::Syntax, "can't assign to this expression");
    }
}

void Interpreter::executeSet(const SetNode& node)
{
    assign(*node.target, eval(*node.value));
}

void Interpreter::executeSetBlock(const SetBlockNode& node)
{
    Value text = Value::string(capture(node.body));
    if (node.filter)
        text = evalFilter(static_cast<const FilterNode&>(*node.filter), &text);
    assign(*node.target, text);
}

void Interpreter::executeMacroDefinition(const MacroNode& node)
{
    scope_->set(node.name, makeMacro(node, scope_));
}

void Interpreter::executeCallBlock(const MacroNode& node)
{
    const Value caller = makeMacro(node, scope_);
    write(toStr(evalCall(static_cast<const CallNode&>(*node.call), &caller), budget_));
}

void Interpreter::executeWith(const WithNode& node)
{
    std::vector<Value> values;
    for (const NodePtr& v : node.values)
        values.push_back(eval(*v));
    ScopeGuard guard(*this, scope_);
    for (size_t i = 0; i < node.targets.size(); i++)
        assign(*node.targets[i], values[i]);
    execute(node.body);
}

std::string Interpreter::capture(const NodeList& body, Flow* flow)
{
    std::string text;
    ScopeGuard guard(*this, scope_);
    OutputGuard output(*this, text);
    const Flow f = execute(body);
    if (flow)
        *flow = f;
    return text;
}

}}}} // namespace cv::dnn::llm::jinja
