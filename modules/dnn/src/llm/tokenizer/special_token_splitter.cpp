// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "special_token_splitter.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

namespace cv {
namespace dnn {
namespace llm {

SpecialTokenSplitter::SpecialTokenSplitter(const Vocabulary& vocab) : vocab_(vocab)
{
    for (int id = 0; id < vocab.size(); id++)
    {
        if (vocab.isSpecial(id) && !vocab.text(id).empty())
            specialIds_.push_back(id);
    }
    std::stable_sort(specialIds_.begin(), specialIds_.end(), [&](int a, int b) {
        return vocab.text(a).size() > vocab.text(b).size();
    });
}

std::vector<TextFragment> SpecialTokenSplitter::split(const std::string& text, bool parseSpecial) const
{
    std::vector<TextFragment> fragments;
    if (text.empty())
        return fragments;
    fragments.push_back({-1, 0, text.size()});
    // Vocabularies may have thousands of special tokens ("<unused123>"): those whose first
    // two bytes never occur next to each other in the text are skipped without a search.
    std::vector<bool> bytePairs(1 << 16, false);
    for (size_t i = 0; i + 1 < text.size(); i++)
        bytePairs[((unsigned char)text[i] << 8) | (unsigned char)text[i + 1]] = true;
    // Each token is cut out of the text left over by the longer ones.
    for (int id : specialIds_)
    {
        const bool alwaysParsed = vocab_.type(id) == TOKEN_TYPE_USER_DEFINED;
        if (!parseSpecial && !alwaysParsed)
            continue;
        const std::string& token = vocab_.text(id);
        if (token.size() >= 2 && !bytePairs[((unsigned char)token[0] << 8) | (unsigned char)token[1]])
            continue;
        if (text.find(token) == std::string::npos)
            continue;
        cutOut(text, id, fragments);
    }
    return fragments;
}

void SpecialTokenSplitter::cutOut(const std::string& text, int tokenId, std::vector<TextFragment>& fragments) const
{
    const std::string& token = vocab_.text(tokenId);
    const bool stripLeft = vocab_.stripsLeft(tokenId);
    const bool stripRight = vocab_.stripsRight(tokenId);
    std::vector<TextFragment> result;
    result.reserve(fragments.size() + 2);
    for (const TextFragment& fragment : fragments)
    {
        if (!fragment.isText())
        {
            result.push_back(fragment);
            continue;
        }
        size_t begin = fragment.offset;
        const size_t end = fragment.offset + fragment.length;
        const std::string_view upToEnd(text.data(), end);  // a match must lie inside the fragment
        while (begin < end)
        {
            const size_t match = upToEnd.find(token, begin);
            if (match == std::string_view::npos)
                break;
            size_t leftEnd = match;
            if (stripLeft)
            {
                while (leftEnd > begin && std::isspace((unsigned char)text[leftEnd - 1]))
                    leftEnd--;
            }
            if (leftEnd > begin)
                result.push_back({-1, begin, leftEnd - begin});
            result.push_back({tokenId, match, token.size()});
            begin = match + token.size();
            if (stripRight)
            {
                while (begin < end && std::isspace((unsigned char)text[begin]))
                    begin++;
            }
        }
        if (begin < end)
            result.push_back({-1, begin, end - begin});
    }
    fragments.swap(result);
}

}}} // namespace cv::dnn::llm
