// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "tokenizer.hpp"
#include "tokenizer_models.hpp"
#include "special_token_splitter.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <algorithm>
#include <cctype>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char* const kModelKey = "tokenizer.ggml.model";

// Tokens that end a generation, whatever id the metadata gives them: llama.cpp's list
// (llama-vocab.cpp, which finds them by their text).
const char* const kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[",
};

// Fill-in-the-middle tokens, also found by their text in llama.cpp (FIM_PRE, FIM_SUF, FIM_MID,
// FIM_PAD, FIM_REP, FIM_SEP): all become control tokens; the last three also end a generation.
struct FimTokens
{
    const char* key;
    bool endsGeneration;
    std::vector<const char*> texts;
};
const FimTokens kFimTokens[] = {
    {"tokenizer.ggml.fim_pre_token_id", false,
     {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
      "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}},
    {"tokenizer.ggml.fim_suf_token_id", false,
     {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
      "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}},
    {"tokenizer.ggml.fim_mid_token_id", false,
     {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
      "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}},
    {"tokenizer.ggml.fim_pad_token_id", true, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
    {"tokenizer.ggml.fim_rep_token_id", true, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
    {"tokenizer.ggml.fim_sep_token_id", true, {"<|file_sep|>"}},
};

// gpt-oss's channel markers are rendered and parsed as text (llama.cpp makes them user-defined,
// so that its chat parser reads them).
const char* const kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

int readTokenId(const GGUFFile& file, const char* key, int fallback, int vocabSize)
{
    const int id = (fallback >= 0 && fallback < vocabSize) ? fallback : -1;
    if (!file.hasMetadata(key))
        return id;
    const int64 value = file.getInt(key);
    if (value == -1)
        return -1;  // llama.cpp's LLAMA_TOKEN_NULL: the metadata says the model has none
    if (value < 0 || value >= vocabSize)
    {
        // llama.cpp keeps such models usable the same way: the id is ignored.
        CV_LOG_WARNING(NULL, "tokenizer: " << key << " = " << value << " is outside the vocabulary of "
                       << vocabSize << " tokens; ignored");
        return id;
    }
    return (int)value;
}

bool readFlag(const GGUFFile& file, const char* key, bool fallback)
{
    return file.hasMetadata(key) ? file.getBool(key) : fallback;
}

void requireToken(bool added, int id, const char* addKey, const char* idKey)
{
    if (added && id < 0)
        CV_Error_(Error::StsParseError, ("tokenizer: %s is true but the model has no valid %s", addKey, idKey));
}

} // namespace

std::shared_ptr<Tokenizer> Tokenizer::fromGGUF(const GGUFFile& file)
{
    if (!file.hasMetadata(kModelKey))
        CV_Error_(Error::StsParseError, ("tokenizer: the model has no %s", kModelKey));
    const std::string model = file.getString(kModelKey);
    if (model == "llama")
        return createSentencePieceTokenizer(file);
    if (model == "gpt2")
        return createByteLevelBpeTokenizer(file);
    if (model == "bert")
        return createWordPieceTokenizer(file);
    if (model == "gemma4")
        return createGemma4Tokenizer(file);
    // The other tokenizers that llama.cpp knows, none of which a supported architecture uses.
    static const char* const kRefused[][2] = {
        {"t5", "T5's Unigram tokenizer (llama.cpp's UGM)"},
        {"rwkv", "RWKV's trie tokenizer"},
        {"plamo2", "PLaMo 2's Aho-Corasick tokenizer"},
        {"hybriddna", "the DNA k-mer BPE tokenizer"},
        {"whitespace", "the whitespace-split BPE tokenizer"},
        {"none", "no tokenizer (a model without vocabulary)"},
        {"no_vocab", "no tokenizer (a model without vocabulary)"},
    };
    for (const auto& refused : kRefused)
    {
        if (model == refused[0])
            CV_Error_(Error::StsNotImplemented, ("tokenizer: %s = '%s' (%s) is not supported; supported are 'llama' "
                      "(SentencePiece), 'gpt2' (byte-level BPE), 'gemma4' (SentencePiece-style BPE) and 'bert' "
                      "(WordPiece)", kModelKey, model.c_str(), refused[1]));
    }
    CV_Error_(Error::StsNotImplemented, ("tokenizer: %s = '%s' is not a tokenizer that llama.cpp knows; supported are "
              "'llama' (SentencePiece), 'gpt2' (byte-level BPE), 'gemma4' (SentencePiece-style BPE) and 'bert' "
              "(WordPiece)", kModelKey, model.c_str()));
}

Tokenizer::Tokenizer(const GGUFFile& file, const std::string& model, const TokenizerDefaults& defaults, bool requireScores)
    : model_(model), vocab_(file, requireScores), dropsImpliedSpace_(defaults.dropsImpliedSpace)
{
    readSpecialIds(file, defaults);
    applyModelQuirks(file);
    readAddedTokenStrip(file);
    // Last: token types are final now.
    splitter_.reset(new SpecialTokenSplitter(vocab_));
}

Tokenizer::~Tokenizer() {}

void Tokenizer::readSpecialIds(const GGUFFile& file, const TokenizerDefaults& defaults)
{
    const int n = vocab_.size();
    bosId_ = readTokenId(file, "tokenizer.ggml.bos_token_id", defaults.bos, n);
    eosId_ = readTokenId(file, "tokenizer.ggml.eos_token_id", defaults.eos, n);
    unknownId_ = readTokenId(file, "tokenizer.ggml.unknown_token_id", defaults.unknown, n);
    // (sic: GGUF spells the key this way)
    separatorId_ = readTokenId(file, "tokenizer.ggml.seperator_token_id", defaults.separator, n);
    const int eotId = readTokenId(file, "tokenizer.ggml.eot_token_id", -1, n);
    const int eomId = readTokenId(file, "tokenizer.ggml.eom_token_id", -1, n);

    addBos_ = readFlag(file, "tokenizer.ggml.add_bos_token", defaults.addBos);
    if (defaults.forceAddBos)
        addBos_ = true;
    addEos_ = readFlag(file, "tokenizer.ggml.add_eos_token", defaults.addEos);
    addSeparator_ = readFlag(file, "tokenizer.ggml.add_sep_token", defaults.addSeparator);
    requireToken(addBos_, bosId_, "tokenizer.ggml.add_bos_token", "tokenizer.ggml.bos_token_id");
    requireToken(addEos_, eosId_, "tokenizer.ggml.add_eos_token", "tokenizer.ggml.eos_token_id");
    requireToken(addSeparator_, separatorId_, "tokenizer.ggml.add_sep_token", "tokenizer.ggml.seperator_token_id");

    // Without token types, the ids the metadata names are still the special ones.
    if (!vocab_.hasTypes())
    {
        for (int id : {bosId_, eosId_, separatorId_, eotId, eomId})
        {
            if (id >= 0)
                vocab_.setType(id, TOKEN_TYPE_CONTROL);
        }
        if (unknownId_ >= 0)
            vocab_.setType(unknownId_, TOKEN_TYPE_UNKNOWN);
    }
    findEndOfGenerationTokens(file, eotId, eomId);
}

void Tokenizer::addEndOfGenerationIds(const std::vector<int>& ids)
{
    for (int id : ids)
    {
        checkId(id);
        endOfGenerationIds_.push_back(id);
    }
    std::sort(endOfGenerationIds_.begin(), endOfGenerationIds_.end());
    endOfGenerationIds_.erase(std::unique(endOfGenerationIds_.begin(), endOfGenerationIds_.end()),
                              endOfGenerationIds_.end());
}

void Tokenizer::findEndOfGenerationTokens(const GGUFFile& file, int eotId, int eomId)
{
    const int n = vocab_.size();
    // A token found by its text is a control token even where the converter marked it normal
    // (it would be rendered, and never parsed as special); llama.cpp corrects the type the same way.
    auto foundByText = [this](const char* text) {
        const int id = vocab_.find(text);
        if (id >= 0 && vocab_.type(id) != TOKEN_TYPE_CONTROL)
            vocab_.setType(id, TOKEN_TYPE_CONTROL);
        return id;
    };
    std::vector<int> ends;
    for (const FimTokens& fim : kFimTokens)
    {
        // The metadata's id when it has a valid one, else the tokens of these texts (llama.cpp
        // takes the first it meets in a hash map; vocabularies hold one of them at most).
        std::vector<int> ids;
        const int fromMetadata = readTokenId(file, fim.key, -1, n);
        if (fromMetadata >= 0)
            ids.push_back(fromMetadata);
        else
        {
            for (const char* text : fim.texts)
            {
                const int id = foundByText(text);
                if (id >= 0)
                    ids.push_back(id);
            }
        }
        if (fim.endsGeneration)
            ends.insert(ends.end(), ids.begin(), ids.end());
    }
    for (const char* text : kEndOfGenerationTexts)
    {
        const int id = foundByText(text);
        if (id >= 0)
            ends.push_back(id);
    }
    for (int id : {eosId_, eotId, eomId})
    {
        if (id >= 0)
            ends.push_back(id);
    }
    auto endsWith = [&ends, this](const char* text) {
        const int id = vocab_.find(text);
        return id >= 0 && std::find(ends.begin(), ends.end(), id) != ends.end();
    };
    auto removeEnd = [&ends, this](const char* text, TokenType newType) {
        const int id = vocab_.find(text);
        ends.erase(std::remove(ends.begin(), ends.end(), id), ends.end());
        vocab_.setType(id, newType);
    };
    // gpt-oss (<|return|>, <|call|>) and Solar Open (<|calls|>, <|flush|>) end a message with
    // <|end|> and go on: there it is text, not the end of the generation.
    if (endsWith("<|end|>") && ((endsWith("<|return|>") && endsWith("<|call|>")) ||
                                (endsWith("<|calls|>") && endsWith("<|flush|>"))))
        removeEnd("<|end|>", TOKEN_TYPE_USER_DEFINED);
    // Gemma 4 (which has <|tool_response>) writes </s> as text.
    if (endsWith("<|tool_response>") && endsWith("</s>"))
        removeEnd("</s>", TOKEN_TYPE_NORMAL);
    for (const char* text : kAlwaysRenderedTexts)
    {
        const int id = vocab_.find(text);
        if (id >= 0)
            vocab_.setType(id, TOKEN_TYPE_USER_DEFINED);
    }
    endOfGenerationIds_ = ends;
    std::sort(endOfGenerationIds_.begin(), endOfGenerationIds_.end());
    endOfGenerationIds_.erase(std::unique(endOfGenerationIds_.begin(), endOfGenerationIds_.end()),
                              endOfGenerationIds_.end());
}

void Tokenizer::applyModelQuirks(const GGUFFile& file)
{
    std::string name = file.hasMetadata("general.name") && file.getMetadataType("general.name") == "string"
                       ? file.getString("general.name") : std::string();
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return (char)std::tolower(c); });
    // Phi-3's added tokens swallow the whitespace after them (rstrip in its tokenizer.json,
    // which GGUF does not carry): "<|end|>\n<|assistant|>" has no "\n" token.
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos)
    {
        for (int id = 0; id < vocab_.size(); id++)
        {
            const std::string& text = vocab_.text(id);
            const bool keepsSpace = text == "<unk>" || text == "<s>" || text == "<|endoftext|>";
            if (vocab_.isSpecial(id) && !keepsSpace)
                vocab_.setStrip(id, false, true);
        }
    }
}

// Hugging Face tokenizers say per added token whether it swallows the whitespace beside it
// (hf_tokenizer.hpp); GGUF files do not.
void Tokenizer::readAddedTokenStrip(const GGUFFile& file)
{
    const char* const keys[] = {"tokenizer.hf.lstrip_token_ids", "tokenizer.hf.rstrip_token_ids"};
    for (int side = 0; side < 2; side++)
    {
        if (!file.hasMetadata(keys[side]))
            continue;
        for (double value : file.getNumberArray(keys[side]))
        {
            const int id = (int)value;
            if (value != (double)id || !vocab_.contains(id))
                CV_Error_(Error::StsOutOfRange, ("tokenizer: %s holds %g, which is not a token id", keys[side], value));
            vocab_.setStrip(id, side == 0 || vocab_.stripsLeft(id), side == 1 || vocab_.stripsRight(id));
        }
    }
}

void Tokenizer::checkId(int id) const
{
    if (!vocab_.contains(id))
        CV_Error_(Error::StsOutOfRange, ("tokenizer: token id %d is outside the vocabulary [0, %d)", id, vocab_.size()));
}

std::vector<int> Tokenizer::encode(const std::string& text, bool addSpecial, bool parseSpecial) const
{
    std::vector<int> ids;
    ids.reserve(text.size() / 3 + 4);
    if (addSpecial && addBos_)
        ids.push_back(bosId_);
    bool startsSegment = true;
    for (const TextFragment& fragment : splitter_->split(text, parseSpecial))
    {
        if (!fragment.isText())
        {
            ids.push_back(fragment.tokenId);
            startsSegment = true;
            continue;
        }
        encodeText(text.substr(fragment.offset, fragment.length), startsSegment, ids);
        startsSegment = false;
    }
    if (addSpecial && addEos_)
        ids.push_back(eosId_);
    if (addSpecial && addSeparator_)
        ids.push_back(separatorId_);
    return ids;
}

std::string Tokenizer::tokenToPiece(int id, bool renderSpecial) const
{
    checkId(id);
    switch (vocab_.type(id))
    {
    case TOKEN_TYPE_NORMAL:
        return normalTokenPiece(id);
    case TOKEN_TYPE_BYTE:
    {
        const int byte = vocab_.byteValue(id);
        return byte >= 0 ? std::string(1, (char)byte) : normalTokenPiece(id);
    }
    case TOKEN_TYPE_USER_DEFINED:
        return vocab_.text(id);  // added tokens are stored as the text they match
    case TOKEN_TYPE_CONTROL:
    case TOKEN_TYPE_UNKNOWN:
        return renderSpecial ? vocab_.text(id) : std::string();
    default:
        return std::string();  // unused and undefined tokens stand for no text
    }
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool renderSpecial) const
{
    std::string text;
    bool segmentStart = true;
    for (int id : ids)
    {
        std::string piece = tokenToPiece(id, renderSpecial);
        if (vocab_.isSpecial(id))
        {
            segmentStart = true;
        }
        else
        {
            if (dropsImpliedSpace_ && segmentStart && !piece.empty() && piece[0] == ' ')
                piece.erase(0, 1);
            segmentStart = false;
        }
        text += piece;
    }
    return text;
}

bool Tokenizer::isEndOfGeneration(int id) const
{
    return std::binary_search(endOfGenerationIds_.begin(), endOfGenerationIds_.end(), id);
}

std::string Tokenizer::tokenText(int id) const
{
    checkId(id);
    return vocab_.text(id);
}

bool Tokenizer::isSpecial(int id) const
{
    checkId(id);
    return vocab_.isSpecial(id);
}

}}} // namespace cv::dnn::llm
