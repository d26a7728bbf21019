// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "bpe_pre_tokenizer.hpp"
#include "../common/unicode_tables.hpp"
#include "../common/utf8.hpp"

#include <opencv2/core/utils/logger.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <utility>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// The patterns come from the models' tokenizer.json files, as llama.cpp spells them (see the
// header). Case-insensitive contractions "(?i:'s|...)" are spelled out ('[sS]') as llama.cpp
// does, so that Unicode case folding ("'ſ") cannot make them differ from it.
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

// GPT-2's pattern with the final "|\s+" of its tokenizer.json; llama.cpp omits it, which splits
// the same (whitespace that nothing matches becomes a word of its own all the same).
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const kLlama3 =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kJais2 =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S))"
    R"(|\s{128}(?!\S)|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1})";
const char* const kQwen2 =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen35 =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSeedCoder =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailingMoe =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kMiniCpm5Words =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kExaoneMoe =
    CONTRACTIONS R"(|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+)";
// GPT-4o's (and Tekken's) words: upper case letters then lower case ones, or the reverse. As
// tokenizer.json files write them (for findName), and as llama.cpp runs them: "upper" is a
// letter that is not a-z, "lower" one that is not A-Z, marks are no letters.
const char* const kGpt4oTokenizerJson =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)" CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)" CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Granite multilingual embeddings: GPT-4o's with marks joining the letters.
const char* const kGraniteMulti =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))*((?=[\p{L}\p{M}])([^A-Z]))+)" CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?((?=[\p{L}\p{M}])([^a-z]))+((?=[\p{L}\p{M}])([^A-Z]))*)" CONTRACTIONS
    R"(?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekkenTokenizerJson =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Youtu: GPT-4o's pattern as tokenizer.json writes it, single digits. (\p{Lu} ... mean \p{L} here.)
const char* const kYoutuWords =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)" CONTRACTIONS
    R"(?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)" CONTRACTIONS
    R"(?|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kYoutuCjk =
    "[\\x{AC00}-\\x{D7A3}\\x{3131}-\\x{318E}]+"
    "|[\\x{FF01}\\x{2026}\\x{201C}\\x{201D}\\x{2018}\\x{2019}\\x{2014}\\x{FF1A}\\x{FF1B}\\x{FF0C}\\x{3001}-\\x{303F}\\x{FE30}-\\x{FE4F}]+"
    "|[\\x{3105}-\\x{312F}]+|[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+";
// Kimi K2: llama.cpp's hand-written splitter for its pattern, whose letters exclude Han
// (\p{L} and not Han) and take no marks; Han is the CJK ideograph blocks below.
#define KIMI_HAN "\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{20000}-\\x{2A6DF}\\x{2A700}-\\x{2B73F}\\x{2B740}-\\x{2B81F}" \
                 "\\x{2B820}-\\x{2CEAF}\\x{2CEB0}-\\x{2EBEF}\\x{F900}-\\x{FAFF}\\x{2F800}-\\x{2FA1F}"
const char* const kKimiK2 =
    "[" KIMI_HAN "]+|[^\\r\\n\\p{L}\\p{N}]?(?:(?![" KIMI_HAN "])\\p{L})+" CONTRACTIONS
    "?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// DeepSeek LLM lists its letters explicitly (Latin, Greek, Cyrillic, ... but not CJK, which
// the CJK pattern after it takes).
const char* const kDeepseekLetters =
    "\\s?[A-Za-z\u00B5\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u01BA\u01BC-\u01BF\u01C4-\u0293\u0295-\u02AF"
    "\u0370-\u0373\u0376\u0377\u037B-\u037D\u037F\u0386\u0388-\u038A\u038C\u038E-\u03A1\u03A3-\u03F5"
    "\u03F7-\u0481\u048A-\u052F\u0531-\u0556\u10A0-\u10C5\u13A0-\u13F5\u13F8-\u13FD\u1C90-\u1CBA"
    "\u1CBD-\u1CBF\u1D00-\u1D2B\u1D6B-\u1D77\u1D79-\u1D9A\u1E00-\u1F15\u1F18-\u1F1D\u1F20-\u1F45"
    "\u1F48-\u1F4D\u1F50-\u1F57\u1F59\u1F5B\u1F5D\u1F5F-\u1F7D\u1F80-\u1FB4\u1FB6-\u1FBC\u1FBE"
    "\u1FC2-\u1FC4\u1FC6-\u1FCC\u1FD0-\u1FD3\u1FD6-\u1FDB\u1FE0-\u1FEC\u1FF2-\u1FF4\u1FF6-\u1FFC"
    "\u2102\u2107\u210A-\u2113\u2115\u2119-\u211D\u2124\u2126\u2128\u212A-\u212D\u212F-\u2134\u2139"
    "\u213C-\u213F\u2145-\u2149\u214E\u2183\u2184\u2C00-\u2C7B\u2C7E-\u2CE4\u2CEB-\u2CEE\u2CF2\u2CF3"
    "\uA640-\uA66D\uA680-\uA69B\uA722-\uA76F\uA771-\uA787\uA78B-\uA78E\uAB70-\uABBF\uFB00-\uFB06"
    "\uFB13-\uFB17\uFF21-\uFF3A\uFF41-\uFF5A\U00010400-\U0001044F\U000104B0-\U000104D3"
    "\U000104D8-\U000104FB\U00010C80-\U00010CB2\U00010CC0-\U00010CF2\U000118A0-\U000118DF"
    "\U0001E900-\U0001E943]+";
const char* const kDeepseekPunctuation = "\\s?[!-/:-~\uFF01-\uFF0F\uFF1A-\uFF5E\u2018-\u201F\u3000-\u3002]+";
const char* const kDeepseekCjk = "[\u4E00-\u9FA5\u0800-\u4E00\uAC00-\uD7FF]+";
const char* const kDeepseek3Words =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// AFMoE's Asian scripts (the first range starts at U+8C48, as llama.cpp writes it).
const char* const kAfmoeScripts =
    "[\\x{4E00}-\\x{9FFF}\\x{3400}-\\x{4DBF}\\x{8C48}-\\x{FAFF}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}\\x{FF65}-\\x{FF9F}"
    "\\x{2F00}-\\x{2FDF}\\x{0E40}-\\x{0E7F}\\x{0E80}-\\x{0EFF}\\x{1780}-\\x{17FF}\\x{1000}-\\x{109F}\\x{AA60}-\\x{AA7F}"
    "\\x{A9E0}-\\x{A9FF}\\x{AC00}-\\x{D7AF}\\x{1100}-\\x{11FF}]+";
// HF's Punctuation pre-tokenizer: Unicode punctuation plus ASCII's, some of which is \p{S}.
const char* const kPunctuationRuns = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
const char* const kSentenceChunks = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";
const char* const kNewlineRuns = "[^\\n]+|[\\n]+";

// Splits that llama.cpp makes with code of its own rather than a regex (named as it names them):
// runs of \p{N} cut in threes after a first group of n % 3 (the text before a run joins that
// first group), and ASCII digit runs cut in threes from the right.
const char* const kAfmoeDigits = "\\p{AFMoE_digits}";
const char* const kTinyAyaDigitsTokenizerJson = "\\d{1,3}(?=(?:\\d{3})*\\b)";
const char* const kDigitGroupsFromTheRight = "(?=(\\d{3})+(?!\\d))";

struct PreTokenizerRule
{
    std::vector<std::string> names;  // tokenizer.ggml.pre values, as llama.cpp knows them
    std::vector<const char*> regexes;  // as llama.cpp runs them
    std::vector<const char*> tokenizerJsonRegexes;  // as tokenizer.json writes them, when they differ
    bool ignoresMerges = false;
    bool addsBosByDefault = false;
    bool byteEncoded = true;
    bool escapesSpaces = false;
    bool keepsNewlineTokens = false;
    bool forcesBos = false;
};

PreTokenizerRule rule(std::vector<std::string> names, std::vector<const char*> regexes, bool ignoresMerges = false,
                      bool addsBosByDefault = false)
{
    PreTokenizerRule r;
    r.names = std::move(names);
    r.regexes = std::move(regexes);
    r.ignoresMerges = ignoresMerges;
    r.addsBosByDefault = addsBosByDefault;
    return r;
}

PreTokenizerRule withTokenizerJson(PreTokenizerRule r, std::vector<const char*> tokenizerJsonRegexes)
{
    r.tokenizerJsonRegexes = std::move(tokenizerJsonRegexes);
    return r;
}

// SentencePiece-style BPE: "▁" for spaces, raw UTF-8 merges, <0xXX> byte tokens.
PreTokenizerRule rawUtf8(PreTokenizerRule r, bool escapesSpaces, bool gemma4)
{
    r.byteEncoded = false;
    r.escapesSpaces = escapesSpaces;
    r.keepsNewlineTokens = gemma4;
    r.forcesBos = gemma4;
    return r;
}

// Every tokenizer.ggml.pre value of llama.cpp (llama-vocab.cpp), grouped by what it does.
const std::vector<PreTokenizerRule>& preTokenizerRules()
{
    static const std::vector<PreTokenizerRule> rules = {
        rule({"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum",
              "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4", "mpt", "olmo", "jais", "trillion",
              "granite-docling"},
             {kGpt2}),
        rule({"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"},
             {kLlama3}, true, true),
        rule({"dbrx", "smaug-bpe", "glm4", "chatglm-bpe"}, {kLlama3}),
        rule({"jais-2"}, {kJais2}),
        rule({"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan", "solar-open", "grok-2"},
             {kQwen2}),
        rule({"qwen35"}, {kQwen35}),
        rule({"laguna"}, {kNewlineRuns, kQwen2}),
        rule({"seed-coder"}, {kSeedCoder}),
        rule({"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailingMoe}),
        rule({"minicpm5"}, {"\\p{N}{1,3}", kMiniCpm5Words}, true),
        rule({"exaone-moe"}, {kExaoneMoe}),
        rule({"deepseek-llm"},
             {"[\r\n]", kDeepseekLetters, kDeepseekPunctuation, "\\s+$", kDeepseekCjk, "\\p{N}+"}),
        rule({"deepseek-coder"}, {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}),
        rule({"deepseek-v3", "hunyuan-dense", "joyai-llm"},
             {"\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+", kDeepseek3Words}),
        rule({"afmoe"}, {kAfmoeDigits, kAfmoeScripts, kDeepseek3Words}),
        rule({"youtu"}, {kYoutuCjk, kYoutuWords}, true),
        rule({"falcon"}, {kPunctuationRuns, kGpt2, "[0-9][0-9][0-9]"}),
        rule({"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
             {"\\p{N}", kGpt2}),
        rule({"poro-chat", "bloom", "gpt3-finnish"}, {kSentenceChunks}),
        rule({"viking"}, {kSentenceChunks, "\\p{N}"}),
        withTokenizerJson(rule({"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"}, {kGpt4o}),
                          {kGpt4oTokenizerJson}),
        rule({"granite-embed-multi-97m"}, {kGraniteMulti}, true),
        withTokenizerJson(rule({"tekken"}, {kTekken}, true, true), {kTekkenTokenizerJson}),
        withTokenizerJson(rule({"tiny_aya", "cohere2moe"}, {kAfmoeDigits, kGpt4oTokenizerJson}),
                          {kTinyAyaDigitsTokenizerJson, kGpt4oTokenizerJson}),
        rule({"kimi-k2"}, {kKimiK2}),
        rule({"superbpe"}, {"\\p{N}+", kDigitGroupsFromTheRight}),
        rule({"chameleon"},
             {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
              "[\\p{P}!-/:-@\\[-`{-~]", kGpt2},
             false, true),
        rawUtf8(rule({"gemma4", "granite-embed-multi-311m"}, {kNewlineRuns}), true, true),
        rawUtf8(rule({"sarvam-moe"}, {kNewlineRuns}), true, false),
        // llama.cpp's own "default", also for a missing tokenizer.ggml.pre: punctuation runs,
        // GPT-2 words, digit runs cut in threes.
        rule({"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}),
    };
    return rules;
}

const PreTokenizerRule* findRule(const std::string& name)
{
    for (const PreTokenizerRule& rule : preTokenizerRules())
    {
        for (const std::string& n : rule.names)
        {
            if (n == name)
                return &rule;
        }
    }
    return nullptr;
}

// \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm}, \p{Lo} -> \p{L}: llama.cpp knows one letter category.
std::string oneLetterCategory(std::string pattern)
{
    for (const char* sub : {"\\p{Lu}", "\\p{Ll}", "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"})
    {
        for (size_t pos; (pos = pattern.find(sub)) != std::string::npos;)
            pattern.replace(pos, 6, "\\p{L}");
    }
    return pattern;
}

// The code point of the valid 2- or 3-byte UTF-8 sequence at text[pos].
uint32_t codePointAt(std::string_view text, size_t pos, size_t length)
{
    const unsigned char* b = (const unsigned char*)text.data() + pos;
    return length == 2 ? ((uint32_t)(b[0] & 0x1F) << 6) | (b[1] & 0x3F)
                       : ((uint32_t)(b[0] & 0x0F) << 12) | ((uint32_t)(b[1] & 0x3F) << 6) | (b[2] & 0x3F);
}

// A piece of the text: [begin, end) byte offsets.
typedef std::pair<size_t, size_t> Span;

} // namespace

class BpePreTokenizer::Splitter
{
public:
    explicit Splitter(const char* pattern)
    {
        if (std::string(pattern) == kAfmoeDigits)
            kind_ = AFMOE_DIGITS;
        else if (std::string(pattern) == kDigitGroupsFromTheRight)
            kind_ = DIGIT_GROUPS_FROM_THE_RIGHT;
        // The AFMoE split finds its digit runs with this one.
        const std::string source = kind_ == AFMOE_DIGITS ? std::string("\\p{N}+")
                                 : kind_ == DIGIT_GROUPS_FROM_THE_RIGHT ? std::string("[0-9]+")
                                 : oneLetterCategory(pattern);
        int errorCode = 0;
        PCRE2_SIZE errorOffset = 0;
        // No PCRE2_UCP: \s, \d, \w, \b are ASCII, as in llama.cpp (which has turned non-ASCII
        // whitespace into U+000B first, see split()). \p{...} still sees all of Unicode.
        // DOLLAR_ENDONLY: "$" means the end of the piece, not "before a final newline".
        code_ = pcre2_compile((PCRE2_SPTR)source.c_str(), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_DOLLAR_ENDONLY,
                              &errorCode, &errorOffset, nullptr);
        if (!code_)
        {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(errorCode, message, sizeof(message));
            CV_Error_(Error::StsInternal, ("tokenizer: PCRE2 rejects pre-tokenizer pattern '%s' at %zu: %s",
                                           source.c_str(), (size_t)errorOffset, (const char*)message));
        }
        // JIT is an optimisation only: where it is unavailable the interpreter runs.
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
    }
    ~Splitter() { pcre2_code_free(code_); }

    //! Appends the pieces of text[piece] (absolute offsets) to out.
    void split(std::string_view text, Span piece, pcre2_match_data* matchData, std::vector<Span>& out) const
    {
        const std::string_view subject = text.substr(piece.first, piece.second - piece.first);
        const size_t base = piece.first;
        std::vector<size_t> cuts;
        if (kind_ == AFMOE_DIGITS)
            afmoeCuts(subject, matchData, cuts);
        else if (kind_ == DIGIT_GROUPS_FROM_THE_RIGHT)
            digitGroupCuts(subject, matchData, cuts);
        else
            regexCuts(subject, matchData, cuts);
        size_t previous = 0;
        for (size_t cut : cuts)
        {
            if (cut > previous)
                out.emplace_back(base + previous, base + cut);
            previous = std::max(previous, cut);
        }
        if (previous < subject.size())
            out.emplace_back(base + previous, base + subject.size());
    }

private:
    enum Kind { REGEX, AFMOE_DIGITS, DIGIT_GROUPS_FROM_THE_RIGHT };

    /** Finds the first match in subject[start, length): false when there is none. The whole
    subject is visible to look-arounds, nothing outside it (as with llama.cpp's pieces). */
    bool find(std::string_view subject, size_t start, uint32_t options, pcre2_match_data* matchData,
              size_t& matchBegin, size_t& matchEnd) const
    {
        const PCRE2_SPTR data = (PCRE2_SPTR)subject.data();
        options |= PCRE2_NO_UTF_CHECK;
        int rc = pcre2_match(code_, data, subject.size(), start, options, matchData, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long runs: the interpreter keeps its stack on the heap
            rc = pcre2_match(code_, data, subject.size(), start, options | PCRE2_NO_JIT, matchData, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH)
            return false;
        if (rc < 0)
        {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof(message));
            CV_Error_(Error::StsError, ("tokenizer: pre-tokenizer regex failed on a %zu-byte piece: %s",
                                        subject.size(), (const char*)message));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(matchData);
        matchBegin = ovector[0];
        matchEnd = ovector[1];
        return true;
    }

    // Each match and the text between matches become pieces; an empty match cuts the text
    // where it is. The search goes on as std::regex_iterator's does: after an empty match, a
    // non-empty one at the same place, else the next match one character further.
    void regexCuts(std::string_view subject, pcre2_match_data* matchData, std::vector<size_t>& cuts) const
    {
        size_t position = 0, begin = 0, end = 0;
        bool afterEmptyMatch = false;
        while (position <= subject.size())
        {
            bool found;
            if (afterEmptyMatch)
            {
                found = find(subject, position, PCRE2_ANCHORED | PCRE2_NOTEMPTY_ATSTART, matchData, begin, end);
                if (!found)
                {
                    if (position >= subject.size())
                        break;
                    position += std::min(subject.size() - position,
                                         (size_t)utf8SequenceLength((unsigned char)subject[position]));
                    found = find(subject, position, 0, matchData, begin, end);
                }
            }
            else
            {
                found = find(subject, position, 0, matchData, begin, end);
            }
            if (!found)
                break;
            cuts.push_back(begin);
            cuts.push_back(end);
            position = end;
            afterEmptyMatch = end == begin;
        }
    }

    // llama.cpp's AFMoE digits: each run of n \p{N} characters is cut after its first n % 3
    // characters (when not 0) and then every 3; the text before a run stays joined to the
    // run's first group.
    void afmoeCuts(std::string_view subject, pcre2_match_data* matchData, std::vector<size_t>& cuts) const
    {
        size_t position = 0, begin = 0, end = 0;
        while (position < subject.size() && find(subject, position, 0, matchData, begin, end))
        {
            std::vector<size_t> starts;  // each character of the run
            for (size_t pos = begin; pos < end; pos += utf8SequenceLength((unsigned char)subject[pos]))
                starts.push_back(pos);
            for (size_t i = starts.size() % 3 ? starts.size() % 3 : 3; i < starts.size(); i += 3)
                cuts.push_back(starts[i]);
            cuts.push_back(end);
            position = end;
        }
    }

    // (?=(\d{3})+(?!\d)), which only ever matches empty: a cut before every position whose
    // ASCII digit run to the right has a length that is a multiple of 3.
    void digitGroupCuts(std::string_view subject, pcre2_match_data* matchData, std::vector<size_t>& cuts) const
    {
        size_t position = 0, begin = 0, end = 0;
        while (position < subject.size() && find(subject, position, 0, matchData, begin, end))
        {
            for (size_t pos = begin; pos + 3 <= end; pos++)
            {
                if ((end - pos) % 3 == 0)
                    cuts.push_back(pos);
            }
            position = end;
        }
    }

    Kind kind_ = REGEX;
    pcre2_code* code_ = nullptr;
};

BpePreTokenizer::BpePreTokenizer(const std::string& preName) : name_(preName)
{
    if (preName.empty())
    {
        CV_LOG_WARNING(NULL, "tokenizer: the model has no tokenizer.ggml.pre; using llama.cpp's 'default' "
                             "pre-tokenizer, as llama.cpp does (which may split digits, punctuation and "
                             "non-Latin text differently from the model's own tokenizer)");
        name_ = "default";
    }
    if (name_ == "whitespace")
        CV_Error(Error::StsNotImplemented,
                 "tokenizer: tokenizer.ggml.pre = 'whitespace' (jina-embeddings-v2-base-zh's, raw UTF-8 merges of "
                 "whitespace-separated words) is not supported");
    const PreTokenizerRule* rule = findRule(name_);
    if (!rule)
        CV_Error_(Error::StsNotImplemented,
                  ("tokenizer: tokenizer.ggml.pre = '%s' is not a pre-tokenizer that llama.cpp knows; known are "
                   "the names of llama.cpp's llama-vocab.cpp (e.g. 'gpt-2', 'llama-bpe', 'qwen2', 'default')",
                   preName.c_str()));
    ignoresMerges_ = rule->ignoresMerges;
    addsBosByDefault_ = rule->addsBosByDefault;
    forcesBos_ = rule->forcesBos;
    byteEncoded_ = rule->byteEncoded;
    escapesSpaces_ = rule->escapesSpaces;
    keepsNewlineTokens_ = rule->keepsNewlineTokens;
    for (const char* pattern : rule->regexes)
        splitters_.emplace_back(new Splitter(pattern));
}

BpePreTokenizer::~BpePreTokenizer() {}

std::vector<std::string> BpePreTokenizer::knownNames()
{
    std::vector<std::string> names;
    for (const PreTokenizerRule& rule : preTokenizerRules())
        names.insert(names.end(), rule.names.begin(), rule.names.end());
    return names;
}

std::string BpePreTokenizer::findName(const std::vector<std::string>& patterns, bool ignoresMerges)
{
    const PreTokenizerRule* found = nullptr;
    for (const PreTokenizerRule& rule : preTokenizerRules())
    {
        if (!rule.byteEncoded)
            continue;  // tokenizer.json files with a ByteLevel step only
        const std::vector<const char*>& regexes = rule.tokenizerJsonRegexes.empty() ? rule.regexes
                                                                                    : rule.tokenizerJsonRegexes;
        if (regexes.size() != patterns.size() || !std::equal(patterns.begin(), patterns.end(), regexes.begin()))
            continue;
        if (!found || (found->ignoresMerges != ignoresMerges && rule.ignoresMerges == ignoresMerges))
            found = &rule;
    }
    return found ? found->names.front() : std::string();
}

const char* BpePreTokenizer::gpt2Pattern() { return kGpt2; }
const char* BpePreTokenizer::punctuationPattern() { return kPunctuationRuns; }

std::vector<std::string_view> BpePreTokenizer::split(std::string_view text) const
{
    std::vector<std::string_view> words;
    if (text.empty())
        return words;

    // llama.cpp matches every non-ASCII whitespace character as U+000B (so that std::regex's
    // \s sees it): the patterns run on such a copy (made only when needed), whose offsets map
    // back to the text.
    std::string replaced;
    std::vector<size_t> originalOffset;  // of each byte of the copy, and of its end
    bool replacing = false;
    for (size_t pos = 0; pos < text.size();)
    {
        const size_t start = pos;
        const size_t length = std::min(text.size() - pos, (size_t)utf8SequenceLength((unsigned char)text[pos]));
        pos += length;
        if ((length == 2 || length == 3) && unicode::isWhitespace(codePointAt(text, start, length)))
        {
            if (!replacing)
            {
                replacing = true;
                replaced.reserve(text.size());
                originalOffset.reserve(text.size() + 1);
                replaced.assign(text.data(), start);
                for (size_t i = 0; i < start; i++)
                    originalOffset.push_back(i);
            }
            replaced += '\x0B';
            originalOffset.push_back(start);
        }
        else if (replacing)
        {
            replaced.append(text.data() + start, length);
            for (size_t i = start; i < pos; i++)
                originalOffset.push_back(i);
        }
    }
    if (replacing)
        originalOffset.push_back(text.size());

    const std::string_view work = replacing ? std::string_view(replaced) : text;
    std::vector<Span> pieces(1, Span(0, work.size())), next;
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> matchData(
        pcre2_match_data_create(1, nullptr), pcre2_match_data_free);
    if (!matchData)
        CV_Error(Error::StsNoMem, "tokenizer: cannot allocate PCRE2 match data");
    for (const std::unique_ptr<Splitter>& splitter : splitters_)
    {
        next.clear();
        next.reserve(pieces.size() * 2);
        for (const Span& piece : pieces)
            splitter->split(work, piece, matchData.get(), next);
        pieces.swap(next);
    }
    words.reserve(pieces.size());
    for (Span piece : pieces)
    {
        if (replacing)
            piece = Span(originalOffset[piece.first], originalOffset[piece.second]);
        words.push_back(text.substr(piece.first, piece.second - piece.first));
    }
    return words;
}

}}} // namespace cv::dnn::llm
