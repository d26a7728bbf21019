// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "hf_tokenizer_model.hpp"
#include "bpe_pre_tokenizer.hpp"
#include "../common/utf8.hpp"
#include "vocabulary.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <unordered_set>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Real vocabularies have up to a few hundred thousand tokens; ids beyond this are rejected
// before any table of that size is allocated.
const int kMaxVocabularySize = 1 << 22;
const char kSpaceEscape[] = "\xE2\x96\x81";  // U+2581 "▁", SentencePiece's visible space

// Hugging Face spells the case-insensitive English contractions with an inline flag; the
// pre-tokenizer table spells them out (bpe_pre_tokenizer.cpp says why).
const char kContractionsInlineFlag[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
const char kContractionsSpelledOut[] = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";

enum class ModelKind
{
    SentencePiece,  //!< "▁" escaping + byte fallback: tokenizer.ggml.model "llama"
    ByteLevel,      //!< ByteLevel pre-tokenizer: "gpt2"
    Characters      //!< neither: "llama" without whitespace escaping
};

//! What the normalizer and pre_tokenizer ask for, as far as our models can express it.
struct TextPreparation
{
    bool escapesSpaces = false;  //!< ' ' -> "▁" (Replace normalizer or Metaspace)
    bool prependsSpace = false;  //!< a "▁" before the text (Prepend normalizer or Metaspace)
    bool byteLevel = false;
    std::vector<std::string> patterns;  //!< the regexes that split the text, in order
    std::string firstStepField;         //!< where the splitting is described, for messages
};

class TokenizerJsonConverter
{
public:
    TokenizerJsonConverter(const JsonDocument& doc, MetadataOnlyGGUF& out) : doc_(doc), out_(out) {}

    HuggingFaceTokenTable run();

private:
    void checkModelType(const Json& model);
    void readNormalizer(const Json& normalizer, const std::string& field, TextPreparation& preparation) const;
    void readPreTokenizer(const Json& step, const std::string& field, TextPreparation& preparation) const;
    ModelKind chooseKind(const TextPreparation& preparation, bool byteFallback) const;
    std::string findPreTokenizer(const TextPreparation& preparation, bool ignoresMerges) const;

    void readVocabulary(const Json& model);
    void readAddedTokens();
    void buildTokenTable(ModelKind kind, bool byteFallback, const Json& model);
    //! (left id, right id, result id) per rank.
    std::vector<std::array<int, 3>> readMerges(const Json& model) const;
    void writeScores(const std::vector<std::array<int, 3>>& merges);
    void writeMerges(const std::vector<std::array<int, 3>>& merges);
    void warnWhereScoresDifferFromRanks(const std::vector<std::array<int, 3>>& merges) const;

    struct AddedToken
    {
        int id;
        std::string content;
        bool special, lstrip, rstrip;
    };

    const JsonDocument& doc_;
    MetadataOnlyGGUF& out_;
    HuggingFaceTokenTable table_;
    std::vector<std::pair<int, std::string>> vocabEntries_;  // model.vocab: (id, text)
    std::vector<AddedToken> addedTokens_;
    std::vector<int> types_;
    int vocabSize_ = 0;
};

std::string describeNormalizerType(const std::string& type)
{
    return "type '" + type + "' is not supported (supported: Prepend \"\xE2\x96\x81\", Replace ' ' -> \"\xE2\x96\x81\", NFC, "
           "Sequence of these)";
}

void TokenizerJsonConverter::checkModelType(const Json& model)
{
    const std::string field = "model";
    doc_.asObject(model, field);
    // Files written before "type" existed are told apart by their fields, as HF does.
    const std::string type = doc_.optionalString(model, field, "type",
                                                 doc_.find(model, field, "merges") ? "BPE" : std::string());
    if (type != "BPE")
        doc_.fail("model.type", "'" + (type.empty() ? std::string("(missing)") : type) +
                  "' is not supported (supported: BPE; WordPiece, Unigram and WordLevel models are not)",
                  Error::StsNotImplemented);
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    {
        if (!doc_.optionalString(model, field, key).empty())
            doc_.fail(jsonMember(field, key), "is not supported by the BPE models here (it must be null or \"\")",
                      Error::StsNotImplemented);
    }
}

void TokenizerJsonConverter::readNormalizer(const Json& normalizer, const std::string& field,
                                            TextPreparation& preparation) const
{
    const std::string type = doc_.asString(doc_.get(normalizer, field, "type"), jsonMember(field, "type"));
    if (type == "Sequence")
    {
        const std::string listField = jsonMember(field, "normalizers");
        const Json& steps = doc_.asArray(doc_.get(normalizer, field, "normalizers"), listField);
        for (size_t i = 0; i < steps.size(); i++)
            readNormalizer(steps[i], jsonElement(listField, i), preparation);
    }
    else if (type == "Prepend")
    {
        if (doc_.optionalString(normalizer, field, "prepend") != kSpaceEscape)
            doc_.fail(jsonMember(field, "prepend"), "must be \"\xE2\x96\x81\" (other prefixes are not supported)",
                      Error::StsNotImplemented);
        preparation.prependsSpace = true;
    }
    else if (type == "Replace")
    {
        const Json& pattern = doc_.get(normalizer, field, "pattern");
        const std::string from = doc_.optionalString(pattern, jsonMember(field, "pattern"), "String");
        if (from != " " || doc_.optionalString(normalizer, field, "content") != kSpaceEscape)
            doc_.fail(field, "replaces something else than ' ' by \"\xE2\x96\x81\", which is not supported",
                      Error::StsNotImplemented);
        preparation.escapesSpaces = true;
    }
    else if (type == "NFC")
    {
        // llama.cpp does not normalize either; text already in NFC (most text) is unaffected.
        CV_LOG_INFO(NULL, doc_.path() << ": " << field << " (NFC) is not applied, as in llama.cpp");
    }
    else
    {
        doc_.fail(jsonMember(field, "type"), describeNormalizerType(type), Error::StsNotImplemented);
    }
}

void TokenizerJsonConverter::readPreTokenizer(const Json& step, const std::string& field,
                                              TextPreparation& preparation) const
{
    const std::string typeField = jsonMember(field, "type");
    const std::string type = doc_.asString(doc_.get(step, field, "type"), typeField);
    if (preparation.firstStepField.empty() && type != "Sequence")
        preparation.firstStepField = field;
    if (type == "Sequence")
    {
        const std::string listField = jsonMember(field, "pretokenizers");
        const Json& steps = doc_.asArray(doc_.get(step, field, "pretokenizers"), listField);
        for (size_t i = 0; i < steps.size(); i++)
            readPreTokenizer(steps[i], jsonElement(listField, i), preparation);
    }
    else if (type == "ByteLevel")
    {
        // HF's defaults when a field is absent: add_prefix_space and use_regex are true.
        if (doc_.optionalBool(step, field, "add_prefix_space", true))
            doc_.fail(jsonMember(field, "add_prefix_space"), "= true (a space added before the text) is not supported",
                      Error::StsNotImplemented);
        preparation.byteLevel = true;
        if (doc_.optionalBool(step, field, "use_regex", true))
            preparation.patterns.push_back(BpePreTokenizer::gpt2Pattern());
    }
    else if (type == "Split")
    {
        const Json& pattern = doc_.get(step, field, "pattern");
        const std::string patternField = jsonMember(field, "pattern");
        // transformers' GemmaTokenizer writes Split(" ", MergedWithPrevious) after a normalizer
        // that has already replaced every space by "\xE2\x96\x81": it splits nothing.
        if (preparation.escapesSpaces && doc_.optionalString(pattern, patternField, "String") == " " &&
            !doc_.optionalBool(step, field, "invert", false))
            return;
        const Json* regex = doc_.find(pattern, patternField, "Regex");
        if (!regex)
            doc_.fail(patternField, "must be a {\"Regex\": ...} (string patterns are not supported)", Error::StsNotImplemented);
        const std::string behavior = doc_.optionalString(step, field, "behavior");
        if (behavior != "Isolated" || doc_.optionalBool(step, field, "invert", false))
            doc_.fail(field, "splits with behavior '" + behavior + "'" + " (or invert); only Isolated without invert is supported",
                      Error::StsNotImplemented);
        std::string text = doc_.asString(*regex, jsonMember(patternField, "Regex"));
        for (size_t pos; (pos = text.find(kContractionsInlineFlag)) != std::string::npos;)
            text.replace(pos, sizeof(kContractionsInlineFlag) - 1, kContractionsSpelledOut);
        preparation.patterns.push_back(text);
    }
    else if (type == "Digits")
    {
        preparation.patterns.push_back(doc_.optionalBool(step, field, "individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    }
    else if (type == "Punctuation")
    {
        const std::string behavior = doc_.optionalString(step, field, "behavior", "Isolated");
        if (behavior != "Contiguous")
            doc_.fail(jsonMember(field, "behavior"), "'" + behavior + "' is not supported (Contiguous is)",
                      Error::StsNotImplemented);
        preparation.patterns.push_back(BpePreTokenizer::punctuationPattern());
    }
    else if (type == "Metaspace")
    {
        if (doc_.optionalString(step, field, "replacement", kSpaceEscape) != kSpaceEscape)
            doc_.fail(jsonMember(field, "replacement"), "must be \"\xE2\x96\x81\"", Error::StsNotImplemented);
        // Newer files say prepend_scheme, older ones add_prefix_space.
        std::string scheme = doc_.optionalString(step, field, "prepend_scheme");
        if (scheme.empty())
            scheme = doc_.optionalBool(step, field, "add_prefix_space", true) ? "always" : "never";
        if (scheme != "always" && scheme != "first" && scheme != "never")
            doc_.fail(jsonMember(field, "prepend_scheme"), "'" + scheme + "' is not always, first or never");
        if (scheme == "first")
            CV_LOG_INFO(NULL, doc_.path() << ": " << field << " prepends \"\xE2\x96\x81\" to the first piece only; "
                        "here it also goes after each special token, as in llama.cpp");
        preparation.escapesSpaces = true;
        preparation.prependsSpace = scheme != "never";
    }
    else
    {
        doc_.fail(typeField, "'" + type + "' is not supported (supported: ByteLevel, Split, Digits, Punctuation, "
                  "Metaspace, Sequence of these)", Error::StsNotImplemented);
    }
}

ModelKind TokenizerJsonConverter::chooseKind(const TextPreparation& preparation, bool byteFallback) const
{
    if (preparation.byteLevel)
    {
        if (preparation.escapesSpaces || preparation.prependsSpace)
            doc_.fail("normalizer / pre_tokenizer", "combine byte-level BPE with \"\xE2\x96\x81\" escaping, "
                      "which is not supported", Error::StsNotImplemented);
        return ModelKind::ByteLevel;
    }
    if (!preparation.patterns.empty())
        doc_.fail(preparation.firstStepField, "splits the text without a ByteLevel step, which is not supported",
                  Error::StsNotImplemented);
    if (preparation.escapesSpaces)
        return ModelKind::SentencePiece;
    if (preparation.prependsSpace)
        doc_.fail("normalizer", "prepends \"\xE2\x96\x81\" but does not replace spaces by it, which is not supported",
                  Error::StsNotImplemented);
    if (byteFallback)
        CV_LOG_INFO(NULL, doc_.path() << ": BPE with byte_fallback but no \"\xE2\x96\x81\" escaping");
    return ModelKind::Characters;
}

std::string TokenizerJsonConverter::findPreTokenizer(const TextPreparation& preparation, bool ignoresMerges) const
{
    std::string name = BpePreTokenizer::findName(preparation.patterns, ignoresMerges);
    if (!name.empty())
        return name;
    // Falcon's file has Digits (runs) after the GPT-2 split, which llama.cpp's pattern list
    // leaves out: it only parts a space from the digits after it, and Falcon's vocabulary has
    // no token joining the two (llama.cpp's test vectors, made with HF, pass without it).
    std::vector<std::string> patterns = preparation.patterns;
    for (size_t i = 1; i < patterns.size(); i++)
    {
        if (patterns[i] == "\\p{N}+" && patterns[i - 1] == BpePreTokenizer::gpt2Pattern())
        {
            patterns.erase(patterns.begin() + i);
            name = BpePreTokenizer::findName(patterns, ignoresMerges);
            if (name == "falcon")
                return name;
            break;
        }
    }
    std::string listed;
    for (const std::string& p : preparation.patterns)
        listed += (listed.empty() ? "'" : ", '") + p + "'";
    doc_.fail(preparation.firstStepField.empty() ? std::string("pre_tokenizer") : preparation.firstStepField,
              "splits the text with regexes that no supported pre-tokenizer uses (GPT-2, Llama 3, Qwen2, "
              "StarCoder, Falcon, DeepSeek, ...): [" + listed + "]", Error::StsNotImplemented);
}

void TokenizerJsonConverter::readVocabulary(const Json& model)
{
    const std::string field = "model.vocab";
    const Json& vocab = doc_.asObject(doc_.get(model, "model", "vocab"), field);
    vocabEntries_.reserve(vocab.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it)
    {
        const std::string entryField = field + "['" + it.key() + "']";
        const int id = (int)doc_.asInteger(it.value(), entryField, 0, kMaxVocabularySize - 1);
        vocabEntries_.emplace_back(id, it.key());
        table_.vocabIds.emplace(it.key(), id);
        vocabSize_ = std::max(vocabSize_, id + 1);
    }
    if (vocabEntries_.empty())
        doc_.fail(field, "is empty");
}

void TokenizerJsonConverter::readAddedTokens()
{
    const std::string field = "added_tokens";
    const Json* list = doc_.find(doc_.root(), "", "added_tokens");
    if (!list)
        return;
    doc_.asArray(*list, field);
    for (size_t i = 0; i < list->size(); i++)
    {
        const std::string entryField = jsonElement(field, i);
        const Json& entry = (*list)[i];
        AddedToken token;
        token.id = (int)doc_.asInteger(doc_.get(entry, entryField, "id"), jsonMember(entryField, "id"), 0, kMaxVocabularySize - 1);
        token.content = doc_.asString(doc_.get(entry, entryField, "content"), jsonMember(entryField, "content"));
        if (token.content.empty())
            doc_.fail(jsonMember(entryField, "content"), "is empty");
        token.special = doc_.optionalBool(entry, entryField, "special", false);
        token.lstrip = doc_.optionalBool(entry, entryField, "lstrip", false);
        token.rstrip = doc_.optionalBool(entry, entryField, "rstrip", false);
        const auto inserted = table_.addedTokenIds.emplace(token.content, token.id);
        if (!inserted.second && inserted.first->second != token.id)
            doc_.fail(entryField, format("repeats '%s' with another id (%d and %d)", token.content.c_str(),
                                          inserted.first->second, token.id));
        addedTokens_.push_back(token);
        vocabSize_ = std::max(vocabSize_, token.id + 1);
    }
}

void TokenizerJsonConverter::buildTokenTable(ModelKind kind, bool byteFallback, const Json& model)
{
    // Ids must be (nearly) dense: holes become unused "[PAD<id>]" tokens, as in llama.cpp's
    // converter, but a handful of huge ids must not allocate millions of them.
    const size_t named = vocabEntries_.size() + addedTokens_.size();
    if ((size_t)vocabSize_ > 2 * named + 1024)
        doc_.fail("model.vocab / added_tokens", format("use ids up to %d for only %zu tokens", vocabSize_ - 1, named),
                  Error::StsOutOfRange);

    std::vector<std::string>& texts = table_.texts;
    texts.assign(vocabSize_, std::string());
    types_.assign(vocabSize_, TOKEN_TYPE_UNUSED);
    std::vector<bool> used(vocabSize_, false);
    for (const auto& entry : vocabEntries_)
    {
        const int id = entry.first;
        if (used[id])
            doc_.fail("model.vocab", format("gives id %d to both '%s' and '%s'", id, texts[id].c_str(), entry.second.c_str()));
        used[id] = true;
        texts[id] = entry.second;
        const bool isByte = entry.second.size() == 6 && entry.second.compare(0, 3, "<0x") == 0 && entry.second[5] == '>';
        types_[id] = (kind == ModelKind::SentencePiece && byteFallback && isByte) ? TOKEN_TYPE_BYTE : TOKEN_TYPE_NORMAL;
    }

    std::vector<double> lstripIds, rstripIds;
    std::vector<bool> added(vocabSize_, false);
    for (const AddedToken& token : addedTokens_)
    {
        if (added[token.id] && texts[token.id] != token.content)
            doc_.fail("added_tokens", format("gives id %d to both '%s' and '%s'", token.id, texts[token.id].c_str(),
                                            token.content.c_str()));
        if (used[token.id] && !added[token.id] && texts[token.id] != token.content)
            CV_LOG_INFO(NULL, doc_.path() << ": added token " << token.id << " '" << token.content
                           << "' replaces '" << texts[token.id] << "' of model.vocab");
        added[token.id] = used[token.id] = true;
        std::string text = token.content;
        if (token.special)
        {
            types_[token.id] = TOKEN_TYPE_CONTROL;
        }
        else
        {
            types_[token.id] = TOKEN_TYPE_USER_DEFINED;
            // User-defined tokens are matched in the raw text (llama.cpp's converter does the same).
            if (kind == ModelKind::SentencePiece)
            {
                for (size_t pos; (pos = text.find(kSpaceEscape)) != std::string::npos;)
                    text.replace(pos, sizeof(kSpaceEscape) - 1, " ");
            }
        }
        texts[token.id] = text;
        if (token.lstrip)
            lstripIds.push_back(token.id);
        if (token.rstrip)
            rstripIds.push_back(token.id);
    }
    for (int id = 0; id < vocabSize_; id++)
    {
        if (!used[id])
            texts[id] = "[PAD" + std::to_string(id) + "]";
    }

    const std::string unknown = doc_.optionalString(model, "model", "unk_token");
    if (!unknown.empty())
    {
        table_.unknownId = table_.find(unknown);
        if (table_.unknownId < 0)
            doc_.fail("model.unk_token", "'" + unknown + "' is not a token of model.vocab or added_tokens");
        types_[table_.unknownId] = TOKEN_TYPE_UNKNOWN;
    }
    if (!lstripIds.empty())
        out_.setNumberArray("tokenizer.hf.lstrip_token_ids", lstripIds, "int32");
    if (!rstripIds.empty())
        out_.setNumberArray("tokenizer.hf.rstrip_token_ids", rstripIds, "int32");
}

std::vector<std::array<int, 3>> TokenizerJsonConverter::readMerges(const Json& model) const
{
    std::vector<std::array<int, 3>> merges;
    const Json* list = doc_.find(model, "model", "merges");
    if (!list)
        return merges;
    const std::string field = "model.merges";
    doc_.asArray(*list, field);
    merges.reserve(list->size());
    for (size_t rank = 0; rank < list->size(); rank++)
    {
        const std::string entryField = jsonElement(field, rank);
        const Json& entry = (*list)[rank];
        std::string left, right;
        if (entry.is_string())  // "left right" (older files)
        {
            const std::string& text = entry.get_ref<const std::string&>();
            const size_t space = text.size() > 1 ? text.find(' ', 1) : std::string::npos;
            if (space == std::string::npos)
                doc_.fail(entryField, "= '" + text + "' is not two tokens separated by a space");
            left = text.substr(0, space);
            right = text.substr(space + 1);
        }
        else if (entry.is_array() && entry.size() == 2)  // ["left", "right"]
        {
            left = doc_.asString(entry[0], jsonElement(entryField, 0));
            right = doc_.asString(entry[1], jsonElement(entryField, 1));
        }
        else
        {
            doc_.fail(entryField, format("must be \"left right\" or [\"left\", \"right\"], not %s", entry.type_name()));
        }
        const auto findInVocab = [&](const std::string& text) {
            const auto it = table_.vocabIds.find(text);
            return it == table_.vocabIds.end() ? -1 : it->second;
        };
        std::array<int, 3> ids = {findInVocab(left), findInVocab(right), findInVocab(left + right)};
        for (int k = 0; k < 3; k++)
        {
            if (ids[k] < 0)
                doc_.fail(entryField, "refers to '" + (k == 0 ? left : k == 1 ? right : left + right) +
                          "', which is not in model.vocab");
        }
        merges.push_back(ids);
    }
    return merges;
}

// SentencePiece-style merging takes the pair whose result has the best score; HF takes the
// merge with the lowest rank. A token's score is therefore minus the rank of the first merge
// that makes it (what Llama's own scores are); tokens no merge makes never compete as results.
void TokenizerJsonConverter::writeScores(const std::vector<std::array<int, 3>>& merges)
{
    const double unranked = -(double)merges.size() - 1;
    std::vector<double> scores(vocabSize_, 0.0);
    for (int id = 0; id < vocabSize_; id++)
    {
        if (types_[id] == TOKEN_TYPE_NORMAL)
            scores[id] = unranked - id;
    }
    std::vector<bool> ranked(vocabSize_, false);
    for (size_t rank = 0; rank < merges.size(); rank++)
    {
        const int result = merges[rank][2];
        if (!ranked[result])
            scores[result] = -(double)rank - 1;
        ranked[result] = true;
    }
    out_.setNumberArray("tokenizer.ggml.scores", std::move(scores), "float32");
    warnWhereScoresDifferFromRanks(merges);
}

// The scores reproduce the ranks when every split of a token into two tokens is a merge and
// the merges of one result are adjacent in rank (true of tokenizers converted from
// SentencePiece, e.g. Llama 2's, Mistral's, Phi-3's). Otherwise results may differ from HF.
void TokenizerJsonConverter::warnWhereScoresDifferFromRanks(const std::vector<std::array<int, 3>>& merges) const
{
    std::unordered_set<uint64_t> mergePairs;
    mergePairs.reserve(merges.size() * 2);
    for (const auto& m : merges)
        mergePairs.insert(((uint64_t)(uint32_t)m[0] << 32) | (uint32_t)m[1]);
    const std::vector<std::string>& texts = table_.texts;
    size_t missing = 0;
    std::string example;
    for (int id = 0; id < vocabSize_; id++)
    {
        if (types_[id] != TOKEN_TYPE_NORMAL && types_[id] != TOKEN_TYPE_CONTROL)
            continue;
        const std::string& text = texts[id];
        for (size_t split = 0; split < text.size();)
        {
            decodeUtf8(text, split);
            if (split >= text.size())
                break;
            const auto left = table_.vocabIds.find(text.substr(0, split));
            const auto right = table_.vocabIds.find(text.substr(split));
            if (left == table_.vocabIds.end() || right == table_.vocabIds.end())
                continue;
            if (!mergePairs.count(((uint64_t)(uint32_t)left->second << 32) | (uint32_t)right->second))
            {
                if (missing++ == 0)
                    example = "'" + left->first + "' + '" + right->first + "'";
            }
        }
    }
    size_t interleaved = 0;
    std::vector<bool> finished(vocabSize_, false);
    for (size_t rank = 1; rank < merges.size(); rank++)
    {
        if (merges[rank][2] != merges[rank - 1][2])
            finished[merges[rank - 1][2]] = true;
        if (finished[merges[rank][2]])
            interleaved++;
    }
    if (missing > 0)
        CV_LOG_WARNING(NULL, doc_.path() << ": " << missing << " splits of tokens into two tokens have no BPE merge "
                       "(e.g. " << example << "); SentencePiece-style tokenization may differ from Hugging Face's "
                       "for some texts");
    // Llama 2's file lists the merges of "▁" runs interleaved at its end: there SentencePiece
    // (and llama.cpp) follow the token scores, which is what the derived scores give.
    if (interleaved > 0)
        CV_LOG_INFO(NULL, doc_.path() << ": " << interleaved << " BPE merges come after merges of other tokens than "
                    "their first merge; the first merge's rank is used, as SentencePiece scores would");
}

void TokenizerJsonConverter::writeMerges(const std::vector<std::array<int, 3>>& merges)
{
    std::vector<std::string> lines;
    lines.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); rank++)
    {
        const std::string& left = table_.texts[merges[rank][0]];
        const std::string& right = table_.texts[merges[rank][1]];
        // GGUF keeps a merge as "left right": a part with a space would be ambiguous.
        if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos)
            doc_.fail(jsonElement("model.merges", rank), "has a part with a space, which byte-level BPE cannot hold",
                      Error::StsNotImplemented);
        lines.push_back(left + " " + right);
    }
    out_.setStringArray("tokenizer.ggml.merges", std::move(lines));
}

HuggingFaceTokenTable TokenizerJsonConverter::run()
{
    const Json& root = doc_.asObject(doc_.root(), "");
    const Json& model = doc_.get(root, "", "model");
    checkModelType(model);
    const bool byteFallback = doc_.optionalBool(model, "model", "byte_fallback", false);
    const bool ignoresMerges = doc_.optionalBool(model, "model", "ignore_merges", false);

    TextPreparation preparation;
    if (const Json* normalizer = doc_.find(root, "", "normalizer"))
        readNormalizer(*normalizer, "normalizer", preparation);
    if (const Json* preTokenizer = doc_.find(root, "", "pre_tokenizer"))
        readPreTokenizer(*preTokenizer, "pre_tokenizer", preparation);
    const ModelKind kind = chooseKind(preparation, byteFallback);

    readVocabulary(model);
    readAddedTokens();
    buildTokenTable(kind, byteFallback, model);
    const std::vector<std::array<int, 3>> merges = readMerges(model);

    if (kind == ModelKind::ByteLevel)
    {
        out_.setString("tokenizer.ggml.model", "gpt2");
        out_.setString("tokenizer.ggml.pre", findPreTokenizer(preparation, ignoresMerges));
        writeMerges(merges);
    }
    else
    {
        if (ignoresMerges)
            doc_.fail("model.ignore_merges", "= true is supported with byte-level BPE only", Error::StsNotImplemented);
        out_.setString("tokenizer.ggml.model", "llama");
        out_.setString("tokenizer.ggml.pre", "default");
        out_.setBool("tokenizer.ggml.add_space_prefix", preparation.prependsSpace);
        out_.setBool("tokenizer.hf.escape_whitespace", kind == ModelKind::SentencePiece);
        writeScores(merges);
    }
    out_.setStringArray("tokenizer.ggml.tokens", table_.texts);
    out_.setNumberArray("tokenizer.ggml.token_type", std::vector<double>(types_.begin(), types_.end()), "int32");
    out_.setInt32("tokenizer.ggml.unknown_token_id", table_.unknownId);
    return std::move(table_);
}

} // namespace

int HuggingFaceTokenTable::find(const std::string& text) const
{
    auto it = addedTokenIds.find(text);
    if (it != addedTokenIds.end())
        return it->second;
    it = vocabIds.find(text);
    return it != vocabIds.end() ? it->second : -1;
}

HuggingFaceTokenTable convertTokenizerJsonModel(const JsonDocument& tokenizerJson, MetadataOnlyGGUF& out)
{
    return TokenizerJsonConverter(tokenizerJson, out).run();
}

}}} // namespace cv::dnn::llm
