// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the text is cut into words by the model's
// pre-tokenizer regexes, each byte of a word becomes one printable character of GPT-2's
// byte-to-unicode map (so that every byte string has a spelling in the vocabulary), and the
// adjacent pair with the lowest merge rank (tokenizer.ggml.merges order) is merged until no
// pair of the word has a rank.
//
// Some pre-tokenizers (Gemma 4's, also tokenizer.ggml.model = "gemma4") make it
// SentencePiece-style BPE instead: spaces become "â", the words are merged from their
// UTF-8 characters as they are, and what the vocabulary cannot spell goes out as "<0xXX>" byte
// tokens.

#include "../../precomp.hpp"
#include "tokenizer_models.hpp"
#include "bpe_pre_tokenizer.hpp"
#include "../common/utf8.hpp"

#include <queue>
#include <unordered_map>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char* const kMergesKey = "tokenizer.ggml.merges";
const char* const kPreKey = "tokenizer.ggml.pre";
const char kSpaceEscape[] = "\xE2\x96\x81";  // U+2581

// GPT-2's byte <-> character map: printable Latin-1 bytes stand for themselves, the others
// (controls, space, 0x7F-0xA0, 0xAD) take the characters from U+0100 on, in byte order.
class ByteCharacterMap
{
public:
    ByteCharacterMap()
    {
        byteOfCharacter_.assign(kMaxCharacter + 1, -1);
        uint32_t nextSubstitute = 0x100;
        for (int b = 0; b < 256; b++)
        {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const uint32_t character = printable ? (uint32_t)b : nextSubstitute++;
            appendUtf8(character, characterOfByte_[b]);
            byteOfCharacter_[character] = b;
        }
    }

    const std::string& character(unsigned char byte) const { return characterOfByte_[byte]; }
    //! The byte a character stands for, -1 if it is not one of the 256.
    int byteOf(uint32_t character) const
    {
        return character <= kMaxCharacter ? byteOfCharacter_[character] : -1;
    }

private:
    static const uint32_t kMaxCharacter = 0x143;  // 0x100 + the 68 substituted bytes - 1
    std::string characterOfByte_[256];
    std::vector<int> byteOfCharacter_;
};

const ByteCharacterMap& byteCharacterMap()
{
    static const ByteCharacterMap map;
    return map;
}

struct MergeRule
{
    int rank;
    int resultId;
};

uint64_t pairKey(int leftId, int rightId)
{
    return ((uint64_t)(uint32_t)leftId << 32) | (uint32_t)rightId;
}

class ByteLevelBpeTokenizer CV_FINAL : public Tokenizer
{
public:
    ByteLevelBpeTokenizer(const GGUFFile& file, const std::string& model, std::unique_ptr<BpePreTokenizer> preTokenizer);

protected:
    void encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const CV_OVERRIDE;
    std::string normalTokenPiece(int id) const CV_OVERRIDE;

private:
    void readMerges(const GGUFFile& file);
    void encodeWord(std::string_view word, std::vector<int>& ids) const;

    std::unique_ptr<BpePreTokenizer> preTokenizer_;
    std::unordered_map<uint64_t, MergeRule> merges_;  // (left id, right id) -> rank, result
    // Byte-encoded: the token of each byte's character; raw UTF-8: the byte's "<0xXX>" token.
    // -1 if the vocabulary lacks it.
    int byteTokenIds_[256];
};

TokenizerDefaults bpeDefaults(const BpePreTokenizer& preTokenizer)
{
    TokenizerDefaults defaults;
    defaults.addBos = preTokenizer.addsBosByDefault();
    defaults.forceAddBos = preTokenizer.forcesBos();
    return defaults;
}

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(const GGUFFile& file, const std::string& model,
                                             std::unique_ptr<BpePreTokenizer> preTokenizer)
    : Tokenizer(file, model, bpeDefaults(*preTokenizer), /*requireScores=*/false),
      preTokenizer_(std::move(preTokenizer))
{
    const ByteCharacterMap& map = byteCharacterMap();
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++)
    {
        const char name[] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        byteTokenIds_[b] = preTokenizer_->byteEncoded() ? vocab().find(map.character((unsigned char)b))
                                                        : vocab().find(std::string_view(name, sizeof(name)));
    }
    readMerges(file);
}

void ByteLevelBpeTokenizer::readMerges(const GGUFFile& file)
{
    if (!file.hasMetadata(kMergesKey))
        CV_Error_(Error::StsParseError, ("tokenizer: the byte-level BPE model has no %s", kMergesKey));
    const std::string type = file.getMetadataType(kMergesKey);
    if (type != "array[string]")
        CV_Error_(Error::StsParseError, ("tokenizer: %s must be an array of strings, not %s", kMergesKey, type.c_str()));
    const std::vector<std::string> merges = file.getStringArray(kMergesKey);
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); rank++)
    {
        const std::string& merge = merges[rank];
        // "left right"; the search starts at 1 so that a left part " " stays possible.
        const size_t space = merge.size() > 1 ? merge.find(' ', 1) : std::string::npos;
        if (space == std::string::npos)
            CV_Error_(Error::StsParseError, ("tokenizer: %s[%zu] = '%s' is not two tokens separated by a space",
                                             kMergesKey, rank, merge.c_str()));
        const std::string left = merge.substr(0, space), right = merge.substr(space + 1);
        const int leftId = vocab().find(left), rightId = vocab().find(right), resultId = vocab().find(left + right);
        // HF tokenizers refuses such merges too: the model is inconsistent.
        if (leftId < 0 || rightId < 0 || resultId < 0)
            CV_Error_(Error::StsParseError, ("tokenizer: %s[%zu] = '%s' refers to '%s', which is not in tokenizer.ggml.tokens",
                      kMergesKey, rank, merge.c_str(), (leftId < 0 ? left : rightId < 0 ? right : left + right).c_str()));
        merges_.emplace(pairKey(leftId, rightId), MergeRule{(int)rank, resultId});  // the first rank wins
    }
}

void ByteLevelBpeTokenizer::encodeText(const std::string& text, bool /*startsSegment*/, std::vector<int>& ids) const
{
    // PCRE2 needs valid UTF-8: malformed bytes become U+FFFD, as in llama.cpp.
    std::string clean = sanitizeUtf8(text);
    if (preTokenizer_->escapesSpaces())
    {
        std::string escaped;
        escaped.reserve(clean.size() + clean.size() / 2);
        for (char c : clean)
        {
            if (c == ' ')
                escaped += kSpaceEscape;
            else
                escaped += c;
        }
        clean.swap(escaped);
    }
    for (std::string_view word : preTokenizer_->split(clean))
        encodeWord(word, ids);
}

// One byte (byte-encoded) or character (raw UTF-8) of the word, or a token merged from
// adjacent ones; a doubly linked list.
struct WordSymbol
{
    int id;  // -1: a byte or character the vocabulary cannot spell (it never merges)
    int prev, next;
    uint32_t offset, length;  // in the word, before any merge
    bool merged;  // absorbed into its left neighbour
};

struct MergeCandidate
{
    int rank;
    int left, right;
    int leftId, rightId;  // the symbols' tokens when proposed: a stale candidate no longer matches
    int resultId;

    // std::priority_queue pops the largest: lowest rank, then leftmost.
    bool operator<(const MergeCandidate& other) const
    {
        return rank > other.rank || (rank == other.rank && left > other.left);
    }
};

void ByteLevelBpeTokenizer::encodeWord(std::string_view word, std::vector<int>& ids) const
{
    const ByteCharacterMap& map = byteCharacterMap();
    const bool byteEncoded = preTokenizer_->byteEncoded();
    const bool newlines = word.find_first_not_of('\n') == std::string_view::npos;
    if (preTokenizer_->ignoresMerges() || (newlines && preTokenizer_->keepsNewlineTokens()))
    {
        std::string spelled;
        if (byteEncoded)
        {
            for (char c : word)
                spelled += map.character((unsigned char)c);
        }
        else
        {
            spelled = word;
        }
        const int id = vocab().find(spelled);
        if (id >= 0)
        {
            ids.push_back(id);
            return;
        }
    }

    std::vector<WordSymbol> symbols;
    symbols.reserve(word.size());
    for (size_t offset = 0; offset < word.size();)
    {
        const size_t length = byteEncoded ? 1 : std::min(word.size() - offset,
                                                         (size_t)utf8SequenceLength((unsigned char)word[offset]));
        const int id = byteEncoded ? byteTokenIds_[(unsigned char)word[offset]] : vocab().find(word.substr(offset, length));
        const int index = (int)symbols.size();
        symbols.push_back({id, index - 1, index + 1, (uint32_t)offset, (uint32_t)length, false});
        offset += length;
    }
    if (!symbols.empty())
        symbols.back().next = -1;

    std::priority_queue<MergeCandidate> candidates;
    auto proposeMerge = [&](int left, int right) {
        if (left < 0 || right < 0 || symbols[left].id < 0 || symbols[right].id < 0)
            return;
        const auto it = merges_.find(pairKey(symbols[left].id, symbols[right].id));
        if (it != merges_.end())
            candidates.push({it->second.rank, left, right, symbols[left].id, symbols[right].id, it->second.resultId});
    };
    for (int i = 1; i < (int)symbols.size(); i++)
        proposeMerge(i - 1, i);

    while (!candidates.empty())
    {
        const MergeCandidate best = candidates.top();
        candidates.pop();
        WordSymbol& left = symbols[best.left];
        WordSymbol& right = symbols[best.right];
        if (left.merged || right.merged || left.id != best.leftId || right.id != best.rightId)
            continue;
        left.id = best.resultId;
        right.merged = true;
        left.next = right.next;
        if (right.next >= 0)
            symbols[right.next].prev = best.left;
        proposeMerge(left.prev, best.left);
        proposeMerge(best.left, left.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next)
    {
        if (symbols[i].id >= 0)
        {
            ids.push_back(symbols[i].id);
            continue;
        }
        if (!byteEncoded)
        {
            // A character without a token: its bytes' "<0xXX>" tokens, where the vocabulary has them.
            for (size_t k = 0; k < symbols[i].length; k++)
            {
                const int id = byteTokenIds_[(unsigned char)word[symbols[i].offset + k]];
                if (id >= 0)
                    ids.push_back(id);
            }
            continue;
        }
        // A byte without a token: keep whatever single characters of its spelling the
        // vocabulary has (llama.cpp's fallback); usually nothing.
        for (char c : map.character((unsigned char)word[symbols[i].offset]))
        {
            const int id = vocab().find(std::string_view(&c, 1));
            if (id >= 0)
                ids.push_back(id);
        }
    }
}

std::string ByteLevelBpeTokenizer::normalTokenPiece(int id) const
{
    const ByteCharacterMap& map = byteCharacterMap();
    const std::string& text = vocab().text(id);
    if (preTokenizer_->escapesSpaces())
    {
        std::string piece;
        piece.reserve(text.size());
        for (size_t pos = 0; pos < text.size();)
        {
            if (text.compare(pos, sizeof(kSpaceEscape) - 1, kSpaceEscape) == 0)
            {
                piece += ' ';
                pos += sizeof(kSpaceEscape) - 1;
            }
            else
            {
                piece += text[pos++];
            }
        }
        return piece;
    }
    std::string bytes;
    bytes.reserve(text.size());
    for (size_t pos = 0; pos < text.size();)
    {
        const size_t start = pos;
        const int byte = map.byteOf(decodeUtf8(text, pos));
        if (byte >= 0)
            bytes += (char)byte;
        else  // not a byte-level character: keep the text as it is
            bytes.append(text, start, pos - start);
    }
    return bytes;
}

} // namespace

std::shared_ptr<Tokenizer> createByteLevelBpeTokenizer(const GGUFFile& file)
{
    const std::string pre = file.hasMetadata(kPreKey) ? file.getString(kPreKey) : std::string();
    return std::make_shared<ByteLevelBpeTokenizer>(file, "gpt2", std::unique_ptr<BpePreTokenizer>(new BpePreTokenizer(pre)));
}

std::shared_ptr<Tokenizer> createGemma4Tokenizer(const GGUFFile& file)
{
    // llama.cpp runs tokenizer.ggml.model = "gemma4" as BPE with the "gemma4" pre-tokenizer,
    // whatever tokenizer.ggml.pre says.
    return std::make_shared<ByteLevelBpeTokenizer>(file, "gemma4",
                                                   std::unique_ptr<BpePreTokenizer>(new BpePreTokenizer("gemma4")));
}

}}} // namespace cv::dnn::llm
