// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// WordPiece (tokenizer.ggml.model = "bert"). BERT's basic pre-tokenizer splits the text at
// whitespace, around punctuation and around each CJK ideograph, drops control characters,
// and for uncased models lowercases and strips accents. Each word is then covered greedily
// by the longest vocabulary pieces, or becomes [UNK] as a whole.
//
// GGUF stores the vocabulary in SentencePiece spelling: a word-initial piece is "▁hello"
// and a continuation is "llo" (BERT's "##llo").

#include "../../precomp.hpp"
#include "tokenizer_models.hpp"
#include "../common/unicode_tables.hpp"
#include "../common/utf8.hpp"

#include <climits>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char kWordStart[] = "\xE2\x96\x81";  // U+2581
const size_t kWordStartLength = 3;

const char* const kLowercaseKey = "tokenizer.ggml.normalizer.lowercase";
const char* const kStripAccentsKey = "tokenizer.ggml.normalizer.strip_accents";

class WordPieceTokenizer CV_FINAL : public Tokenizer
{
public:
    WordPieceTokenizer(const GGUFFile& file, const TokenizerDefaults& defaults);

protected:
    void encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const CV_OVERRIDE;
    std::string normalTokenPiece(int id) const CV_OVERRIDE;

private:
    std::vector<std::string> splitWords(const std::string& text) const;
    void encodeWord(const std::string& word, std::vector<int>& ids) const;

    bool lowercase_ = true;
    bool stripAccents_ = true;
};

bool isAsciiSymbol(uint32_t cp)
{
    // ASCII characters of category S; BERT splits at them like at punctuation.
    return cp != 0 && cp < 0x7F && std::strchr("$+<=>^`|~", (int)cp) != nullptr;
}

// An uncased vocabulary has no upper case letters outside its special tokens.
bool vocabularyLooksUncased(const Vocabulary& vocab)
{
    for (int id = 0; id < vocab.size(); id++)
    {
        if (vocab.type(id) != TOKEN_TYPE_NORMAL)
            continue;
        for (char c : vocab.text(id))
        {
            if (c >= 'A' && c <= 'Z')
                return false;
        }
    }
    return true;
}

WordPieceTokenizer::WordPieceTokenizer(const GGUFFile& file, const TokenizerDefaults& defaults)
    : Tokenizer(file, "bert", defaults, /*requireScores=*/false)
{
    // Older GGUF files do not say whether the model is uncased: the vocabulary tells.
    lowercase_ = file.hasMetadata(kLowercaseKey) ? file.getBool(kLowercaseKey) : vocabularyLooksUncased(vocab());
    stripAccents_ = file.hasMetadata(kStripAccentsKey) ? file.getBool(kStripAccentsKey) : lowercase_;
    if (unknownId() < 0)
        CV_Error(Error::StsParseError, "tokenizer: the WordPiece model has no [UNK] token "
                                       "(tokenizer.ggml.unknown_token_id)");
}

std::vector<std::string> WordPieceTokenizer::splitWords(const std::string& text) const
{
    std::vector<std::string> words(1);
    auto finishWord = [&]() {
        if (!words.back().empty())
            words.emplace_back();
    };
    for (uint32_t cp : decodeUtf8(text))
    {
        if (stripAccents_)
            cp = unicode::decompositionBase(cp);
        if (unicode::isWhitespace(cp))
        {
            finishWord();
            continue;
        }
        if (cp == 0 || cp == kReplacementCharacter || unicode::isControl(cp))
            continue;
        if (stripAccents_ && unicode::isAccentMark(cp))
            continue;
        const bool standsAlone = unicode::isPunctuation(cp) || isAsciiSymbol(cp) || unicode::isChineseCharacter(cp);
        if (standsAlone)
            finishWord();
        appendUtf8(lowercase_ ? unicode::toLower(cp) : cp, words.back());
        if (standsAlone)
            words.emplace_back();
    }
    if (words.back().empty())
        words.pop_back();
    return words;
}

void WordPieceTokenizer::encodeWord(const std::string& word, std::vector<int>& ids) const
{
    const std::string spelled = kWordStart + word;
    const size_t firstPiece = ids.size();
    const size_t maxLength = vocab().maxTokenLength();
    for (size_t begin = 0; begin < spelled.size();)
    {
        size_t end = std::min(spelled.size(), begin + maxLength);
        int id = -1;
        for (; end > begin; end--)
        {
            id = vocab().find(std::string_view(spelled.data() + begin, end - begin));
            if (id >= 0)
                break;
        }
        if (id < 0)
        {
            // Some part has no piece: the whole word is unknown.
            ids.resize(firstPiece);
            ids.push_back(unknownId());
            return;
        }
        ids.push_back(id);
        begin = end;
    }
}

void WordPieceTokenizer::encodeText(const std::string& text, bool /*startsSegment*/, std::vector<int>& ids) const
{
    for (const std::string& word : splitWords(text))
        encodeWord(word, ids);
}

std::string WordPieceTokenizer::normalTokenPiece(int id) const
{
    const std::string& text = vocab().text(id);
    if (text.compare(0, kWordStartLength, kWordStart) == 0)
        return " " + text.substr(kWordStartLength);
    return text;
}

} // namespace

std::shared_ptr<Tokenizer> createWordPieceTokenizer(const GGUFFile& file)
{
    TokenizerDefaults defaults;
    // [CLS] is BERT's BOS; older files name it only as the classification token.
    defaults.bos = 101;
    if (file.hasMetadata("tokenizer.ggml.cls_token_id"))
    {
        const int64 cls = file.getInt("tokenizer.ggml.cls_token_id");
        defaults.bos = cls >= 0 && cls <= INT_MAX ? (int)cls : -1;
    }
    defaults.unknown = 100;
    defaults.separator = 102;
    defaults.addBos = true;
    defaults.addSeparator = true;
    defaults.dropsImpliedSpace = true;
    return std::make_shared<WordPieceTokenizer>(file, defaults);
}

}}} // namespace cv::dnn::llm
