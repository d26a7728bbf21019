// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "json_schema_to_grammar.hpp"
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

// Bare values (without the trailing whitespace) of the JSON primitives.
const char* kPrimitives =
    "space ::= | \" \" | \"\\n\"{1,2} [ \\t]{0,20}\n"
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

// A GBNF string literal of UTF-8 bytes.
std::string literal(const std::string& s)
{
    std::string out = "\"";
    for (unsigned char c : s)
    {
        if (c == '"' || c == '\\') { out += '\\'; out += (char)c; }
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) out += format("\\x%02X", c);
        else out += (char)c;
    }
    return out + "\"";
}

// A code point inside a GBNF character class.
std::string classChar(uint32_t cp)
{
    if (cp == '\\' || cp == ']' || cp == '[' || cp == '-' || cp == '"' || cp == '^') return std::string("\\") + (char)cp;
    if (cp < 0x20 || cp == 0x7F) return format("\\x%02X", cp);
    if (cp < 0x80) return std::string(1, (char)cp);
    return cp <= 0xFFFF ? format("\\u%04X", cp) : format("\\U%08X", cp);
}

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

// Integers in ranges: alternatives of digit classes (each without leading zeros).
void sameLength(const std::string& s, const std::string& t, const std::string& prefix, std::vector<std::string>& out)
{
    if (s.empty()) { out.push_back(prefix.empty() ? "\"\"" : prefix); return; }
    auto digit = [](char c) { return std::string("[") + c + "]"; };
    if (s[0] == t[0]) { sameLength(s.substr(1), t.substr(1), prefix + (prefix.empty() ? "" : " ") + digit(s[0]), out); return; }
    const size_t k = s.size() - 1;
    const std::string zeros(k, '0'), nines(k, '9');
    auto tail = [&](const std::string& p) { return k == 0 ? p : p + format(" [0-9]{%d}", (int)k); };
    auto join = [&](const std::string& a) { return prefix + (prefix.empty() ? "" : " ") + a; };
    char midLo = s[0], midHi = t[0];
    if (s.substr(1) != zeros)
    {
        sameLength(s.substr(1), nines, join(digit(s[0])), out);
        midLo = (char)(s[0] + 1);
    }
    bool upper = t.substr(1) != nines;
    if (upper)
        midHi = (char)(t[0] - 1);
    if (midLo <= midHi)
        out.push_back(join(tail(std::string("[") + midLo + "-" + midHi + "]")));
    if (upper)
        sameLength(zeros, t.substr(1), join(digit(t[0])), out);
}

// Non-negative integers in [lo, hi]; hi < 0: unbounded (up to 16 digits).
std::vector<std::string> nonNegativeRange(int64_t lo, int64_t hi)
{
    std::vector<std::string> out;
    const int maxDigits = 16;
    const std::string loText = std::to_string(lo);
    const int loLen = (int)loText.size();
    const int hiLen = hi < 0 ? maxDigits : (int)std::to_string(hi).size();
    for (int len = loLen; len <= hiLen; len++)
    {
        std::string a = len == loLen ? loText : "1" + std::string((size_t)len - 1, '0');
        if (len == 1 && len != loLen) a = "0";
        std::string b = hi >= 0 && len == hiLen ? std::to_string(hi) : std::string((size_t)len, '9');
        if (hi < 0 && len > loLen)
        {
            // all longer numbers at once
            out.push_back(format("[1-9] [0-9]{%d,%d}", len - 1, maxDigits - 1));
            break;
        }
        if (a.size() == b.size() && a <= b)
            sameLength(a, b, "", out);
    }
    return out;
}

std::string integerRange(bool hasMin, int64_t minV, bool hasMax, int64_t maxV)
{
    std::vector<std::string> alts;
    if (!hasMin || minV < 0)
    {
        // negative part: "-" then |x| in [hasMax && maxV < 0 ? -maxV : 1, hasMin ? -minV : inf]
        // "-0" too when there is a lower bound, as llama.cpp
        int64_t absLo = hasMax && maxV < 0 ? -maxV : hasMin ? 0 : 1;
        int64_t absHi = hasMin ? -minV : -1;
        if (absHi < 0 || absLo <= absHi)
            for (const std::string& a : nonNegativeRange(absLo, absHi))
                alts.push_back("\"-\" " + a);
    }
    if (!hasMax || maxV >= 0)
    {
        int64_t lo = hasMin && minV > 0 ? minV : 0;
        int64_t hi = hasMax ? maxV : -1;
        if (hi < 0 || lo <= hi)
            for (const std::string& a : nonNegativeRange(lo, hi))
                alts.push_back(a);
    }
    if (alts.empty())
        return "";
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); i++)
        out += (i ? " | " : "") + alts[i];
    return out + ")";
}

class SchemaConverter
{
public:
    explicit SchemaConverter(const OrderedJson& root) : root_(root) {}

    std::string convert()
    {
        std::string top = visit(root_, "root", "#");
        std::string out = "root ::= " + top + "\n";
        for (const auto& r : rules_)
            out += r.first + " ::= " + r.second + "\n";
        out += kPrimitives;
        return out;
    }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& problem) const
    {
        CV_Error(Error::StsParseError, "JSON schema: " + path + ": " + problem);
    }

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
            fail("#", format("the schema needs more than %zu grammar rules", kMaxRules));
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
        CV_Error(Error::StsParseError, "JSON schema: " + path + ": " + what + " must be an integer of at most 17 digits");
    }

    const OrderedJson& resolve(const std::string& ref, const std::string& path)
    {
        if (ref.empty() || ref[0] != '#')
            fail(path, "only local $ref (\"#/...\") is supported, not '" + ref + "'");
        const OrderedJson* cur = &root_;
        size_t p = 1;
        while (p < ref.size())
        {
            if (ref[p] != '/')
                fail(path, "bad $ref '" + ref + "'");
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
                fail(path, "$ref '" + ref + "' points to nothing");
            p = q == std::string::npos ? ref.size() : q;
        }
        return *cur;
    }

    std::string constant(const OrderedJson& v)
    {
        return literal(v.dump());
    }

    std::string visit(const OrderedJson& s, const std::string& hint, const std::string& path)
    {
        if (++depth_ > 200)
            fail(path, "the schema nests too deeply");
        std::string r = visitInner(s, hint, path);
        depth_--;
        return r;
    }

    std::string alternatives(const OrderedJson& list, const std::string& hint, const std::string& path, const char* key)
    {
        if (!list.is_array() || list.empty())
            fail(path + "/" + key, "must be a non-empty array");
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
                fail(path, "the schema 'false' accepts nothing");
            return "value";
        }
        if (!s.is_object())
            fail(path, "a schema must be an object or a boolean");
        if (s.contains("$ref"))
        {
            if (!s["$ref"].is_string())
                fail(path, "$ref must be a string");
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
                fail(path + "/type", "must be a string or an array of strings");
            t = type->get<std::string>();
            static const std::set<std::string> known = {"object", "array", "string", "number", "integer", "boolean", "null"};
            if (!known.count(t))
                fail(path + "/type", "unknown type '" + t + "'");
        }
        if (s.contains("const"))
            return constant(s["const"]);
        if (s.contains("enum"))
        {
            const OrderedJson& e = s["enum"];
            if (!e.is_array() || e.empty())
                fail(path + "/enum", "must be a non-empty array");
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
                fail(path + "/pattern", "must be a string");
            return "\"\\\"\" " + patternRule(s["pattern"].get<std::string>(), hint, path + "/pattern") + " \"\\\"\"";
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
        {
            int64_t lo = s.contains("minLength") ? asInt(s["minLength"], path, "minLength") : 0;
            int64_t hi = s.contains("maxLength") ? asInt(s["maxLength"], path, "maxLength") : -1;
            if (lo < 0 || (hi >= 0 && hi < lo))
                fail(path, "bad minLength / maxLength");
            if (lo > kMaxRepetition)
                fail(path + "/minLength", format("above the limit of %d", (int)kMaxRepetition));
            if (hi > kMaxRepetition) hi = -1;
            return "\"\\\"\" " + (hi == 0 ? std::string() : repetition("char", lo, hi, "")) + " \"\\\"\"";
        }
        if (t == "integer" && (s.contains("minimum") || s.contains("maximum") || s.contains("exclusiveMinimum") ||
                               s.contains("exclusiveMaximum")))
        {
            bool hasMin = false, hasMax = false;
            int64_t lo = 0, hi = 0;
            const int64_t big = 1000000000000000LL;  // 16 digits
            if (s.contains("minimum")) { hasMin = true; lo = asInt(s["minimum"], path, "minimum"); }
            else if (s.contains("exclusiveMinimum")) { hasMin = true; lo = asInt(s["exclusiveMinimum"], path, "exclusiveMinimum") + 1; }
            if (s.contains("maximum")) { hasMax = true; hi = asInt(s["maximum"], path, "maximum"); }
            else if (s.contains("exclusiveMaximum")) { hasMax = true; hi = asInt(s["exclusiveMaximum"], path, "exclusiveMaximum") - 1; }
            if ((hasMin && (lo > big || lo < -big)) || (hasMax && (hi > big || hi < -big)))
                fail(path, "integer bounds beyond 16 digits are not supported");
            std::string r = integerRange(hasMin, lo, hasMax, hi);
            if (r.empty())
                fail(path, "the integer range is empty");
            return r;  // as llama.cpp: no whitespace after a ranged integer
        }
        if (t.empty() && s.contains("allOf"))
            return allOfRule(s, hint, path);
        if (t.empty())
            return s.empty() ? "object" : "value";  // llama.cpp: an empty schema is an object
        if (t == "object") return "object";
        if (t == "array") return "array";
        return t;  // string, number, integer, boolean, null
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
            fail(path, "bad minItems / maxItems");
        if (lo > kMaxRepetition)
            fail(path + "/minItems", format("above the limit of %d", (int)kMaxRepetition));
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
                alts += (alts.empty() ? "" : " | ") + literal(std::string(1, (char)kv.first)) + " " + ruleOf[kv.second];
                if (kv.first < 0x80) except += classChar(kv.first);
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
                fail(path + "/properties", "must be an object");
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
            fail(path + "/allOf", "must be an array");
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
                fail(p, "allOf supports object schemas with properties, and enums, only");
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
                fail(path + "/allOf", "the enums have no value in common");
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
            std::string kv = addRule(hint + "-" + p.first + "-kv", literal(OrderedJson(p.first).dump()) +
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

    // A regular expression (ECMA-like subset) as a GBNF expression of JSON string content.
    std::string patternRule(const std::string& re, const std::string& hint, const std::string& path)
    {
        size_t pos = 0;
        std::string body = re;
        if (!body.empty() && body[0] == '^') body = body.substr(1);
        if (!body.empty() && body.back() == '$' && (body.size() < 2 || body[body.size() - 2] != '\\')) body.pop_back();
        re_ = &body;
        rePath_ = path;
        std::string out = regexAlternatives(pos, 0);
        if (pos != body.size())
            fail(path, format("unexpected '%c' at offset %zu of the pattern", body[pos], pos));
        (void)hint;
        return "(" + out + ")";
    }

    std::string regexAlternatives(size_t& pos, int depth)
    {
        if (depth > 100) fail(rePath_, "the pattern nests too deeply");
        const std::string& s = *re_;
        std::string out = regexSequence(pos, depth);
        while (pos < s.size() && s[pos] == '|')
        {
            pos++;
            out += " | " + regexSequence(pos, depth);
        }
        return out;
    }

    static std::string escapeClass(char c)
    {
        switch (c)
        {
        case 'd': return "0-9";
        case 'w': return "a-zA-Z0-9_";
        case 's': return " \\t\\n\\r";
        default: return "";
        }
    }

    // One regex character (after a backslash or not) as a JSON-string-content GBNF literal.
    static std::string jsonChar(uint32_t c)
    {
        std::string bytes;
        if (c == '"') return literal("\\\"");
        if (c == '\\') return literal("\\\\");
        if (c == '\n') return literal("\\n");
        if (c == '\t') return literal("\\t");
        if (c == '\r') return literal("\\r");
        bytes += (char)c;
        return literal(bytes);
    }

    std::string regexSequence(size_t& pos, int depth)
    {
        const std::string& s = *re_;
        std::vector<std::string> items;
        while (pos < s.size() && s[pos] != '|' && s[pos] != ')')
        {
            char c = s[pos];
            std::string atom;
            if (c == '(')
            {
                pos++;
                if (s.compare(pos, 2, "?:") == 0) pos += 2;
                atom = "(" + regexAlternatives(pos, depth + 1) + ")";
                if (pos >= s.size() || s[pos] != ')')
                    fail(rePath_, "unbalanced parenthesis in the pattern");
                pos++;
            }
            else if (c == '[')
            {
                size_t start = pos++;
                std::string cls = "[";
                if (pos < s.size() && s[pos] == '^') { cls += "^"; pos++; }
                while (pos < s.size() && s[pos] != ']')
                {
                    if (s[pos] == '\\' && pos + 1 < s.size())
                    {
                        std::string e = escapeClass(s[pos + 1]);
                        cls += e.empty() ? classChar((unsigned char)s[pos + 1]) : e;
                        pos += 2;
                    }
                    else if (s[pos] == '-' && cls.size() > 1 && pos + 1 < s.size() && s[pos + 1] != ']')
                    {
                        cls += "-";
                        pos++;
                    }
                    else
                    {
                        // UTF-8 bytes of one character go through as they are
                        unsigned char b = (unsigned char)s[pos];
                        if (b < 0x80) cls += classChar(b);
                        else cls += (char)b;
                        pos++;
                    }
                }
                if (pos >= s.size())
                    fail(rePath_, format("unterminated character class at offset %zu of the pattern", start));
                pos++;
                if (cls == "[" || cls == "[^")
                    fail(rePath_, "empty character class in the pattern");
                atom = cls + "]";
                // a class of JSON string content must not let quotes or control characters through unescaped
                if (atom.compare(0, 2, "[^") == 0)
                    atom = "[^\"\\\\\\x00-\\x1F\\x7F" + atom.substr(2);
            }
            else if (c == '.')
            {
                // one raw character of the string (as llama.cpp, without escape sequences)
                atom = "[^\"\\\\\\x00-\\x1F\\x7F]";
                pos++;
            }
            else if (c == '\\')
            {
                if (pos + 1 >= s.size())
                    fail(rePath_, "a pattern ending with a backslash");
                char e = s[pos + 1];
                std::string cls = escapeClass(e);
                if (!cls.empty()) atom = "[" + cls + "]";
                else if (e == 'D') atom = "[^0-9\"\\\\\\x00-\\x1F\\x7F]";
                else if (e == 'W') atom = "[^a-zA-Z0-9_\"\\\\\\x00-\\x1F\\x7F]";
                else if (e == 'S') atom = "[^ \\t\\n\\r\"\\\\\\x00-\\x1F\\x7F]";
                else if (e == 'n') atom = jsonChar('\n');
                else if (e == 't') atom = jsonChar('\t');
                else if (e == 'r') atom = jsonChar('\r');
                else if (std::isalnum((unsigned char)e))
                    fail(rePath_, std::string("unsupported escape \\") + e + " in the pattern");
                else atom = jsonChar((unsigned char)e);
                pos += 2;
            }
            else if (c == '*' || c == '+' || c == '?' || c == '{')
                fail(rePath_, format("a quantifier with nothing before it at offset %zu of the pattern", pos));
            else if (c == '^' || c == '$')
                fail(rePath_, "anchors inside the pattern are not supported");
            else
            {
                unsigned char b = (unsigned char)c;
                int n = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
                if (n == 1) atom = jsonChar(b);
                else atom = literal(s.substr(pos, (size_t)n));
                pos += (size_t)n;
            }
            // quantifier
            if (pos < s.size())
            {
                char q = s[pos];
                if (q == '*' || q == '+' || q == '?')
                {
                    atom = "(" + atom + ")" + q;
                    pos++;
                }
                else if (q == '{')
                {
                    size_t close = s.find('}', pos);
                    if (close == std::string::npos)
                        fail(rePath_, "unterminated {} in the pattern");
                    std::string inner = s.substr(pos + 1, close - pos - 1);
                    if (inner.empty() || inner.find_first_not_of("0123456789,") != std::string::npos || inner[0] == ',')
                        fail(rePath_, "bad {} quantifier in the pattern");
                    atom = "(" + atom + "){" + inner + "}";
                    pos = close + 1;
                }
                if (pos < s.size() && s[pos] == '?')
                    pos++;  // lazy quantifier: same language
            }
            items.push_back(atom);
        }
        if (items.empty())
            return "\"\"";
        std::string out;
        for (size_t i = 0; i < items.size(); i++)
            out += (i ? " " : "") + items[i];
        return out;
    }

    const OrderedJson& root_;
    std::vector<std::pair<std::string, std::string> > rules_;
    std::set<std::string> used_;
    std::map<std::string, std::string> refRules_;
    int depth_ = 0;
    const std::string* re_ = nullptr;
    std::string rePath_;
};

} // namespace

std::string jsonSchemaToGbnf(const std::string& schemaJson)
{
    OrderedJson schema = parseJsonText(schemaJson, "JSON schema", kMaxSchemaBytes);
    SchemaConverter converter(schema);
    return converter.convert();
}

std::string anyJsonValueGbnf()
{
    return std::string("root ::= value\n") + kPrimitives;
}

}}} // namespace cv::dnn::llm
