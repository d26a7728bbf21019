// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "json_bridge.hpp"
#include "python_format.hpp"
#include "text.hpp"

#include "../common/json_document.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

Value fromJson(const OrderedJson& json)
{
    switch (json.type())
    {
    case OrderedJson::value_t::null: return Value::none();
    case OrderedJson::value_t::boolean: return Value::boolean(json.get<bool>());
    case OrderedJson::value_t::number_integer: return Value::integer(json.get<int64_t>());
    case OrderedJson::value_t::number_unsigned:
    {
        const uint64_t u = json.get<uint64_t>();
        return u <= (uint64_t)INT64_MAX ? Value::integer((int64_t)u) : Value::number((double)u);
    }
    case OrderedJson::value_t::number_float: return Value::number(json.get<double>());
    case OrderedJson::value_t::string: return Value::string(json.get_ref<const std::string&>());
    case OrderedJson::value_t::array:
    {
        std::vector<Value> items;
        items.reserve(json.size());
        for (const OrderedJson& item : json)
            items.push_back(fromJson(item));
        return Value::sequence(std::move(items));
    }
    case OrderedJson::value_t::object:
    {
        std::vector<std::pair<Value, Value> > entries;
        entries.reserve(json.size());
        for (auto it = json.begin(); it != json.end(); ++it)
            entries.emplace_back(Value::string(it.key()), fromJson(it.value()));
        return Value::dict(std::move(entries));
    }
    default: return Value::none();
    }
}

void appendJsonString(const std::string& text, bool ensureAscii, std::string& out)
{
    out += '"';
    char buf[16];
    for (uint32_t cp : codePoints(text))
    {
        switch (cp)
        {
        case '"': out += "\\\""; continue;
        case '\\': out += "\\\\"; continue;
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        case '\b': out += "\\b"; continue;
        case '\f': out += "\\f"; continue;
        default: break;
        }
        if (cp < 0x20 || (ensureAscii && cp >= 0x7F))
        {
            if (cp > 0xFFFF)
            {
                const uint32_t v = cp - 0x10000;
                snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            }
            else
                snprintf(buf, sizeof(buf), "\\u%04x", cp);
            out += buf;
        }
        else
            out += fromCodePoint(cp);
    }
    out += '"';
}

std::string jsonFloat(double d)
{
    if (std::isnan(d))
        return "NaN";
    if (std::isinf(d))
        return d < 0 ? "-Infinity" : "Infinity";
    return formatFloat(d);
}

class JsonWriter
{
public:
    JsonWriter(const JsonDumpOptions& options, Budget& budget) : options_(options), budget_(budget) {}

    void write(const Value& v, int level)
    {
        if (level > kMaxRecursion)
            fail(ErrorKind::Value, "Circular reference detected");
        budget_.charge();
        budget_.checkSize(out.size());
        switch (v.kind())
        {
        case ValueKind::None: out += "null"; return;
        case ValueKind::Bool: out += v.asBool() ? "true" : "false"; return;
        case ValueKind::Int: out += std::to_string(v.asInt()); return;
        case ValueKind::Float: out += jsonFloat(v.asDouble()); return;
        case ValueKind::String:
            budget_.chargeBytes(v.str().size());
            appendJsonString(v.str(), options_.ensureAscii, out);
            return;
        case ValueKind::Sequence:
            if (v.isList() || v.isTuple())
            {
                writeArray(v.items(), level);
                return;
            }
            break;
        case ValueKind::Dict: writeObject(v, level); return;
        default: break;
        }
        fail(ErrorKind::Type, "Object of type " + v.typeName() + " is not JSON serializable");
    }

    std::string out;

private:
    void newline(int level)
    {
        if (!options_.indented)
            return;
        out += '\n';
        for (int i = 0; i < level; i++)
            out += options_.indent;
    }

    void writeArray(const std::vector<Value>& items, int level)
    {
        if (items.empty())
        {
            out += "[]";
            return;
        }
        out += '[';
        for (size_t i = 0; i < items.size(); i++)
        {
            if (i)
                out += options_.itemSeparator;
            newline(level + 1);
            write(items[i], level + 1);
        }
        newline(level);
        out += ']';
    }

    std::string keyText(const Value& key)
    {
        switch (key.kind())
        {
        case ValueKind::String: return key.str();
        case ValueKind::Int: return std::to_string(key.asInt());
        case ValueKind::Float: return jsonFloat(key.asDouble());
        case ValueKind::Bool: return key.asBool() ? "true" : "false";
        case ValueKind::None: return "null";
        default: fail(ErrorKind::Type, "keys must be str, int, float, bool or None, not " + key.typeName());
        }
    }

    void writeObject(const Value& dict, int level)
    {
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& entry : dict.entries())
            entries.push_back(&entry);
        if (entries.empty())
        {
            out += "{}";
            return;
        }
        if (options_.sortKeys)
            std::stable_sort(entries.begin(), entries.end(), [&](const std::pair<Value, Value>* a, const std::pair<Value, Value>* b) {
                return compare(a->first, b->first, budget_) < 0;
            });
        out += '{';
        bool first = true;
        for (const auto* entry : entries)
        {
            if (!first)
                out += options_.itemSeparator;
            first = false;
            newline(level + 1);
            appendJsonString(keyText(entry->first), options_.ensureAscii, out);
            out += options_.keySeparator;
            write(entry->second, level + 1);
        }
        newline(level);
        out += '}';
    }

    const JsonDumpOptions& options_;
    Budget& budget_;
};

} // namespace

Value parseJsonValue(const std::string& text, const std::string& what)
{
    return fromJson(parseJsonText(text, what, kMaxJsonInputBytes));
}

std::string dumpJson(const Value& value, const JsonDumpOptions& options, Budget& budget)
{
    JsonWriter writer(options, budget);
    writer.write(value, 0);
    budget.checkSize(writer.out.size());
    return writer.out;
}

}}}} // namespace cv::dnn::llm::jinja
