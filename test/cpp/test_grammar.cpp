// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Grammar-constrained generation (issue 20): the GBNF parser, the matcher, the JSON-schema
// converter and the token mask, against llama.cpp's own test vectors
// (test/data/grammar/llama_cpp_grammar_cases.json, see its README) and brute force.

#include <gtest/gtest.h>
#include <opencv2/core.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <random>
#include <cstring>
#include <set>

#include "../../modules/dnn/src/llm/grammar/gbnf_parser.hpp"
#include "../../modules/dnn/src/llm/grammar/grammar_matcher.hpp"
#include "../../modules/dnn/src/llm/grammar/json_schema_to_grammar.hpp"
#include "../../modules/dnn/src/llm/grammar/token_mask.hpp"
#include "../../modules/dnn/src/llm/tokenizer/tokenizer.hpp"
#include <opencv2/dnn/gguf.hpp>
#include <opencv2/dnn/text_generation.hpp>
#include "test_common.hpp"

namespace {

using namespace cv::dnn::llm;
using nlohmann::json;

json loadCases()
{
    std::ifstream f(llm_test::projectRoot() + "/test/data/grammar/llama_cpp_grammar_cases.json");
    EXPECT_TRUE(f.good());
    return json::parse(f);
}

std::string caseString(const json& s)
{
    if (s.is_string())
        return s.get<std::string>();
    std::string out;
    for (const auto& b : s["bytes"])
        out += (char)b.get<int>();
    return out;
}

// JSON validity by nlohmann's parser, with exponents shortened (it refuses doubles out of range)
// and lone surrogate escapes replaced (JSON's grammar allows them, nlohmann refuses them).
bool validJson(const std::string& s)
{
    std::string t;
    bool inString = false;
    for (size_t i = 0; i < s.size(); i++)
    {
        const char c = s[i];
        if (inString)
        {
            if (c == '\\' && i + 1 < s.size())
            {
                if (s[i + 1] == 'u' && i + 5 < s.size() && (s[i + 2] == 'd' || s[i + 2] == 'D') &&
                    std::strchr("89abcdefABCDEF", s[i + 3]))
                {
                    t += "x";
                    i += 5;
                    continue;
                }
                t += c;
                t += s[++i];
                continue;
            }
            if (c == '"') inString = false;
            t += c;
            continue;
        }
        if (c == '"') inString = true;
        t += c;
        if ((c == 'e' || c == 'E') && i > 0 && std::isdigit((unsigned char)s[i - 1]))
        {
            size_t j = i + 1;
            if (j < s.size() && (s[j] == '+' || s[j] == '-')) t += s[j++];
            size_t k = j;
            while (k < s.size() && std::isdigit((unsigned char)s[k])) k++;
            if (k > j) t += "1";
            i = k - 1;
        }
    }
    return json::accept(t);
}

bool matches(const std::shared_ptr<const Grammar>& g, const std::string& text)
{
    GrammarMatcher m(g);
    return m.accept(text) && m.canEnd();
}

// Cases of llama.cpp's test-grammar-integration.cpp we do not support, with the reason. Each is
// checked to be refused with a clear error (not skipped).
const std::set<std::string> kUnsupportedIntegration = {
    // token-id elements (<[10]>, !<[11]>) constrain token ids, not text; our grammars match text
    "simple grammar with tokens",
    "complex grammar with tokens",
};

TEST(Grammar, LlamaCppIntegrationCases)
{
    const json cases = loadCases();
    int casesRun = 0, casesPassed = 0, stringsRun = 0, stringsPassed = 0, unsupported = 0;
    for (const auto& c : cases["integration"])
    {
        const std::string desc = c["description"].get<std::string>();
        const std::string kind = c["kind"].get<std::string>();
        SCOPED_TRACE(c["source"].get<std::string>() + " " + kind + " '" + desc + "'");
        if (kUnsupportedIntegration.count(desc))
        {
            EXPECT_TRUE(c.contains("unsupported"));
            EXPECT_THROW(parseGbnf(c["grammar"].get<std::string>()), cv::Exception);
            unsupported++;
            continue;
        }
        ASSERT_FALSE(c.contains("unsupported"));
        std::shared_ptr<const Grammar> g;
        try
        {
            g = parseGbnf(kind == "grammar" ? c["grammar"].get<std::string>()
                                            : jsonSchemaToGbnf(c["schema"].get<std::string>(), JsonWhitespace::LlamaCpp));
        }
        catch (const cv::Exception& e)
        {
            ADD_FAILURE() << e.what();
            continue;
        }
        casesRun++;
        bool allOk = true;
        for (const auto& s : c["passing"])
        {
            stringsRun++;
            const bool ok = matches(g, caseString(s));
            EXPECT_TRUE(ok) << "should accept: " << caseString(s) << "\n" << g->toString();
            stringsPassed += ok;
            allOk = allOk && ok;
        }
        for (const auto& s : c["failing"])
        {
            stringsRun++;
            const bool ok = !matches(g, caseString(s));
            EXPECT_TRUE(ok) << "should reject: " << caseString(s);
            stringsPassed += ok;
            allOk = allOk && ok;
        }
        casesPassed += allOk;
    }
    std::cout << "[ conformance ] llama.cpp grammar-integration cases: " << casesPassed << "/" << casesRun
              << " cases, " << stringsPassed << "/" << stringsRun << " strings; " << unsupported
              << " cases unsupported (token-id elements)" << std::endl;
    EXPECT_GE(casesRun, 40);
}

TEST(Grammar, LlamaCppRefusedGrammars)
{
    const json cases = loadCases();
    ASSERT_GE(cases["refused_grammars"].size(), 4u);
    for (const auto& c : cases["refused_grammars"])
    {
        SCOPED_TRACE(c["source"].get<std::string>());
        try
        {
            parseGbnf(c["grammar"].get<std::string>());
            ADD_FAILURE() << "accepted a left-recursive grammar";
        }
        catch (const cv::Exception& e)
        {
            EXPECT_NE(std::string(e.what()).find("left-recursive"), std::string::npos) << e.what();
        }
    }
}

// A random string of the grammar's language (a random walk over the matcher's states).
bool sampleString(const std::shared_ptr<const Grammar>& g, std::mt19937& rng, std::string& out)
{
    static const std::vector<uint32_t> pool = [] {
        std::vector<uint32_t> p;
        for (uint32_t c = 0x20; c < 0x7F; c++) p.push_back(c);
        for (uint32_t c : {0x0Au, 0x09u, 0xE9u, 0x4E2Du, 0x1F642u}) p.push_back(c);
        return p;
    }();
    GrammarMatcher m(g);
    out.clear();
    // stacks in an order that does not depend on addresses (deterministic samples)
    std::map<const GrammarElement*, size_t> index;
    for (const auto& rule : g->rules)
        for (const auto& e : rule)
            index.emplace(&e, index.size());
    for (int step = 0; step < 400; step++)
    {
        std::vector<std::vector<size_t> > keys;
        for (const auto& st : m.stacks())
        {
            keys.emplace_back();
            for (const GrammarElement* e : st)
                keys.back().push_back(index.at(e));
        }
        std::vector<size_t> order(keys.size());
        for (size_t k = 0; k < order.size(); k++) order[k] = k;
        std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
        if (m.canEnd() && (m.isComplete() || std::uniform_real_distribution<double>(0, 1)(rng) < 0.25))
            return true;
        // candidates: the characters some stack's top allows
        std::vector<uint32_t> cands;
        for (size_t k : order)
        {
            const auto& st = m.stacks()[k];
            if (st.empty()) continue;
            const GrammarElement* e = st.back();
            if (e->type == GrammarElementType::Char)
            {
                // a code point of a random range of the class
                std::vector<std::pair<uint32_t, uint32_t> > ranges;
                const GrammarElement* p = e;
                do
                {
                    if (p[1].type == GrammarElementType::CharRangeUpper) { ranges.push_back({p->value, p[1].value}); p += 2; }
                    else { ranges.push_back({p->value, p->value}); p += 1; }
                } while (p->type == GrammarElementType::CharAlt);
                auto r = ranges[rng() % ranges.size()];
                cands.push_back(r.first + (uint32_t)(rng() % (r.second - r.first + 1)));
            }
            else
                for (int k = 0; k < 8; k++)
                {
                    uint32_t c = pool[rng() % pool.size()];
                    if (matchCharClass(e, c)) { cands.push_back(c); break; }
                }
        }
        if (cands.empty())
            return false;
        uint32_t cp = cands[rng() % cands.size()];
        std::string bytes;
        if (cp < 0x80) bytes += (char)cp;
        else if (cp < 0x800) { bytes += (char)(0xC0 | (cp >> 6)); bytes += (char)(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) { bytes += (char)(0xE0 | (cp >> 12)); bytes += (char)(0x80 | ((cp >> 6) & 0x3F)); bytes += (char)(0x80 | (cp & 0x3F)); }
        else { bytes += (char)(0xF0 | (cp >> 18)); bytes += (char)(0x80 | ((cp >> 12) & 0x3F)); bytes += (char)(0x80 | ((cp >> 6) & 0x3F)); bytes += (char)(0x80 | (cp & 0x3F)); }
        if (!m.accept(bytes))
            return false;
        out += bytes;
    }
    return false;
}

// Cases where llama.cpp's expected grammar is wrong, with the reason: only the strings of
// llama.cpp's grammar that are valid JSON are checked against ours (not the other way).
const std::map<std::string, std::string> kSchemaDeviations = {
    {"optional props with empty name", "llama.cpp names the rule of the property \"\" 'root', so its root "
                                       "is an integer; ours is the object (checked below)"},
    {"optional props with common prefix", "llama.cpp's key rule refuses the other key \"a\" (a prefix of "
                                          "\"ab\"); ours allows every key but \"ab\" and \"ac\""},
    {"optional props with nested names", "llama.cpp's key rule reads a backslash as a raw character, so a key "
                                         "that starts with an escape (\"\\\" \") is refused; ours allows it"},
    {"optional + additional props", "as above: keys starting with an escape sequence"},
    {"required + additional props", "as above: keys starting with an escape sequence"},
    {"required + optional + additional props", "as above: keys starting with an escape sequence"},
};

// llama.cpp's test-json-schema-to-grammar.cpp cases, by behaviour: strings sampled from the
// grammar llama.cpp expects must match our conversion and strings sampled from ours must match
// llama.cpp's grammar (parsed by our GBNF parser); FAILURE cases must be refused.
TEST(Grammar, LlamaCppSchemaConversionCases)
{
    const json cases = loadCases();
    int run = 0, agreed = 0, samples = 0, sampleAgreed = 0, invalidTheirs = 0, deviations = 0;
    for (const auto& c : cases["schema_conversion"])
    {
        SCOPED_TRACE(c["source"].get<std::string>() + " '" + c["name"].get<std::string>() + "'");
        run++;
        const std::string schema = c["schema"].get<std::string>();
        if (c["status"] == "failure")
        {
            bool refused = false;
            try { parseGbnf(jsonSchemaToGbnf(schema, JsonWhitespace::LlamaCpp)); }
            catch (const cv::Exception&) { refused = true; }
            EXPECT_TRUE(refused) << "should refuse: " << schema;
            agreed += refused;
            continue;
        }
        std::shared_ptr<const Grammar> ours, theirs;
        try
        {
            ours = parseGbnf(jsonSchemaToGbnf(schema, JsonWhitespace::LlamaCpp));
            theirs = parseGbnf(c["expected_grammar"].get<std::string>());
        }
        catch (const cv::Exception& e)
        {
            ADD_FAILURE() << e.what();
            continue;
        }
        std::mt19937 rng(12345);
        bool ok = true;
        const bool deviation = kSchemaDeviations.count(c["name"].get<std::string>()) > 0;
        deviations += deviation;
        for (int i = 0; i < 30; i++)
        {
            std::string s;
            if (c["name"] == "optional props with empty name")
            {
                EXPECT_TRUE(matches(ours, R"({"": 1, "a": 2, "b": 3})"));
                EXPECT_FALSE(matches(ours, R"({"": "x"})"));
                break;
            }
            if (sampleString(theirs, rng, s))
            {
                // llama.cpp's grammars let some invalid JSON through (e.g. "-0974" for
                // "maximum": -5); we do not follow them there
                if (!validJson(s))
                {
                    invalidTheirs++;
                    continue;
                }
                samples++;
                bool m = matches(ours, s);
                sampleAgreed += m;
                EXPECT_TRUE(m) << "llama.cpp's grammar gives " << json(s).dump() << ", ours rejects it";
                ok = ok && m;
            }
            if (sampleString(ours, rng, s) && !deviation)
            {
                EXPECT_TRUE(validJson(s)) << "our grammar gives invalid JSON " << json(s).dump();
                samples++;
                bool m = matches(theirs, s);
                sampleAgreed += m;
                EXPECT_TRUE(m) << "our grammar gives " << json(s).dump() << ", llama.cpp's rejects it";
                ok = ok && m;
            }
        }
        agreed += ok;
    }
    std::cout << "[ conformance ] llama.cpp json-schema-to-grammar cases: " << agreed << "/" << run
              << " agree (" << deviations << " of them checked one way only: known llama.cpp bugs); sampled strings accepted by the other side: " << sampleAgreed << "/" << samples
              << " (" << invalidTheirs << " strings of llama.cpp's grammars that are not valid JSON left out)" << std::endl;
    EXPECT_GE(run, 70);
}

TEST(Grammar, ParseErrorsNamePosition)
{
    const std::vector<std::pair<std::string, std::string> > bad = {
        {"root ::= \"abc", "line 1, column 10: unterminated string literal"},
        {"root ::= [a-z", "line 1, column 10: unterminated character class"},
        {"root ::= x\n", "line 1, column 10: undefined rule 'x'"},
        {"root ::= \"a\"\nfoo := \"b\"", "line 2, column 5: expecting ::="},
        {"root ::= (\"a\" | \"b\"", "line 1, column 20: expecting ')'"},
        {"root ::= \"\\q\"", "line 1, column 11: unknown escape"},
        {"root ::= \"a\"{3,2}", "line 1, column 16: repetition maximum below its minimum"},
        {"root ::= \"a\"{2001}", "repetition minimum above the limit"},
        {"root ::= <[10]>", "token references"},
    };
    for (const auto& b : bad)
    {
        try
        {
            parseGbnf(b.first);
            ADD_FAILURE() << "accepted: " << b.first;
        }
        catch (const cv::Exception& e)
        {
            EXPECT_NE(std::string(e.what()).find(b.second), std::string::npos) << b.first << " -> " << e.what();
        }
    }
    EXPECT_THROW(parseGbnf("foo ::= \"a\""), cv::Exception);  // no root
    EXPECT_NO_THROW(parseGbnf("foo ::= \"a\"", "foo"));
}

TEST(Grammar, BoundedWork)
{
    // Many ambiguous parses at once: an error, not an explosion.
    GrammarMatcher::Limits limits;
    limits.maxStacks = 64;
    auto g = parseGbnf("root ::= (\"a\"?){120} \"b\"");
    EXPECT_THROW({ GrammarMatcher m(g, limits); m.accept("aaaa"); }, cv::Exception);
    // The default limits take it.
    GrammarMatcher m(g);
    EXPECT_TRUE(m.accept(std::string(100, 'a') + "b"));
    EXPECT_TRUE(m.canEnd());
    // Deep nesting: limited.
    auto nest = parseGbnf("root ::= \"(\" root \")\" | \"x\"");
    GrammarMatcher deep(nest);
    EXPECT_THROW(deep.accept(std::string(10000, '(')), cv::Exception);
    // Repetition counts expand within the element limit.
    GbnfLimits small;
    small.maxElements = 1000;
    EXPECT_THROW(parseGbnf("root ::= (\"abc\"{2000}){2000}", "root", small), cv::Exception);
}

TEST(Grammar, Utf8AndPartialCharacters)
{
    auto g = parseGbnf("root ::= \"é\" [à-ü]+ [^a-z] .");
    GrammarMatcher m(g);
    const std::string text = "é\xC3\xA0\xC3\xBC" "中🙂";
    // byte by byte: every prefix is alive
    for (size_t i = 0; i < text.size(); i++)
        ASSERT_TRUE(m.acceptByte((unsigned char)text[i])) << i;
    EXPECT_TRUE(m.canEnd());
    GrammarMatcher half(g);
    EXPECT_TRUE(half.accept("\xC3"));  // first byte of é
    EXPECT_FALSE(half.canEnd());
    GrammarMatcher wrong(g);
    EXPECT_FALSE(wrong.accept("\xC4"));  // starts U+0100..U+013F: not é
    GrammarMatcher invalid(g);
    EXPECT_FALSE(invalid.accept("\x80"));
    // overlong forms, surrogates and code points above U+10FFFF are not UTF-8 (RFC 3629)
    auto any = parseGbnf("root ::= .+");
    for (const char* bad : {"\xC0\xBB", "\xC1\x81", "\xE0\x80\xBB", "\xF0\x80\x81\xBB", "\xED\xA0\x80",
                            "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF"})
    {
        GrammarMatcher a(any);
        EXPECT_FALSE(a.accept(bad) && a.canEnd()) << bad;
    }
    // and the shortest prefix that can only become one of them is refused at once
    GrammarMatcher early(any);
    EXPECT_FALSE(early.accept("\xE0\x80"));
    GrammarMatcher ok(any);
    EXPECT_TRUE(ok.accept("\xE0\xA0\x80\xF4\x8F\xBF\xBF\xED\x9F\xBF") && ok.canEnd());
}

// The trie walk gives exactly what trying each token alone gives.
TEST(Grammar, TokenMaskEqualsBruteForce)
{
    std::mt19937 rng(7);
    std::vector<std::string> pieces;
    const std::vector<std::string> alphabet = {"{", "}", "\"", ":", ",", " ", "a", "b", "1", "0", "-", ".", "e",
                                               "[", "]", "n", "u", "l", "t", "r", "\\", "é", "\xC3", "\xA9", "中",
                                               "\xE4", "\xB8", "\xAD", "\n", "true", "null", "\": "};
    pieces.push_back("");  // a control token
    for (int i = 0; i < 3000; i++)
    {
        std::string p;
        int n = 1 + (int)(rng() % 4);
        for (int k = 0; k < n; k++) p += alphabet[rng() % alphabet.size()];
        pieces.push_back(p);
    }
    TokenTrie trie(pieces);
    auto g = parseGbnf(jsonSchemaToGbnf(
        R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"}}},"required":["a","b"]})"));
    GrammarMatcher m(g);
    std::vector<uint8_t> allowed;
    int states = 0;
    // one scratch for the whole walk, as in a Completion: masks of revisited states come from its
    // cache (a small one, so that entries are evicted too)
    TokenTrie::Scratch scratch;
    scratch.maxCachedMasks = 3;
    // walk: at each state pick a random allowed token
    for (int step = 0; step < 120 && !m.isComplete(); step++)
    {
        int count = trie.mask(m, allowed, scratch);
        int brute = 0;
        for (size_t id = 0; id < pieces.size(); id++)
        {
            const bool b = TokenTrie::allows(m, pieces[id]);
            brute += b;
            ASSERT_EQ((bool)allowed[id], b) << "token '" << pieces[id] << "' at step " << step;
        }
        ASSERT_EQ(count, brute);
        states++;
        if (count == 0)
            break;
        std::vector<int> ok;
        for (size_t id = 0; id < allowed.size(); id++)
            if (allowed[id]) ok.push_back((int)id);
        ASSERT_TRUE(m.accept(pieces[ok[rng() % ok.size()]]));
    }
    EXPECT_GE(states, 10);
}

// The same over real vocabularies (LLaMA's SentencePiece with byte tokens, GPT-2's byte-level BPE),
// along a JSON text: the trie walk equals trying every token alone.
TEST(Grammar, TokenMaskEqualsBruteForceRealVocabularies)
{
    for (const char* vocab : {"llama.cpp-vocab/ggml-vocab-llama-spm.gguf", "llama.cpp-vocab/ggml-vocab-gpt-2.gguf"})
    {
        SCOPED_TRACE(vocab);
        cv::Ptr<cv::dnn::GGUFFile> file = cv::dnn::GGUFFile::open(llm_test::sharedTestData(vocab));
        std::shared_ptr<Tokenizer> tok = Tokenizer::fromGGUF(*file);
        std::vector<std::string> pieces((size_t)tok->vocabSize());
        for (int id = 0; id < tok->vocabSize(); id++)
            if (!tok->isSpecial(id))
                pieces[(size_t)id] = tok->tokenToPiece(id, false);
        TokenTrie trie(pieces);
        auto g = parseGbnf(jsonSchemaToGbnf(R"({"type":"object","properties":{"name":{"type":"string"},)"
                                            R"("n":{"type":"integer","minimum":-20,"maximum":300}},"required":["name","n"]})"));
        const std::string text = "{\"name\": \"h\u00e9llo \u4e2d w\", \"n\": -17}";
        GrammarMatcher m(g);
        std::vector<uint8_t> allowed;
        for (size_t pos = 0; pos <= text.size(); pos += 3)
        {
            trie.mask(m, allowed);
            for (int id = 0; id < tok->vocabSize(); id++)
                ASSERT_EQ((bool)allowed[(size_t)id], TokenTrie::allows(m, pieces[(size_t)id]))
                    << "token " << id << " at byte " << pos;
            ASSERT_TRUE(m.accept(text.substr(pos, 3)));
        }
        EXPECT_TRUE(m.canEnd());
    }
}

// Through TextGenerationModel (stories260K): end of generation only where the grammar may end,
// and a grammar with nothing more to add ends generation even when EOS is ignored.
TEST(Grammar, GenerationEndsWhereTheGrammarEnds)
{
    cv::dnn::TextGenerationModel model(llm_test::sharedTestData("stories260K.gguf"));
    cv::dnn::GenerationConfig cfg;
    cfg.grammar = "root ::= \"Tom\" [a-z ]{0,12} \".\"";
    cfg.ignoreEndOfGeneration = true;
    cfg.maxNewTokens = 100;
    for (int seed = 0; seed < 5; seed++)
    {
        cfg.seed = seed;
        cfg.temperature = 1.2f;
        const std::string text = model.generate("Once upon a time", cfg);
        EXPECT_TRUE(matches(parseGbnf(cfg.grammar), text)) << text;
        EXPECT_LT(model.getGeneratedTokenIds().size(), 20u);
    }
    cfg.ignoreEndOfGeneration = false;
    cfg.grammar = "root ::= [0-9]+";  // may end after any digit: EOS competes with digits
    cfg.maxNewTokens = 30;
    const std::string digits = model.generate("Once upon a time", cfg);
    EXPECT_FALSE(digits.empty());
    EXPECT_EQ(digits.find_first_not_of("0123456789"), std::string::npos) << digits;
}

TEST(Grammar, SchemaErrors)
{
    EXPECT_THROW(jsonSchemaToGbnf("{"), cv::Exception);
    EXPECT_THROW(jsonSchemaToGbnf(R"({"type":"strin"})"), cv::Exception);
    EXPECT_THROW(jsonSchemaToGbnf(R"({"$ref":"http://example.com/x"})"), cv::Exception);
    EXPECT_THROW(jsonSchemaToGbnf(R"({"$ref":"#/$defs/missing"})"), cv::Exception);
    // bounds too large for an integer (found by fuzz_grammar: a float outside int64 was UB)
    EXPECT_THROW(jsonSchemaToGbnf(R"({"type":"integer","minimum":-5,"maximum":8.88889e22})"), cv::Exception);
    EXPECT_THROW(jsonSchemaToGbnf(R"({"type":"integer","exclusiveMinimum":9223372036854775807})"), cv::Exception);
    // a $ref cycle without structure is left recursion: refused, not a hang
    EXPECT_THROW(parseGbnf(jsonSchemaToGbnf(R"({"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}})")),
                 cv::Exception);
    // recursive schemas through objects are fine
    auto g = parseGbnf(jsonSchemaToGbnf(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
        "properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}}})"));
    EXPECT_TRUE(matches(g, R"({"v": 1, "next": {"v": 2, "next": null}})"));
    EXPECT_FALSE(matches(g, R"({"v": 1, "next": {"v": 2}})"));
}

// A backslash before a non-ASCII character in a pattern escapes the whole character, as Python's
// re does (it read past the pattern's end before; AddressSanitizer saw it once the pattern was
// longer than 15 bytes).
TEST(Grammar, PatternEscapesWholeUtf8Characters)
{
    auto g = parseGbnf(jsonSchemaToGbnf(R"({"type":"string","pattern":"^aaaaaaaaaaaaaaaaaaaa\\é+$"})"));
    EXPECT_TRUE(matches(g, "\"aaaaaaaaaaaaaaaaaaaa" "\xC3\xA9\xC3\xA9" "\""));
    EXPECT_FALSE(matches(g, "\"aaaaaaaaaaaaaaaaaaaae\""));
    EXPECT_FALSE(matches(g, "\"aaaaaaaaaaaaaaaaaaaa\""));
}

} // namespace
