// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The schema walk: each subschema becomes a GBNF expression, and named rules hold what is
// referred to ($ref targets, so that recursive schemas terminate) or written once per property
// (key-value pairs, the chains of optional properties). Two jobs with their own logic live
// apart: integer bounds (json_schema_integer_ranges.cpp) and patterns (json_schema_regex.cpp).

#include "../../precomp.hpp"
#include "json_schema_to_grammar.hpp"
#include "json_schema_common.hpp"
#include "json_schema_integer_ranges.hpp"
#include "json_schema_regex.hpp"
#include "../common/json_document.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const size_t kMaxSchemaBytes = 1 << 20;
const size_t kMaxRules = 100000;
const int64_t kMaxRepetition = 2000;  // larger counts are unbounded (as GBNF's {m,n})

// The whitespace rule every structure refers to.
const char* spaceRule(JsonWhitespace whitespace)
{
    return whitespace == JsonWhitespace::Compact ? "space ::= \"\"\n"
                                                 : "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n";
}

// Bare values (without the trailing whitespace) of the JSON primitives.
const char* kPrimitives =
    "char ::= [^\"\\\\\\x7F\\x00-\\x1F] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "integral-part ::= [0] | [1-9] [0-9]{0,15}\n"
    "decimal-part ::= [0-9]{1,16}\n"
    "number ::= \"-\"? integral-part (\".\" decimal-part)? ([eE] [-+]? integral-part)?\n"
    "integer ::= \"-\"? integral-part\n"
    "boolean ::= (\"true\" | \"false\")\n"
    "null ::= \"null\"\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? space \"}\"\n"
    "array ::= \"[\" space (value (\",\" space value)*)? space \"]\"\n"
    "date ::= [0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [1-2] [0-9] | \"3\" [0-1])\n"
    "time ::= ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{3})? "
    "(\"Z\" | (\"+\" | \"-\") ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])\n"
    "date-string ::= \"\\\"\" date \"\\\"\"\n"
    "time-string ::= \"\\\"\" time \"\\\"\"\n"
    "date-time-string ::= \"\\\"\" date \"T\" time \"\\\"\"\n"
    "uuid ::= \"\\\"\" [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} "
    "\"-\" [0-9a-fA-F]{12} \"\\\"\"\n";

std::string repetition(const std::string& item, int64_t minN, int64_t maxN, const std::string& separator)
{
    // item{min,max} with separators between items
    if (maxN == 0)
        return "";
    std::string bound = maxN < 0 ? format("{%d,}", (int)std::max<int64_t>(minN - 1, 0))
                                 : format("{%d,%d}", (int)std::max<int64_t>(minN - 1, 0), (int)(maxN - 1));
    if (separator.empty())
        return maxN < 0 ? "(" + item + ")" + format("{%d,}", (int)minN) : "(" + item + ")" + format("{%d,%d}", (int)minN, (int)maxN);
    std::string rest = "(" + separator + " " + item + ")" + bound;
    std::string seq = item + " " + rest;
    return minN == 0 ? "(" + seq + ")?" : seq;
}

class SchemaConverter
{
public:
    SchemaConverter(const OrderedJson& root, JsonWhitespace whitespace) : root_(root), whitespace_(whitespace) {}

    std::string convert()
    {
        std::string top = visit(root_, "root", "#");
        std::string out = "root ::= " + top + "\n";
        for (const auto& r : rules_)
            out += r.first + " ::= " + r.second + "\n";
        return out + spaceRule(whitespace_) + kPrimitives;
    }

private:
    std::string ruleName(const std::string& hint)
    {
        std::string base;
        for (char c : hint)
            base += (std::isalnum((unsigned char)c) || c == '-') ? c : '-';
        if (base.empty() || base.size() > 60) base = base.substr(0, 60) + "r";
        base = "s-" + base;
        std::string name = base;
        for (int i = 1; used_.count(name); i++)
            name = base + "-" + std::to_string(i);
        used_.insert(name);
        return name;
    }

    std::string addRule(const std::string& hint, const std::string& body)
    {
        if (rules_.size() >= kMaxRules)
            failSchema("#", format("the schema needs more than %zu grammar rules", kMaxRules));
        std::string name = ruleName(hint);
        rules_.push_back({name, body});
        return name;
    }

    static int64_t asInt(const OrderedJson& v, const std::string& path, const char* what)
    {
        // within +-1e17 (so that bounds +-1 cannot overflow); larger ones are refused
        const double limit = 1e17;
        if (v.is_number_unsigned() && v.get<uint64_t>() <= (uint64_t)limit)
            return (int64_t)v.get<uint64_t>();
        if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= -(int64_t)limit &&
            v.get<int64_t>() <= (int64_t)limit)
            return v.get<int64_t>();
        if (v.is_number_float() && std::fabs(v.get<double>()) <= limit &&
            v.get<double>() == std::floor(v.get<double>()))
            return (int64_t)v.get<double>();
        failSchema(path, std::string(what) + " must be an integer of at most 17 digits");
    }

    const OrderedJson& resolve(const std::string& ref, const std::string& path)
    {
        if (ref.empty() || ref[0] != '#')
            failSchema(path, "only local $ref (\"#/...\") is supported, not '" + ref + "'");
        const OrderedJson* cur = &root_;
        size_t p = 1;
        while (p < ref.size())
        {
            if (ref[p] != '/')
                failSchema(path, "bad $ref '" + ref + "'");
            size_t q = ref.find('/', p + 1);
            std::string key = ref.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
            // JSON pointer escapes
            for (size_t i; (i = key.find("~1")) != std::string::npos;) key.replace(i, 2, "/");
            for (size_t i; (i = key.find("~0")) != std::string::npos;) key.replace(i, 2, "~");
            if (cur->is_object() && cur->contains(key))
                cur = &(*cur)[key];
            else if (cur->is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                     key.size() < 9 && std::stoul(key) < cur->size())
                cur = &(*cur)[std::stoul(key)];
            else
                failSchema(path, "$ref '" + ref + "' points to nothing");
            p = q == std::string::npos ? ref.size() : q;
        }
        return *cur;
    }

    std::string constant(const OrderedJson& v)
    {
        return gbnfLiteral(v.dump());
    }

    std::string visit(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        if (++depth_ > 200)
            failSchema(path, "the schema nests too deeply");
        std::string r = visitInner(s, hint, path);
        depth_--;
        return r;
    }

    std::string alternatives(const OrderedJson& list, const std::string& hint, const std::string& path, const char* key)
    {
        if (!list.is_array() || list.empty())
            failSchema(path + "/" + key, "must be a non-empty array");
        std::string out = "(";
        for (size_t i = 0; i < list.size(); i++)
            out += (i ? " | " : "") + visit(list[i], hint + "-" + std::to_string(i), path + "/" + key + "/" + std::to_string(i));
        return out + ")";
    }

    std::string visitInner(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        if (s.is_boolean())
        {
            if (!s.get<bool>())
                failSchema(path, "the schema 'false' accepts nothing");
            return "value";
        }
        if (!s.is_object())
            failSchema(path, "a schema must be an object or a boolean");
        if (s.contains("$ref"))
        {
            if (!s["$ref"].is_string())
                failSchema(path, "$ref must be a string");
            const std::string ref = s["$ref"].get<std::string>();
            auto it = refRules_.find(ref);
            if (it != refRules_.end())
                return it->second;
            // name first (recursive schemas refer to themselves), body after
            std::string name = ruleName("ref-" + ref.substr(ref.rfind('/') + 1));
            refRules_[ref] = name;
            const OrderedJson& target = resolve(ref, path);
            std::string body = visit(target, name, ref);
            rules_.push_back({name, body});
            return name;
        }
        if (s.contains("oneOf"))
            return alternatives(s["oneOf"], hint, path, "oneOf");
        if (s.contains("anyOf"))
            return alternatives(s["anyOf"], hint, path, "anyOf");
        const OrderedJson* type = s.contains("type") ? &s["type"] : nullptr;
        if (type && type->is_array())
        {
            std::string out = "(";
            for (size_t i = 0; i < type->size(); i++)
            {
                OrderedJson copy = s;
                copy["type"] = (*type)[i];
                out += (i ? " | " : "") + visit(copy, hint + "-" + std::to_string(i), path + "/type/" + std::to_string(i));
            }
            return out + ")";
        }
        std::string t;
        if (type)
        {
            if (!type->is_string())
                failSchema(path + "/type", "must be a string or an array of strings");
            t = type->get<std::string>();
            static const std::set<std::string> known = {"object", "array", "string", "number", "integer", "boolean", "null"};
            if (!known.count(t))
                failSchema(path + "/type", "unknown type '" + t + "'");
        }
        if (s.contains("const"))
            return constant(s["const"]);
        if (s.contains("enum"))
        {
            const OrderedJson& e = s["enum"];
            if (!e.is_array() || e.empty())
                failSchema(path + "/enum", "must be a non-empty array");
            std::string out = "(";
            for (size_t i = 0; i < e.size(); i++)
                out += (i ? " | " : "") + constant(e[i]);
            return out + ")";
        }
        const bool additionalTrue = s.contains("additionalProperties") && s["additionalProperties"].is_boolean() &&
                                    s["additionalProperties"].get<bool>();
        if ((t.empty() || t == "object") && (s.contains("properties") || (s.contains("additionalProperties") && !additionalTrue)))
            return objectRule(s, hint, path);
        if ((t.empty() || t == "object") && s.contains("allOf"))
            return allOfRule(s, hint, path);
        if ((t.empty() || t == "array") && (s.contains("items") || s.contains("prefixItems")))
            return arrayRule(s, hint, path);
        if ((t.empty() || t == "string") && s.contains("pattern"))
        {
            if (!s["pattern"].is_string())
                failSchema(path + "/pattern", "must be a string");
            return "\"\\\"\" " + patternToGbnf(s["pattern"].get<std::string>(), path + "/pattern") + " \"\\\"\"";
        }
        const std::string fmt = s.contains("format") && s["format"].is_string() ? s["format"].get<std::string>() : "";
        if ((t.empty() || t == "string") && !fmt.empty())
        {
            if (fmt == "date") return "date-string";
            if (fmt == "time") return "time-string";
            if (fmt == "date-time") return "date-time-string";
            if (fmt.compare(0, 4, "uuid") == 0 && fmt.size() <= 5) return "uuid";
        }
        if (t == "string" && (s.contains("minLength") || s.contains("maxLength")))
            return lengthBoundedStringRule(s, path);
        if (t == "integer" && (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                               s.contains("exclusiveMaximum")))
            return boundedIntegerRule(s, path);
        if (t.empty() && s.contains("allOf"))
            return allOfRule(s, hint, path);
        if (t.empty())
            return s.empty() ? "object" : "value";  // llama.cpp: an empty schema is an object
        if (t == "object") return "object";
        if (t == "array") return "array";
        return t;  // string, number, integer, boolean, null
    }

    std::string lengthBoundedStringRule(const OrderedJson& s, const std::string& path)
    {
        int64_t lo = s.contains("minLength") ? asInt(s["minLength"], path, "minLength") : 0;
        int64_t hi = s.contains("maxLength") ? asInt(s["maxLength"], path, "maxLength") : -1;
        if (lo < 0 || (hi >= 0 && hi < lo))
            failSchema(path, "bad minLength / maxLength");
        if (lo > kMaxRepetition)
            failSchema(path + "/minLength", format("above the limit of %d", (int)kMaxRepetition));
        if (hi > kMaxRepetition) hi = -1;
        return "\"\\\"\" " + (hi == 0 ? std::string() : repetition("char", lo, hi, "")) + " \"\\\"\"";
    }

    // minimum / maximum / exclusiveMinimum / exclusiveMaximum (an inclusive bound wins)
    std::string boundedIntegerRule(const OrderedJson& s, const std::string& path)
    {
        bool hasMin = false, hasMax = false;
        int64_t lo = 0, hi = 0;
        const int64_t big = 1000000000000000LL;  // 16 digits
        if (s.contains("minimum")) { hasMin = true; lo = asInt(s["minimum"], path, "minimum"); }
        else if (s.contains("exclusiveMinimum")) { hasMin = true; lo = asInt(s["exclusiveMinimum"], path, "exclusiveMinimum") + 1; }
        if (s.contains("maximum")) { hasMax = true; hi = asInt(s["maximum"], path, "maximum"); }
        else if (s.contains("exclusiveMaximum")) { hasMax = true; hi = asInt(s["exclusiveMaximum"], path, "exclusiveMaximum") - 1; }
        if ((hasMin && (lo > big || lo < -big)) || (hasMax && (hi > big || hi < -big)))
            failSchema(path, "integer bounds beyond 16 digits are not supported");
        std::string r = integerRangeGbnf(hasMin, lo, hasMax, hi);
        if (r.empty())
            failSchema(path, "the integer range is empty");
        return r;  // as llama.cpp: no whitespace after a ranged integer
    }

    std::string arrayRule(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        const bool prefix = !s.contains("items");
        const OrderedJson& items = prefix ? s["prefixItems"] : s["items"];
        if (items.is_array())
        {
            std::string out = "\"[\" space";
            for (size_t i = 0; i < items.size(); i++)
                out += (i ? " \",\" space " : " ") + visit(items[i], hint + "-tuple-" + std::to_string(i),
                                                          path + (prefix ? "/prefixItems/" : "/items/") + std::to_string(i));
            return out + " space \"]\"";
        }
        std::string item = visit(items, hint + "-item", path + "/items");
        int64_t lo = s.contains("minItems") ? asInt(s["minItems"], path, "minItems") : 0;
        int64_t hi = s.contains("maxItems") ? asInt(s["maxItems"], path, "maxItems") : -1;
        if (lo < 0 || (hi >= 0 && hi < lo))
            failSchema(path, "bad minItems / maxItems");
        if (lo > kMaxRepetition)
            failSchema(path + "/minItems", format("above the limit of %d", (int)kMaxRepetition));
        if (hi > kMaxRepetition) hi = -1;
        return "\"[\" space " + repetition(item, lo, hi, "\",\" space") + " space \"]\"";
    }

    // A JSON string (with its quotes) that is none of `names`.
    std::string notStrings(const std::vector<std::string>& names, const std::string& hint)
    {
        struct Node { std::map<unsigned char, int> next; bool end = false; };
        std::vector<Node> trie(1);
        for (const std::string& n : names)
        {
            int cur = 0;
            for (unsigned char c : n)
            {
                auto it = trie[cur].next.find(c);
                if (it == trie[cur].next.end())
                {
                    trie.push_back(Node());
                    int id = (int)trie.size() - 1;
                    trie[cur].next[c] = id;
                    cur = id;
                }
                else
                    cur = it->second;
            }
            trie[cur].end = true;
        }
        std::vector<std::string> ruleOf(trie.size());
        // rules are built bottom-up: children have larger ids
        for (int i = (int)trie.size() - 1; i >= 0; i--)
        {
            std::string alts;
            std::string except;
            for (const auto& kv : trie[i].next)
            {
                alts += (alts.empty() ? "" : " | ") + gbnfLiteral(std::string(1, (char)kv.first)) + " " + ruleOf[kv.second];
                if (kv.first < 0x80) except += gbnfClassChar(kv.first);
            }
            // leave the names: another character, then anything
            alts += (alts.empty() ? "" : " | ") + std::string("([^\"\\\\\\x7F\\x00-\\x1F") + except +
                    "] | [\\\\] ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4})) char* \"\\\"\"";
            if (!trie[i].end)
                alts += " | \"\\\"\"";
            ruleOf[i] = addRule(hint + "-k", alts);
        }
        return "\"\\\"\" " + ruleOf[0];
    }

    std::string objectRule(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        std::vector<std::pair<std::string, const OrderedJson*> > props;
        if (s.contains("properties"))
        {
            if (!s["properties"].is_object())
                failSchema(path + "/properties", "must be an object");
            for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it)
                props.push_back({it.key(), &it.value()});
        }
        std::set<std::string> required;
        if (s.contains("required") && s["required"].is_array())
            for (const auto& r : s["required"])
                if (r.is_string())
                    required.insert(r.get<std::string>());
        return buildObject(props, required, s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr,
                           hint, path);
    }

    std::string allOfRule(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        std::vector<std::pair<std::string, const OrderedJson*> > props;
        std::set<std::string> required;
        const OrderedJson& all = s["allOf"];
        if (!all.is_array())
            failSchema(path + "/allOf", "must be an array");
        // enum components: the values all of them allow
        std::vector<std::string> enumOrder;
        std::map<std::string, size_t> enumCount;
        std::function<void(const OrderedJson&, bool, const std::string&)> add = [&](const OrderedJson& c, bool req, const std::string& p) {
            if (c.is_object() && c.contains("$ref") && c["$ref"].is_string())
                add(resolve(c["$ref"].get<std::string>(), p), req, p);
            else if (c.is_object() && c.contains("properties") && c["properties"].is_object())
            {
                for (auto it = c["properties"].begin(); it != c["properties"].end(); ++it)
                {
                    props.push_back({it.key(), &it.value()});
                    if (req) required.insert(it.key());
                }
            }
            else if (c.is_object() && c.contains("enum") && c["enum"].is_array())
            {
                std::set<std::string> mine;
                for (const auto& v : c["enum"])
                {
                    std::string lit = constant(v);
                    if (!mine.insert(lit).second) continue;
                    if (!enumCount.count(lit)) enumOrder.push_back(lit);
                    enumCount[lit]++;
                }
            }
            else
                failSchema(p, "allOf supports object schemas with properties, and enums, only");
        };
        for (size_t i = 0; i < all.size(); i++)
        {
            const OrderedJson& c = all[i];
            const std::string p = path + "/allOf/" + std::to_string(i);
            if (c.is_object() && c.contains("anyOf") && c["anyOf"].is_array())
                for (const auto& cc : c["anyOf"])
                    add(cc, false, p);
            else
                add(c, true, p);
        }
        if (!enumOrder.empty())
        {
            std::string out;
            std::sort(enumOrder.begin(), enumOrder.end());
            for (const std::string& lit : enumOrder)
                if (enumCount[lit] == all.size())
                    out += (out.empty() ? "" : " | ") + lit;
            if (out.empty())
                failSchema(path + "/allOf", "the enums have no value in common");
            return "(" + out + ")";
        }
        return buildObject(props, required, nullptr, hint, path);
    }

    std::string buildObject(const std::vector<std::pair<std::string, const OrderedJson*> >& props,
                            const std::set<std::string>& required, const OrderedJson* additional,
                            const std::string& hint, const std::string& path)
    {
        std::vector<std::string> req, opt, names;
        for (const auto& p : props)
        {
            std::string value = visit(*p.second, hint + "-" + p.first, path + "/properties/" + p.first);
            std::string kv = addRule(hint + "-" + p.first + "-kv", gbnfLiteral(OrderedJson(p.first).dump()) +
                                     " space \":\" space " + value);
            (required.count(p.first) ? req : opt).push_back(kv);
            names.push_back(p.first);
        }
        std::string anyKv;
        if (additional && (additional->is_object() || (additional->is_boolean() && additional->get<bool>())))
        {
            std::string value = additional->is_object() ? visit(*additional, hint + "-additional-value",
                                                                path + "/additionalProperties") : "value";
            std::string key = names.empty() ? "string" : notStrings(names, hint + "-additional");
            anyKv = addRule(hint + "-additional-kv", key + " \":\" space " + value);
        }
        if (req.empty() && opt.empty() && anyKv.empty())
            return "\"{\" space \"}\"";
        std::string out = "\"{\" space ";
        for (size_t i = 0; i < req.size(); i++)
            out += (i ? " \",\" space " : "") + req[i];
        // optional ones: any subset in order, then any number of additional ones
        // tail(i): what may follow after optional i-1 was written (each with a leading comma)
        std::string afterAll = anyKv.empty() ? "" : "(\",\" space " + anyKv + ")*";
        std::vector<std::string> tails(opt.size() + 1);
        tails[opt.size()] = afterAll;
        for (int i = (int)opt.size() - 1; i >= 0; i--)
        {
            std::string body = "(\",\" space " + opt[(size_t)i] + ")? " + (tails[(size_t)i + 1].empty() ? "" : tails[(size_t)i + 1]);
            tails[(size_t)i] = addRule(hint + "-rest", body);
        }
        if (!req.empty())
            out += " " + tails[0];
        else
        {
            // the first property written has no comma
            std::string first = "(";
            for (size_t i = 0; i < opt.size(); i++)
                first += (i ? " | " : "") + opt[i] + " " + tails[i + 1];
            if (!anyKv.empty())
                first += (opt.empty() ? "" : " | ") + anyKv + " " + afterAll;
            out += first + ")?";
        }
        return out + " space \"}\"";
    }

    const OrderedJson& root_;
    const JsonWhitespace whitespace_;
    std::vector<std::pair<std::string, std::string> > rules_;
    std::set<std::string> used_;
    std::map<std::string, std::string> refRules_;
    int depth_ = 0;
};

} // namespace

std::string jsonSchemaToGbnf(const std::string& schemaJson, JsonWhitespace whitespace)
{
    OrderedJson schema = parseJsonText(schemaJson, "JSON schema", kMaxSchemaBytes);
    SchemaConverter converter(schema, whitespace);
    return converter.convert();
}

std::string anyJsonValueGbnf(JsonWhitespace whitespace)
{
    return std::string("root ::= value\n") + spaceRule(whitespace) + kPrimitives;
}

}}} // namespace cv::dnn::llm
