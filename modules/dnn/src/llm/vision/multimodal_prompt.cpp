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
    // llama.cpp feeds image embeddings after the token-embedding scale (Gemma's sqrt(n_embd)).
    // gemma3's GGUF Net scales token rows in its embedding layer (image rows bypass it); the
    // others (gemma, gemma2, granite) scale every row in a layer of its own: not supported.
    if (languageModel.getLayerId("token_embd_scale") >= 0)
        CV_Error(Error::StsNotImplemented, "TextGenerationModel: images with a language model that scales all its "
                                           "input embeddings (gemma, gemma2, granite) are not supported");
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

// A 128-bit digest of the preprocessed pixels (two FNV-1a hashes): same pixels, same embeddings.
static std::string pixelDigest(const Mat& pixels)
{
    const uchar* p = pixels.data;
    const size_t n = pixels.total() * pixels.elemSize();
    uint64 a = 1469598103934665603ULL, b = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < n; i++)
    {
        a = (a ^ p[i]) * 1099511628211ULL;
        b = (b ^ p[i]) * 0x100000001b3ULL + (b >> 29);
    }
    return format("%016llx%016llx:%zu", (unsigned long long)a, (unsigned long long)b, n);
}

Mat MultimodalPrompter::embeddingsOf(const Mat& bgr, const std::string& knownDigest, std::string& digest)
{
    if (!knownDigest.empty())
    {
        digest = knownDigest;
        const auto pinned = pinned_.find(digest);
        if (pinned != pinned_.end())
            return pinned->second;
        for (const auto& r : recent_)
            if (r.first == digest)
                return r.second;
        if (bgr.empty())
            CV_Error(Error::StsError, "TextGenerationModel: an image of a loaded session is no longer known "
                                      "(its embeddings were not restored)");
    }
    const Mat pixels = preprocessImage(bgr, encoder_.hparams());
    digest = pixelDigest(pixels);
    const auto pinned = pinned_.find(digest);
    if (pinned != pinned_.end())
        return pinned->second;
    for (auto it = recent_.begin(); it != recent_.end(); ++it)
        if (it->first == digest)
        {
            recent_.splice(recent_.begin(), recent_, it);
            return it->second;
        }
    const int64 t0 = getTickCount();
    const Mat rows = encoder_.encode(pixels);
    lastEncodeMs_ = (getTickCount() - t0) * 1000.0 / getTickFrequency();
    recent_.emplace_front(digest, rows);
    const size_t kKeep = 8;  // images whose embeddings are kept beyond the current prompt
    if (recent_.size() > kKeep)
        recent_.pop_back();
    return rows;
}

std::vector<int> MultimodalPrompter::encode(const std::string& text, bool addSpecial, bool parseSpecial)
{
    std::vector<int> ids;
    std::vector<Mat> rows;
    std::vector<std::string> digests;
    int tableRows = 0;
    size_t start = 0;
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
        if (rows.size() >= images_.size())
            CV_Error(Error::StsBadArg, format("TextGenerationModel: the prompt has more image markers (%s) than images (%zu)",
                                              marker_.c_str(), images_.size()));
        std::string digest;
        const size_t k = rows.size();
        rows.push_back(embeddingsOf(images_[k], k < digests_.size() ? digests_[k] : std::string(), digest));
        digests.push_back(digest);
        std::vector<int> before, after;
        imageWrappers(before, after);
        ids.insert(ids.end(), before.begin(), before.end());
        for (int i = 0; i < rows.back().rows; i++)
            ids.push_back(-1 - (tableRows + i));
        tableRows += rows.back().rows;
        ids.insert(ids.end(), after.begin(), after.end());
        start = pos + marker_.size();
    }
    if (rows.size() != images_.size())
        CV_Error(Error::StsBadArg, format("TextGenerationModel: %zu images but %zu image markers (%s) in the prompt",
                                          images_.size(), rows.size(), marker_.c_str()));
    if (addSpecial && tokenizer_->addBos() && tokenizer_->bosId() >= 0)
        ids.insert(ids.begin(), tokenizer_->bosId());
    if (addSpecial && tokenizer_->addEos() && tokenizer_->eosId() >= 0)
        ids.push_back(tokenizer_->eosId());

    Mat table;
    if (!rows.empty())
        vconcat(rows, table);
    table_ = table;
    table_digests_.clear();
    for (size_t i = 0; i < digests.size(); i++)
        table_digests_.emplace_back(digests[i], rows[i].rows);
    embedding_->setExternalRows(table_);
    return ids;
}

// mtmd.cpp: gemma3's img_beg / img_end, each added with mtmd_tokenize_text_internal(vocab,
// text, add_special = false, parse_special = true).
void MultimodalPrompter::imageWrappers(std::vector<int>& before, std::vector<int>& after) const
{
    before.clear();
    after.clear();
    if (encoder_.hparams().projector == VisionProjector::Gemma3)
    {
        before = tokenizer_->encode("<start_of_image>", false, true);
        after = tokenizer_->encode("<end_of_image>", false, true);
    }
}

std::vector<Range> MultimodalPrompter::nonCausalSpans(const std::vector<int>& ids) const
{
    std::vector<Range> spans;
    if (encoder_.hparams().projector != VisionProjector::Gemma3)
        return spans;
    // The image each table row belongs to: rows of one image are consecutive ids.
    std::vector<int> imageOfRow;
    for (size_t i = 0; i < table_digests_.size(); i++)
        imageOfRow.insert(imageOfRow.end(), table_digests_[i].second, (int)i);
    for (int t = 0; t < (int)ids.size();)
    {
        if (!isImageId(ids[t]))
        {
            t++;
            continue;
        }
        const int row = -1 - ids[t];
        CV_Assert(row < (int)imageOfRow.size());
        int end = t + 1;
        while (end < (int)ids.size() && isImageId(ids[end]) && -1 - ids[end] == -1 - ids[end - 1] + 1 &&
               imageOfRow[-1 - ids[end]] == imageOfRow[row])
            end++;
        spans.emplace_back(t, end);
        t = end;
    }
    return spans;
}

int MultimodalPrompter::firstChangedRow() const
{
    int row = 0;
    for (size_t i = 0; i < std::max(table_digests_.size(), committed_.size()); i++)
    {
        if (i >= table_digests_.size() || i >= committed_.size() || table_digests_[i] != committed_[i])
            return row;
        row += table_digests_[i].second;
    }
    return INT_MAX;
}

}}} // namespace cv::dnn::llm
