// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "builtins.hpp"

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

FilterFunction findFilter(const std::string& name)
{
    for (const std::vector<FilterEntry>* table : {&textFilters(), &sequenceFilters()})
        for (const FilterEntry& entry : *table)
            if (name == entry.name)
                return entry.function;
    return nullptr;
}

std::vector<Value> bindArguments(const std::string& function, const CallArgs& args, std::initializer_list<Param> params)
{
    std::vector<Value> values;
    std::vector<bool> given(params.size(), false);
    if (args.positional.size() > params.size())
        fail(ErrorKind::Type, function + "() takes at most " + std::to_string(params.size()) + " arguments (" +
                              std::to_string(args.positional.size()) + " given)");
    size_t i = 0;
    for (const Param& p : params)
    {
        if (i < args.positional.size())
        {
            values.push_back(args.positional[i]);
            given[i] = true;
        }
        else
            values.push_back(p.fallback);
        i++;
    }
    for (const auto& kw : args.keywords)
    {
        size_t index = 0;
        bool found = false;
        for (const Param& p : params)
        {
            if (kw.first == p.name)
            {
                found = true;
                break;
            }
            index++;
        }
        if (!found)
            fail(ErrorKind::Type, function + "() got an unexpected keyword argument '" + kw.first + "'");
        if (given[index])
            fail(ErrorKind::Type, function + "() got multiple values for argument '" + kw.first + "'");
        values[index] = kw.second;
        given[index] = true;
    }
    i = 0;
    for (const Param& p : params)
    {
        if (p.required && !given[i])
            fail(ErrorKind::Type, function + "() missing required argument '" + p.name + "'");
        i++;
    }
    return values;
}

const std::string& stringArgument(const std::string& function, const Value& v)
{
    if (v.isUndefined())
        v.failUndefined();
    if (!v.isString())
        fail(ErrorKind::Type, function + "() argument must be str, not " + v.typeName());
    return v.str();
}

int64_t integerArgument(const std::string& function, const Value& v)
{
    if (v.isUndefined())
        v.failUndefined();
    if (!v.isInteger())
        fail(ErrorKind::Type, "'" + v.typeName() + "' object cannot be interpreted as an integer (" + function + ")");
    return v.asInt();
}

}}}} // namespace cv::dnn::llm::jinja
