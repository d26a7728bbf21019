// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// SentencePiece-style BPE (tokenizer.ggml.model = "llama"), as llama.cpp runs it: spaces
// become U+2581 "▁" (with one prepended at the start of the text and after each special
// token), the text is split into UTF-8 characters, and the adjacent pair whose concatenation
// is the token with the highest score is merged until no pair is a token. Pieces that are
// not tokens fall back to byte tokens <0xXX>, so every input is representable (malformed
// UTF-8 included: each bad byte stays a symbol of its own and comes back unchanged).

#include "../../precomp.hpp"
#include "tokenizer_models.hpp"
#include "../common/utf8.hpp"

#include <queue>
#include <string_view>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char kSpaceEscape[] = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
const size_t kSpaceEscapeLength = 3;

const char* const kAddSpacePrefixKey = "tokenizer.ggml.add_space_prefix";
// Not a GGUF key: Hugging Face BPE tokenizers without a "▁" normalizer (hf_tokenizer.hpp).
const char* const kEscapeWhitespaceKey = "tokenizer.hf.escape_whitespace";

class SentencePieceTokenizer CV_FINAL : public Tokenizer
{
public:
    SentencePieceTokenizer(const GGUFFile& file, bool addSpacePrefix, bool escapeWhitespace);

protected:
    void encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const CV_OVERRIDE;
    std::string normalTokenPiece(int id) const CV_OVERRIDE;

private:
    void appendBytes(std::string_view bytes, std::vector<int>& ids) const;

    bool addSpacePrefix_;
    bool escapeWhitespace_;  // ' ' <-> "▁"
    int byteTokenIds_[256];  // -1: the vocabulary cannot spell that byte
};

TokenizerDefaults sentencePieceDefaults(bool addSpacePrefix)
{
    TokenizerDefaults defaults;
    defaults.bos = 1;
    defaults.eos = 2;
    defaults.unknown = 0;
    defaults.addBos = true;
    defaults.dropsImpliedSpace = addSpacePrefix;
    return defaults;
}

SentencePieceTokenizer::SentencePieceTokenizer(const GGUFFile& file, bool addSpacePrefix, bool escapeWhitespace)
    : Tokenizer(file, "llama", sentencePieceDefaults(addSpacePrefix), /*requireScores=*/true),
      addSpacePrefix_(addSpacePrefix), escapeWhitespace_(escapeWhitespace)
{
    static const char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; b++)
    {
        const char name[] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        int id = vocab().find(std::string_view(name, sizeof(name)));
        if (id < 0)  // some vocabularies spell bytes as themselves
            id = vocab().find(std::string(1, (char)b));
        byteTokenIds_[b] = id;
    }
}

// One UTF-8 character, or a piece merged from adjacent ones; a doubly linked list in text order.
struct Symbol
{
    int prev, next;
    size_t offset, length;  // length 0: merged into its left neighbour
};

struct MergeCandidate
{
    float score;
    int left, right;
    size_t length;  // left + right at the time: a stale candidate no longer matches

    // std::priority_queue pops the largest: best score, then leftmost.
    bool operator<(const MergeCandidate& other) const
    {
        return score < other.score || (score == other.score && left > other.left);
    }
};

void SentencePieceTokenizer::encodeText(const std::string& text, bool startsSegment, std::vector<int>& ids) const
{
    std::string escaped;
    escaped.reserve(text.size() * 2 + kSpaceEscapeLength);
    if (addSpacePrefix_ && startsSegment)
        escaped.append(kSpaceEscape, kSpaceEscapeLength);
    for (char c : text)
    {
        if (c == ' ' && escapeWhitespace_)
            escaped.append(kSpaceEscape, kSpaceEscapeLength);
        else
            escaped += c;
    }

    std::vector<Symbol> symbols;
    symbols.reserve(escaped.size());
    for (size_t offset = 0; offset < escaped.size();)
    {
        // A malformed byte is a symbol of its own, so byte fallback restores it exactly.
        size_t end = offset;
        decodeUtf8(escaped, end);
        const int index = (int)symbols.size();
        symbols.push_back({index - 1, index + 1, offset, end - offset});
        offset = end;
    }
    if (symbols.empty())
        return;
    symbols.back().next = -1;

    auto pieceOf = [&](size_t offset, size_t length) { return std::string_view(escaped.data() + offset, length); };

    std::priority_queue<MergeCandidate> candidates;
    auto proposeMerge = [&](int left, int right) {
        if (left < 0 || right < 0)
            return;
        const size_t length = symbols[left].length + symbols[right].length;
        const int id = vocab().find(pieceOf(symbols[left].offset, length));
        if (id >= 0)
            candidates.push({vocab().score(id), left, right, length});
    };
    for (int i = 1; i < (int)symbols.size(); i++)
        proposeMerge(i - 1, i);

    while (!candidates.empty())
    {
        const MergeCandidate best = candidates.top();
        candidates.pop();
        Symbol& left = symbols[best.left];
        Symbol& right = symbols[best.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != best.length)
            continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0)
            symbols[right.next].prev = best.left;
        proposeMerge(left.prev, best.left);
        proposeMerge(best.left, left.next);
    }

    for (int i = 0; i >= 0; i = symbols[i].next)
    {
        const std::string_view piece = pieceOf(symbols[i].offset, symbols[i].length);
        const int id = vocab().find(piece);
        if (id >= 0)
            ids.push_back(id);
        else
            appendBytes(piece, ids);
    }
}

void SentencePieceTokenizer::appendBytes(std::string_view bytes, std::vector<int>& ids) const
{
    for (char c : bytes)
    {
        const int id = byteTokenIds_[(unsigned char)c];
        if (id >= 0)
            ids.push_back(id);
        else if (unknownId() >= 0)
            ids.push_back(unknownId());
        // else: a vocabulary with neither byte tokens nor <unk> cannot represent the byte
    }
}

std::string SentencePieceTokenizer::normalTokenPiece(int id) const
{
    const std::string& text = vocab().text(id);
    std::string piece;
    piece.reserve(text.size());
    for (size_t pos = 0; pos < text.size();)
    {
        if (escapeWhitespace_ && text.compare(pos, kSpaceEscapeLength, kSpaceEscape) == 0)
        {
            piece += ' ';
            pos += kSpaceEscapeLength;
        }
        else
        {
            piece += text[pos++];
        }
    }
    return piece;
}

} // namespace

std::shared_ptr<Tokenizer> createSentencePieceTokenizer(const GGUFFile& file)
{
    const bool addSpacePrefix = file.hasMetadata(kAddSpacePrefixKey) ? file.getBool(kAddSpacePrefixKey) : true;
    const bool escapeWhitespace = file.hasMetadata(kEscapeWhitespaceKey) ? file.getBool(kEscapeWhitespaceKey) : true;
    return std::make_shared<SentencePieceTokenizer>(file, addSpacePrefix, escapeWhitespace);
}

}}} // namespace cv::dnn::llm
