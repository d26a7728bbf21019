// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "bpe_pre_tokenizer.hpp"
#include "utf8.hpp"

#include <opencv2/core/utils/logger.hpp>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <sstream>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// The patterns come from the models' tokenizer.json files. Case-insensitive contractions
// "(?i:'s|...)" are spelled out ('[sS]') as llama.cpp does, so that Unicode case folding
// ("'ſ") cannot make them differ from it.
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen35 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kSeedCoder =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kBailingMoe =
    R"('(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
const char* const kMiniCpm5Words =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
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
// HF's Punctuation pre-tokenizer: Unicode punctuation plus ASCII's, some of which is \p{S}.
const char* const kPunctuationRuns = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
const char* const kSentenceChunks = " ?[^(\\s|.,!?\u2026\u3002\uFF0C\u3001\u0964\u06D4\u060C)]+";

struct PreTokenizerRule
{
    std::vector<std::string> names;  // tokenizer.ggml.pre values
    std::vector<const char*> regexes;
    bool ignoresMerges;
    bool addsBosByDefault;
};

const std::vector<PreTokenizerRule>& preTokenizerRules()
{
    static const std::vector<PreTokenizerRule> rules = {
        {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling", "exaone4", "gigachat",
          "a.x-4.0", "mellum", "modern-bert", "jina-es", "jina-de", "jina-v1-en", "jina-v2-es",
          "jina-v2-de", "jina-v2-code", "roberta-bpe"},
         {kGpt2}, false, false},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
         {kLlama3}, true, true},
        {{"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}, {kLlama3}, false, false},
        {{"qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan", "megrez", "kormo", "solar-open", "grok-2"},
         {kQwen2}, false, false},
        {{"qwen35"}, {kQwen35}, false, false},
        {{"laguna"}, {"[^\\n]+|[\\n]+", kQwen2}, false, false},
        {{"seed-coder"}, {kSeedCoder}, false, false},
        {{"bailingmoe", "bailingmoe2", "llada-moe"}, {kBailingMoe}, false, false},
        {{"minicpm5"}, {"\\p{N}{1,3}", kMiniCpm5Words}, true, false},
        {{"deepseek-llm"},
         {"[\r\n]", kDeepseekLetters, kDeepseekPunctuation, "\\s+$", kDeepseekCjk, "\\p{N}+"}, false, false},
        {{"deepseek-coder"},
         {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}, false, false},
        {{"deepseek-v3", "hunyuan-dense", "joyai-llm", "hy_v4"},
         {"\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+", kDeepseek3Words}, false, false},
        {{"falcon"}, {kPunctuationRuns, kGpt2, "[0-9][0-9][0-9]"}, false, false},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"},
         {"\\p{N}", kGpt2}, false, false},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {kSentenceChunks}, false, false},
        {{"viking"}, {kSentenceChunks, "\\p{N}"}, false, false},
        {{"gpt-4o", "llama4"}, {kGpt4o}, false, false},
        {{"tekken"}, {kTekken}, true, true},
        // llama.cpp's own "default": punctuation runs, GPT-2 words, digit runs cut in threes.
        {{"default"}, {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
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

} // namespace

class BpePreTokenizer::Regex
{
public:
    explicit Regex(const char* pattern)
    {
        int errorCode = 0;
        PCRE2_SIZE errorOffset = 0;
        // DOLLAR_ENDONLY: "$" means the end of the piece, not "before a final newline".
        code_ = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &errorCode, &errorOffset, nullptr);
        if (!code_)
        {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(errorCode, message, sizeof(message));
            CV_Error_(Error::StsInternal, ("tokenizer: PCRE2 rejects pre-tokenizer pattern '%s' at %zu: %s",
                                           pattern, (size_t)errorOffset, (const char*)message));
        }
        // JIT is an optimisation only: where it is unavailable the interpreter runs.
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
    }
    ~Regex() { pcre2_code_free(code_); }

    /** Finds the first match in subject[start, length): false when there is none. The whole
    subject is visible to look-arounds, nothing outside it (as with llama.cpp's pieces). */
    bool find(std::string_view subject, size_t start, pcre2_match_data* matchData,
              size_t& matchBegin, size_t& matchEnd) const
    {
        const PCRE2_SPTR data = (PCRE2_SPTR)subject.data();
        int rc = pcre2_match(code_, data, subject.size(), start, PCRE2_NO_UTF_CHECK, matchData, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)  // very long runs: the interpreter keeps its stack on the heap
            rc = pcre2_match(code_, data, subject.size(), start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, matchData, nullptr);
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

private:
    pcre2_code* code_ = nullptr;
};

BpePreTokenizer::BpePreTokenizer(const std::string& preName) : name_(preName)
{
    const PreTokenizerRule* rule = findRule(preName);
    if (!rule)
    {
        CV_LOG_WARNING(NULL, "tokenizer: " << (preName.empty() ? std::string("no tokenizer.ggml.pre in the model")
                       : "unknown tokenizer.ggml.pre '" + preName + "'")
                       << "; using GPT-2's pre-tokenizer, which may split digits, punctuation and "
                          "non-Latin text differently from the model's own tokenizer");
        rule = findRule("gpt-2");
        name_ = "gpt-2";
    }
    ignoresMerges_ = rule->ignoresMerges;
    addsBosByDefault_ = rule->addsBosByDefault;
    for (const char* pattern : rule->regexes)
        regexes_.emplace_back(new Regex(pattern));
}

BpePreTokenizer::~BpePreTokenizer() {}

std::string BpePreTokenizer::findName(const std::vector<std::string>& patterns, bool ignoresMerges)
{
    const PreTokenizerRule* found = nullptr;
    for (const PreTokenizerRule& rule : preTokenizerRules())
    {
        if (rule.regexes.size() != patterns.size() ||
            !std::equal(patterns.begin(), patterns.end(), rule.regexes.begin()))
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
    std::vector<std::string_view> pieces;
    if (text.empty())
        return pieces;
    pieces.push_back(text);
    std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> matchData(
        pcre2_match_data_create(1, nullptr), pcre2_match_data_free);
    if (!matchData)
        CV_Error(Error::StsNoMem, "tokenizer: cannot allocate PCRE2 match data");

    std::vector<std::string_view> next;
    for (const std::unique_ptr<Regex>& regex : regexes_)
    {
        next.clear();
        next.reserve(pieces.size() * 2);
        for (std::string_view piece : pieces)
        {
            // Matches become pieces, and so does the text between them.
            size_t position = 0, emitted = 0, begin = 0, end = 0;
            while (position < piece.size() && regex->find(piece, position, matchData.get(), begin, end))
            {
                if (end == begin)  // an empty match: step over one character
                {
                    position = begin + utf8SequenceLength((unsigned char)piece[begin]);
                    continue;
                }
                if (begin > emitted)
                    next.push_back(piece.substr(emitted, begin - emitted));
                next.push_back(piece.substr(begin, end - begin));
                emitted = position = end;
            }
            if (emitted < piece.size())
                next.push_back(piece.substr(emitted));
        }
        pieces.swap(next);
    }
    return pieces;
}

}}} // namespace cv::dnn::llm
