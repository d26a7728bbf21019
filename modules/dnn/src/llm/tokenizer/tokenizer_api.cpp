// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The public cv::dnn::Tokenizer over the internal llm::Tokenizer.

#include "../../precomp.hpp"
#include <opencv2/dnn/tokenizer.hpp>

#include "hf_tokenizer.hpp"
#include "tokenizer.hpp"
#include "../common/utf8.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

class TokenizerImpl CV_FINAL : public Tokenizer
{
public:
    explicit TokenizerImpl(std::shared_ptr<llm::Tokenizer> impl) : impl_(std::move(impl)) {}

    std::vector<int> encode(const String& text, bool addSpecial, bool parseSpecial) const CV_OVERRIDE
    {
        return impl_->encode(text, addSpecial, parseSpecial);
    }
    String decode(const std::vector<int>& ids, bool renderSpecial) const CV_OVERRIDE
    {
        return llm::sanitizeUtf8(impl_->decode(ids, renderSpecial));
    }
    String tokenToPiece(int id, bool renderSpecial) const CV_OVERRIDE
    {
        return impl_->tokenToPiece(id, renderSpecial);
    }
    int getVocabSize() const CV_OVERRIDE { return impl_->vocabSize(); }
    int getBosId() const CV_OVERRIDE { return impl_->bosId(); }
    int getEosId() const CV_OVERRIDE { return impl_->eosId(); }
    bool isEndOfGeneration(int id) const CV_OVERRIDE { return impl_->isEndOfGeneration(id); }

private:
    std::shared_ptr<llm::Tokenizer> impl_;
};

} // namespace

Tokenizer::~Tokenizer() {}

Ptr<Tokenizer> Tokenizer::create(const String& path)
{
    if (llm::isHuggingFaceTokenizerPath(path))
        return llm::makePublicTokenizer(llm::Tokenizer::fromHuggingFace(path));
    Ptr<GGUFFile> file = GGUFFile::open(path);
    return llm::makePublicTokenizer(llm::Tokenizer::fromGGUF(*file));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn

cv::Ptr<cv::dnn::Tokenizer> cv::dnn::llm::makePublicTokenizer(const std::shared_ptr<Tokenizer>& tokenizer)
{
    CV_Assert(tokenizer);
    return makePtr<TokenizerImpl>(tokenizer);
}
