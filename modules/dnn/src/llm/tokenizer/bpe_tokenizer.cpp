// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Byte-level BPE (tokenizer.ggml.model = "gpt2"): the text is cut into words by the model's
// pre-tokenizer regexes, each byte of a word becomes one printable character of GPT-2's
// byte-to-unicode map (so that every byte string has a spelling in the vocabulary), and the
// adjacent pair with the lowest merge rank (tokenizer.ggml.merges order) is merged until no
// pair of the word has a rank.

#include "../../precomp.hpp"
#include "tokenizer_models.hpp"
#include "bpe_pre_tokenizer.hpp"
#include "utf8.hpp"

#include <queue>
#include <unordered_map>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char* const kMergesKey = "tokenizer.ggml.merges";
const char* const kPreKey = "tokenizer.ggml.pre";

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
    ByteLevelBpeTokenizer(const GGUFFile& file, std::unique_ptr<BpePreTokenizer> preTokenizer);

protected:
    void encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const CV_OVERRIDE;
    std::string normalTokenPiece(int id) const CV_OVERRIDE;

private:
    void readMerges(const GGUFFile& file);
    void encodeWord(std::string_view word, std::vector<int>& ids) const;

    std::unique_ptr<BpePreTokenizer> preTokenizer_;
    std::unordered_map<uint64_t, MergeRule> merges_;  // (left id, right id) -> rank, result
    int byteTokenIds_[256];  // the token of each byte's character, -1 if the vocabulary lacks it
};

TokenizerDefaults bpeDefaults(const BpePreTokenizer& preTokenizer)
{
    TokenizerDefaults defaults;
    defaults.addBos = preTokenizer.addsBosByDefault();
    return defaults;
}

ByteLevelBpeTokenizer::ByteLevelBpeTokenizer(const GGUFFile& file, std::unique_ptr<BpePreTokenizer> preTokenizer)
    : Tokenizer(file, "gpt2", bpeDefaults(*preTokenizer), /*requireScores=*/false),
      preTokenizer_(std::move(preTokenizer))
{
    const ByteCharacterMap& map = byteCharacterMap();
    for (int b = 0; b < 256; b++)
        byteTokenIds_[b] = vocab().find(map.character((unsigned char)b));
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
    const std::string clean = sanitizeUtf8(text);
    for (std::string_view word : preTokenizer_->split(clean))
        encodeWord(word, ids);
}

// One byte of the word, or a token merged from adjacent ones; a doubly linked list.
struct WordSymbol
{
    int id;  // -1: a byte the vocabulary cannot spell (it never merges)
    int prev, next;
    unsigned char firstByte;
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
    if (preTokenizer_->ignoresMerges())
    {
        std::string spelled;
        for (char c : word)
            spelled += map.character((unsigned char)c);
        const int id = vocab().find(spelled);
        if (id >= 0)
        {
            ids.push_back(id);
            return;
        }
    }

    std::vector<WordSymbol> symbols(word.size());
    for (size_t i = 0; i < word.size(); i++)
    {
        const unsigned char byte = (unsigned char)word[i];
        symbols[i] = {byteTokenIds_[byte], (int)i - 1, i + 1 < word.size() ? (int)i + 1 : -1, byte, false};
    }

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
        // A byte without a token: keep whatever single characters of its spelling the
        // vocabulary has (llama.cpp's fallback); usually nothing.
        for (char c : map.character(symbols[i].firstByte))
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
    return std::make_shared<ByteLevelBpeTokenizer>(file, std::unique_ptr<BpePreTokenizer>(new BpePreTokenizer(pre)));
}

}}} // namespace cv::dnn::llm
