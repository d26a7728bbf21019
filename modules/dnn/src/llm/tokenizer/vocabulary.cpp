// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "vocabulary.hpp"

#include <opencv2/core/utils/logger.hpp>

#include <cctype>
#include <climits>
#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

static const char* const kTokensKey = "tokenizer.ggml.tokens";
static const char* const kTypesKey = "tokenizer.ggml.token_type";
static const char* const kScoresKey = "tokenizer.ggml.scores";

static std::vector<double> readNumberArray(const GGUFFile& file, const char* key, size_t expectedSize)
{
    const std::string type = file.getMetadataType(key);
    if (type.compare(0, 6, "array[") != 0 || type == "array[string]" || type.compare(0, 12, "array[array[") == 0)
        CV_Error_(Error::StsParseError, ("tokenizer: %s must be an array of numbers, not %s", key, type.c_str()));
    std::vector<double> values = file.getNumberArray(key);
    if (values.size() != expectedSize)
        CV_Error_(Error::StsParseError, ("tokenizer: %s has %zu entries but %s has %zu",
                                         key, values.size(), kTokensKey, expectedSize));
    return values;
}

Vocabulary::Vocabulary(const GGUFFile& file, bool requireScores)
{
    if (!file.hasMetadata(kTokensKey))
        CV_Error_(Error::StsParseError, ("tokenizer: the model has no %s", kTokensKey));
    const std::string tokensType = file.getMetadataType(kTokensKey);
    if (tokensType != "array[string]")
        CV_Error_(Error::StsParseError, ("tokenizer: %s must be an array of strings, not %s",
                                         kTokensKey, tokensType.c_str()));
    texts_ = file.getStringArray(kTokensKey);
    const size_t n = texts_.size();
    if (n == 0 || n > (size_t)INT_MAX)
        CV_Error_(Error::StsParseError, ("tokenizer: %s has %zu tokens", kTokensKey, n));

    types_.assign(n, TOKEN_TYPE_NORMAL);
    if (!file.hasMetadata(kTypesKey))
    {
        // Without types, byte fallback still needs to know its "<0xXX>" tokens.
        for (size_t i = 0; i < n; i++)
        {
            types_[i] = TOKEN_TYPE_BYTE;
            if (byteValue((int)i) < 0)
                types_[i] = TOKEN_TYPE_NORMAL;
        }
    }
    else
    {
        hasTypes_ = true;
        const std::vector<double> types = readNumberArray(file, kTypesKey, n);
        for (size_t i = 0; i < n; i++)
        {
            // Unknown values are kept as "undefined", which renders as nothing.
            const double t = types[i];
            types_[i] = (t >= TOKEN_TYPE_UNDEFINED && t <= TOKEN_TYPE_BYTE && t == std::floor(t))
                        ? (uint8_t)t : (uint8_t)TOKEN_TYPE_UNDEFINED;
        }
    }

    scores_.assign(n, 0.f);
    if (file.hasMetadata(kScoresKey))
    {
        const std::vector<double> scores = readNumberArray(file, kScoresKey, n);
        for (size_t i = 0; i < n; i++)
            scores_[i] = (float)scores[i];
    }
    else if (requireScores)
    {
        CV_Error_(Error::StsParseError, ("tokenizer: the SentencePiece model has no %s", kScoresKey));
    }

    strip_.assign(n, 0);
    idsByText_.reserve(n);
    size_t duplicates = 0;
    for (size_t i = 0; i < n; i++)
    {
        const std::string& text = texts_[i];
        if (text.empty())
            continue;  // cannot be matched in text; still decodes (to nothing)
        maxTokenLength_ = std::max(maxTokenLength_, text.size());
        if (!idsByText_.emplace(std::string_view(text), (int)i).second)
            duplicates++;
    }
    if (duplicates > 0)
        CV_LOG_WARNING(NULL, "tokenizer: " << duplicates << " duplicate token texts in " << kTokensKey
                       << "; the first id of each is used for encoding");
}

int Vocabulary::byteValue(int id) const
{
    if (type(id) != TOKEN_TYPE_BYTE)
        return -1;
    const std::string& t = texts_[id];
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>' ||
        !std::isxdigit((unsigned char)t[3]) || !std::isxdigit((unsigned char)t[4]))
        return -1;
    return (int)std::stoul(t.substr(3, 2), nullptr, 16);
}

}}} // namespace cv::dnn::llm
