// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The pprint filter: Python's pprint.pformat(value) (width 80, dict keys sorted), which splits
// containers and long strings over lines when their repr() does not fit.

#include "../../precomp.hpp"
#include "pretty_print.hpp"
#include "text.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {
namespace jinja {

namespace {

const int64_t kWidth = 80;

int64_t width(const std::string& s) { return (int64_t)codePointCount(s); }

// pprint's _safe_key: values of one type compare by value, of different types by type name.
bool keyLess(const Value& a, const Value& b, Budget& budget)
{
    try
    {
        return compare(a, b, budget) == -1;
    }
    catch (const TemplateError& e)
    {
        if (e.kind == ErrorKind::Limit)
            throw;
        return a.typeName() < b.typeName();
    }
}

std::vector<const std::pair<Value, Value>*> sortedEntries(const Value& dict, Budget& budget)
{
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& entry : dict.entries())
        entries.push_back(&entry);
    std::stable_sort(entries.begin(), entries.end(), [&](const std::pair<Value, Value>* x, const std::pair<Value, Value>* y) {
        return keyLess(x->first, y->first, budget);
    });
    return entries;
}

class PrettyPrinter
{
public:
    explicit PrettyPrinter(Budget& budget) : budget_(budget) {}

    // pprint's _safe_repr: repr() with sorted dict keys.
    std::string safeRepr(const Value& v, int depth = 0)
    {
        if (depth > kMaxRecursion)
            fail(ErrorKind::Limit, "values nested too deep for pprint");
        budget_.charge();
        if (v.isDict())
        {
            std::string out = "{";
            bool first = true;
            for (const auto* entry : sortedEntries(v, budget_))
            {
                out += (first ? "" : ", ") + safeRepr(entry->first, depth + 1) + ": " + safeRepr(entry->second, depth + 1);
                first = false;
                budget_.checkSize(out.size());
            }
            return out + "}";
        }
        if (v.isList() || (v.isTuple()))
        {
            const std::vector<Value>& items = v.items();
            std::string out = v.isList() ? "[" : "(";
            for (size_t i = 0; i < items.size(); i++)
            {
                out += (i ? ", " : "") + safeRepr(items[i], depth + 1);
                budget_.checkSize(out.size());
            }
            return out + (v.isList() ? "]" : items.size() == 1 ? ",)" : ")");
        }
        return repr(v, budget_, depth);
    }

    void format(const Value& v, int64_t indent, int64_t allowance, int level)
    {
        budget_.checkSize(out.size());
        const std::string rep = safeRepr(v);
        if (width(rep) > kWidth - indent - allowance)
        {
            if (v.isDict())
                return formatDict(v, indent, allowance, level + 1);
            if (v.isList() || v.isTuple())
                return formatSequence(v, indent, allowance, level + 1);
            if (v.isString() && !v.str().empty())
                return formatString(v.str(), indent, allowance, level + 1);
        }
        out += rep;
    }

    std::string out;

private:
    void formatDict(const Value& v, int64_t indent, int64_t allowance, int level)
    {
        out += "{";
        const auto entries = sortedEntries(v, budget_);
        indent += 1;
        allowance += 1;
        for (size_t i = 0; i < entries.size(); i++)
        {
            const bool last = i + 1 == entries.size();
            const std::string rep = safeRepr(entries[i]->first);
            out += rep + ": ";
            format(entries[i]->second, indent + width(rep) + 2, last ? allowance : 1, level);
            if (!last)
                out += ",\n" + std::string((size_t)indent, ' ');
        }
        out += "}";
    }

    void formatSequence(const Value& v, int64_t indent, int64_t allowance, int level)
    {
        const std::vector<Value>& items = v.items();
        const std::string close = v.isList() ? "]" : items.size() == 1 ? ",)" : ")";
        out += v.isList() ? "[" : "(";
        indent += 1;
        allowance += (int64_t)close.size();
        for (size_t i = 0; i < items.size(); i++)
        {
            const bool last = i + 1 == items.size();
            if (i)
                out += ",\n" + std::string((size_t)indent, ' ');
            format(items[i], indent, last ? allowance : 1, level);
        }
        out += close;
    }

    // pprint's _pprint_str: lines, and lines split after runs of whitespace, as string literals.
    void formatString(const std::string& s, int64_t indent, int64_t allowance, int level)
    {
        std::vector<std::string> chunks;
        const std::vector<std::string> lines = splitLines(s, true);
        if (level == 1)
        {
            indent += 1;
            allowance += 1;
        }
        const int64_t maxWidth = kWidth - indent;
        int64_t maxWidth1 = maxWidth;
        std::string rep;
        for (size_t i = 0; i < lines.size(); i++)
        {
            rep = reprString(lines[i]);
            if (i + 1 == lines.size())
                maxWidth1 -= allowance;
            if (width(rep) <= maxWidth1)
            {
                chunks.push_back(rep);
                continue;
            }
            // Alternating non-space and space runs (re.findall(r'\S*\s*', line) minus the empty end).
            std::vector<std::string> parts;
            const std::vector<uint32_t> cps = codePoints(lines[i]);
            size_t p = 0;
            while (p < cps.size())
            {
                size_t q = p;
                while (q < cps.size() && !isSpace(cps[q]))
                    q++;
                while (q < cps.size() && isSpace(cps[q]))
                    q++;
                parts.push_back(fromCodePoints(cps, p, q));
                p = q;
            }
            int64_t maxWidth2 = maxWidth;
            std::string current;
            for (size_t j = 0; j < parts.size(); j++)
            {
                const std::string candidate = current + parts[j];
                if (j + 1 == parts.size() && i + 1 == lines.size())
                    maxWidth2 -= allowance;
                if (width(reprString(candidate)) > maxWidth2)
                {
                    if (!current.empty())
                        chunks.push_back(reprString(current));
                    current = parts[j];
                }
                else
                    current = candidate;
            }
            if (!current.empty())
                chunks.push_back(reprString(current));
        }
        if (chunks.size() == 1)
        {
            out += rep;
            return;
        }
        if (level == 1)
            out += "(";
        for (size_t i = 0; i < chunks.size(); i++)
            out += (i ? "\n" + std::string((size_t)indent, ' ') : std::string()) + chunks[i];
        if (level == 1)
            out += ")";
    }

    Budget& budget_;
};

} // namespace

std::string prettyFormat(const Value& value, Budget& budget)
{
    PrettyPrinter printer(budget);
    printer.format(value, 0, 0, 0);
    return printer.out;
}

}}}} // namespace cv::dnn::llm::jinja
