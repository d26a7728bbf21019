// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "multimodal_prompt.hpp"
#include "image_preprocess.hpp"

namespace cv {
namespace dnn {
namespace llm {

MultimodalPrompter::MultimodalPrompter(const std::string& mmprojPath, Net& languageModel,
                                       std::shared_ptr<Tokenizer> tokenizer)
    : encoder_(mmprojPath), tokenizer_(std::move(tokenizer))
{
    std::vector<String> names = languageModel.getLayerNames();
    for (const String& name : names)
    {
        Ptr<LLMTokenEmbeddingLayer> layer = languageModel.getLayer(name).dynamicCast<LLMTokenEmbeddingLayer>();
        if (!layer)
            continue;
        if (embedding_)
            CV_Error(Error::StsNotImplemented, "TextGenerationModel: the language model has several token embeddings");
        embedding_ = layer;
    }
    // llama.cpp feeds image embeddings after the token-embedding scale (Gemma's sqrt(n_embd)),
    // which the GGUF Net applies to every row of its embedding layer's output.
    if (languageModel.getLayerId("token_embd_scale") >= 0)
        CV_Error(Error::StsNotImplemented, "TextGenerationModel: images with a language model that scales its token "
                                           "embeddings (gemma, granite) are not supported yet");
    if (!embedding_)
        CV_Error(Error::StsNotImplemented, "TextGenerationModel: images need a language model whose Net has a "
                                           "token-embedding layer (a GGUF or ONNX model loaded by this module)");
    if (embedding_->embeddingLength() != encoder_.outputEmbd())
        CV_Error(Error::StsBadArg, format("TextGenerationModel: the mmproj '%s' projects images to %d features, but the "
                                          "language model's embeddings have %d: not a matching pair",
                                          mmprojPath.c_str(), encoder_.outputEmbd(), embedding_->embeddingLength()));
    if (!tokenizer_)
        CV_Error(Error::StsBadArg, "TextGenerationModel: images need the model's tokenizer");
}

Mat MultimodalPrompter::embed(const Mat& bgr)
{
    const int64 t0 = getTickCount();
    Mat rows = encoder_.encodeImage(bgr);
    lastEncodeMs_ = (getTickCount() - t0) * 1000.0 / getTickFrequency();
    return rows;
}

int MultimodalPrompter::rowsOf(const Mat& bgr)
{
    const Mat pixels = preprocessImage(bgr, encoder_.hparams());
    // The preprocessed pixels identify the image (same pixels, same embeddings).
    const std::string digest((const char*)pixels.data, pixels.total() * pixels.elemSize());
    auto it = known_.find(digest);
    if (it != known_.end())
        return it->second;
    const int64 t0 = getTickCount();
    const Mat rows = encoder_.encode(pixels);
    lastEncodeMs_ = (getTickCount() - t0) * 1000.0 / getTickFrequency();
    const int first = table_.rows;
    Mat grown(first + rows.rows, rows.cols, CV_32F);
    if (first)
        table_.copyTo(grown.rowRange(0, first));
    rows.copyTo(grown.rowRange(first, grown.rows));
    table_ = grown;
    embedding_->setExternalRows(table_);
    known_.emplace(digest, first);
    return first;
}

std::vector<int> MultimodalPrompter::encode(const std::string& text, bool addSpecial, bool parseSpecial)
{
    std::vector<int> ids;
    size_t start = 0, used = 0;
    while (true)
    {
        const size_t pos = text.find(marker_, start);
        const std::string piece = text.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
        if (!piece.empty())
        {
            const std::vector<int> t = tokenizer_->encode(piece, false, parseSpecial);
            ids.insert(ids.end(), t.begin(), t.end());
        }
        if (pos == std::string::npos)
            break;
        if (used >= images_.size())
            CV_Error(Error::StsBadArg, format("TextGenerationModel: the prompt has more image markers (%s) than images (%zu)",
                                              marker_.c_str(), images_.size()));
        const int first = rowsOf(images_[used++]);
        for (int i = 0; i < encoder_.hparams().imageTokens(); i++)
            ids.push_back(-1 - (first + i));
        start = pos + marker_.size();
    }
    if (used != images_.size())
        CV_Error(Error::StsBadArg, format("TextGenerationModel: %zu images but %zu image markers (%s) in the prompt",
                                          images_.size(), used, marker_.c_str()));
    if (addSpecial && tokenizer_->addBos() && tokenizer_->bosId() >= 0)
        ids.insert(ids.begin(), tokenizer_->bosId());
    if (addSpecial && tokenizer_->addEos() && tokenizer_->eosId() >= 0)
        ids.push_back(tokenizer_->eosId());
    return ids;
}

}}} // namespace cv::dnn::llm
