// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as a GBNF grammar or a JSON schema, then as text run through
// the grammar's matcher and the token mask (grammar constrained generation, issue 20). A
// cv::Exception is the expected answer to a bad grammar or schema and to a grammar that reaches
// the matcher's limits; anything else (a crash, a sanitizer report, a leak, a timeout, another
// exception, a mask that differs from trying each token alone) is a bug.
//
// Input layout (the seeds in seeds/grammar are plain text files):
//   byte 0      bit 0: the rest is a JSON schema (else GBNF)
//   bytes 1..   the grammar or schema, then optionally '\f' and a text to feed byte by byte

#include "llm/grammar/gbnf_parser.hpp"
#include "llm/grammar/grammar_matcher.hpp"
#include "llm/grammar/json_schema_to_grammar.hpp"
#include "llm/grammar/token_mask.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace cv::dnn::llm;

const std::vector<std::string>& pieces()
{
    static const std::vector<std::string> p = {
        "", "{", "}", "\"", "\": ", ",", " ", "a", "ab", "abc", "1", "12", "-", ".", "e", "[", "]", "true",
        "null", "\\", "\\n", "\n", "\xC3", "\xA9", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F", "x", "(", ")", "+"};
    return p;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1)
        return 0;
    const bool schema = data[0] & 1;
    std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    std::string text;
    const size_t ff = rest.find('\f');
    if (ff != std::string::npos)
    {
        text = rest.substr(ff + 1);
        rest.resize(ff);
    }
    GbnfLimits limits;
    limits.maxElements = 1 << 16;
    GrammarLimits matcherLimits;
    matcherLimits.maxStacks = 256;
    matcherLimits.maxDepth = 256;
    matcherLimits.maxExpansions = 1 << 16;
    try
    {
        std::shared_ptr<const Grammar> g = parseGbnf(schema ? jsonSchemaToGbnf(rest) : rest, "root", limits);
        (void)g->toString();
        GrammarMatcher m(g, matcherLimits);
        static const TokenTrie trie(pieces());
        std::vector<uint8_t> allowed;
        for (size_t i = 0; i <= text.size() && !m.isDead(); i++)
        {
            if (i % 8 == 0)
            {
                trie.mask(m, allowed);
                for (size_t id = 0; id < pieces().size(); id++)
                    if ((bool)allowed[id] != TokenTrie::allows(m, pieces()[id]))
                        abort();  // the trie walk must equal trying each token alone
            }
            if (i < text.size())
                m.acceptByte((unsigned char)text[i]);
        }
        (void)m.canEnd();
    }
    catch (const cv::Exception&)
    {
    }
    return 0;
}
