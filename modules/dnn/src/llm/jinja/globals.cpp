// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The names every template starts with: jinja2's globals (range, dict, namespace, cycler,
// joiner, lipsum) and the two transformers adds, raise_exception(message) and
// strftime_now(format).

#include "../../precomp.hpp"
#include "builtins.hpp"
#include "interpreter.hpp"
#include "text.hpp"

#include <ctime>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

// jinja2's sandbox refuses larger ranges (MAX_RANGE).
const int64_t kMaxRange = 100000;

class Namespace : public Object
{
public:
    std::string typeName() const override { return "Namespace"; }
    Value getAttribute(const std::string& name) const override
    {
        for (const auto& attribute : attributes)
            if (attribute.first == name)
                return attribute.second;
        return Object::getAttribute(name);
    }
    std::string repr(Budget& budget, int depth) const override
    {
        std::vector<std::pair<Value, Value> > entries;
        for (const auto& attribute : attributes)
            entries.emplace_back(Value::string(attribute.first), attribute.second);
        return "<Namespace " + jinja::repr(Value::dict(std::move(entries)), budget, depth + 1) + ">";
    }

    std::vector<std::pair<std::string, Value> > attributes;
};

class Cycler : public Object, public std::enable_shared_from_this<Cycler>
{
public:
    explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
    std::string typeName() const override { return "Cycler"; }
    Value getAttribute(const std::string& name) const override
    {
        const std::shared_ptr<Cycler> self = std::const_pointer_cast<Cycler>(shared_from_this());
        if (name == "current")
            return items_[position_];
        if (name == "next" || name == "__next__")
            return makeFunction("next", [self](Interpreter&, const CallArgs& args) {
                bindArguments("next", args, {});
                const Value v = self->items_[self->position_];
                self->position_ = (self->position_ + 1) % self->items_.size();
                return v;
            });
        if (name == "reset")
            return makeFunction("reset", [self](Interpreter&, const CallArgs& args) {
                bindArguments("reset", args, {});
                self->position_ = 0;
                return Value::none();
            });
        return Object::getAttribute(name);
    }

private:
    std::vector<Value> items_;
    size_t position_ = 0;
};

Value dictFromArguments(Interpreter& in, const CallArgs& args, const char* function)
{
    if (args.positional.size() > 1)
        fail(ErrorKind::Type, std::string(function) + " expected at most 1 argument, got " + std::to_string(args.positional.size()));
    std::vector<std::pair<Value, Value> > entries;
    if (!args.positional.empty())
    {
        const Value& source = args.positional[0];
        if (source.isDict())
            entries = source.entries();
        else
            for (const Value& item : iterate(source, in.budget()))
            {
                const std::vector<Value> pair = iterate(item, in.budget());
                if (pair.size() != 2)
                    fail(ErrorKind::Value, "dictionary update sequence element has length " + std::to_string(pair.size()) +
                                           "; 2 is required");
                entries.emplace_back(pair[0], pair[1]);
            }
    }
    for (const auto& kw : args.keywords)
        entries.emplace_back(Value::string(kw.first), kw.second);
    return Value::dict(std::move(entries));
}

Value globalRange(Interpreter& in, const CallArgs& args)
{
    if (!args.keywords.empty())
        fail(ErrorKind::Type, "range() takes no keyword arguments");
    if (args.positional.empty() || args.positional.size() > 3)
        fail(ErrorKind::Type, "range expected at least 1 argument, got " + std::to_string(args.positional.size()));
    int64_t start = 0, stop, step = 1;
    if (args.positional.size() == 1)
        stop = integerArgument("range", args.positional[0]);
    else
    {
        start = integerArgument("range", args.positional[0]);
        stop = integerArgument("range", args.positional[1]);
        if (args.positional.size() == 3)
            step = integerArgument("range", args.positional[2]);
    }
    if (step == 0)
        fail(ErrorKind::Value, "range() arg 3 must not be zero");
    const double count = step > 0 ? ((double)stop - (double)start) / (double)step : ((double)start - (double)stop) / (double)-step;
    if (count > (double)kMaxRange)
        fail(ErrorKind::Overflow, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        items.push_back(Value::integer(i));
    in.budget().charge((int64_t)items.size());
    return Value::sequence(std::move(items), SequenceKind::Range);
}

Value globalDict(Interpreter& in, const CallArgs& args) { return dictFromArguments(in, args, "dict"); }

Value globalCycler(Interpreter&, const CallArgs& args)
{
    if (args.positional.empty())
        fail(ErrorKind::Runtime, "at least one item has to be provided");
    return Value::object(std::make_shared<Cycler>(args.positional));
}

Value globalJoiner(Interpreter&, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("joiner", args, {{"sep", Value::string(", ")}});
    auto used = std::make_shared<bool>(false);
    const Value separator = a[0];
    return makeFunction("joiner", [used, separator](Interpreter&, const CallArgs& callArgs) {
        bindArguments("joiner", callArgs, {});
        if (!*used)
        {
            *used = true;
            return Value::string("");
        }
        return separator;
    });
}

Value globalUnsupported(Interpreter&, const CallArgs&)
{
    fail(ErrorKind::Runtime, "lipsum() makes random text and is not supported");
}

Value globalRaiseException(Interpreter& in, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("raise_exception", args, {required("message")});
    fail(ErrorKind::Raised, toStr(a[0], in.budget()));
}

// transformers' strftime_now(format): datetime.now().strftime(format), naive local time.
Value globalStrftimeNow(Interpreter& in, const CallArgs& args)
{
    const std::vector<Value> a = bindArguments("strftime_now", args, {required("format")});
    const std::string& format = stringArgument("strftime_now", a[0]);
    std::tm t = in.options().time;
    if (!in.options().fixedTime)
    {
        const std::time_t now = std::time(nullptr);
        localtime_r(&now, &t);
    }
    // datetime.strftime handles %f, %z and %Z itself (a naive time has no zone); C does the rest.
    std::string cFormat;
    for (size_t i = 0; i < format.size(); i++)
    {
        if (format[i] == '%' && i + 1 < format.size())
        {
            const char c = format[i + 1];
            if (c == 'f') { cFormat += "000000"; i++; continue; }
            if (c == 'z' || c == 'Z') { i++; continue; }
            cFormat += format.substr(i, 2);
            i++;
            continue;
        }
        cFormat += format[i];
    }
    if (cFormat.empty())
        return Value::string("");
    in.budget().checkSize(cFormat.size() * 64);
    std::vector<char> buffer(cFormat.size() * 64 + 256);
    const size_t n = std::strftime(buffer.data(), buffer.size(), cFormat.c_str(), &t);
    return Value::string(std::string(buffer.data(), n));
}

} // namespace

Value makeNamespace(Interpreter& in, const CallArgs& args)
{
    auto ns = std::make_shared<Namespace>();
    const Value attributes = dictFromArguments(in, args, "namespace");
    for (const auto& entry : attributes.entries())
    {
        if (!entry.first.isString())
            fail(ErrorKind::Type, "namespace attribute names must be strings");
        ns->attributes.emplace_back(entry.first.str(), entry.second);
    }
    const Value v = Value::object(ns);
    in.trackNamespace(v);
    return v;
}

bool setNamespaceAttribute(const Value& target, const std::string& name, const Value& value)
{
    Namespace* ns = target.objectAs<Namespace>();
    if (!ns)
        return false;
    for (auto& attribute : ns->attributes)
        if (attribute.first == name)
        {
            attribute.second = value;
            return true;
        }
    ns->attributes.emplace_back(name, value);
    return true;
}

void clearNamespace(const Value& ns)
{
    if (Namespace* n = ns.objectAs<Namespace>())
        n->attributes.clear();
}

std::vector<std::pair<std::string, Value> > builtinGlobals()
{
    return {
        {"range", makeFunction("range", globalRange)},
        {"dict", makeFunction("dict", globalDict)},
        {"namespace", makeFunction("namespace", makeNamespace)},
        {"cycler", makeFunction("cycler", globalCycler)},
        {"joiner", makeFunction("joiner", globalJoiner)},
        {"lipsum", makeFunction("lipsum", globalUnsupported)},
        {"raise_exception", makeFunction("raise_exception", globalRaiseException)},
        {"strftime_now", makeFunction("strftime_now", globalStrftimeNow)},
    };
}

}}}} // namespace cv::dnn::llm::jinja
