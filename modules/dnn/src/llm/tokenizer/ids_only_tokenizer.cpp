// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The stand-in tokenizer of a model without one (an ONNX model folder without tokenizer.json):
// token ids in and out work (TextGenerationModel::startWithTokenIds, llm_generate --prompt-ids);
// whatever needs text (encoding a prompt, decoding ids) is an error that says why.

#include "../../precomp.hpp"
#include "tokenizer.hpp"
#include "metadata_only_gguf.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

Ptr<MetadataOnlyGGUF> placeholderVocabulary(int vocabSize, const std::string& why)
{
    CV_Check(vocabSize, vocabSize > 0 && vocabSize <= (1 << 24), "ids-only tokenizer: the vocabulary size must be positive");
    Ptr<MetadataOnlyGGUF> m = makePtr<MetadataOnlyGGUF>(why);
    m->setString("tokenizer.ggml.model", "none");
    std::vector<std::string> tokens((size_t)vocabSize);
    for (int i = 0; i < vocabSize; i++)
        tokens[(size_t)i] = format("<id:%d>", i);
    m->setStringArray("tokenizer.ggml.tokens", std::move(tokens));
    return m;
}

class IdsOnlyTokenizer CV_FINAL : public Tokenizer
{
public:
    IdsOnlyTokenizer(const GGUFFile& placeholder, const std::string& why)
        : Tokenizer(placeholder, "none", TokenizerDefaults(), false), why_(why)
    {
    }

    bool hasText() const CV_OVERRIDE
    {
        return false;
    }

protected:
    void encodeText(const std::string&, bool, std::vector<int>&) const CV_OVERRIDE
    {
        CV_Error(Error::StsNotImplemented, why_ + ": encoding text needs a tokenizer; give token ids instead "
                                          "(TextGenerationModel::startWithTokenIds, llm_generate --prompt-ids)");
    }

    std::string normalTokenPiece(int) const CV_OVERRIDE
    {
        CV_Error(Error::StsNotImplemented, why_ + ": decoding token ids to text needs a tokenizer; "
                                          "read the generated ids instead (getGeneratedTokenIds, llm_generate --print-ids)");
    }

private:
    std::string why_;
};

} // namespace

std::shared_ptr<Tokenizer> Tokenizer::idsOnly(int vocabSize, const std::string& why)
{
    Ptr<MetadataOnlyGGUF> placeholder = placeholderVocabulary(vocabSize, why);
    return std::make_shared<IdsOnlyTokenizer>(*placeholder, why);
}

}}} // namespace cv::dnn::llm
