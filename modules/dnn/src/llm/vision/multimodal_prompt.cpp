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
    if (encoder_.hparams().projector == VisionProjector::Idefics3)
    {
        // libmtmd's mtmd_context for PROJECTOR_TYPE_IDEFICS3
        const int around = lookupToken("<fake_token_around_image>"), global = lookupToken("<global-img>");
        idefics3OverviewStart_ = {lookupToken("\n\n"), around, global};
        idefics3OverviewEnd_ = {around};
        idefics3RowEnd_ = {lookupToken("\n")};
    }
}

int MultimodalPrompter::lookupToken(const std::string& text) const
{
    for (int id = 0; id < tokenizer_->vocabSize(); id++)
        if (tokenizer_->tokenToPiece(id, true) == text)
            return id;
    std::string shown;
    for (char c : text)
        shown += c == '\n' ? std::string("\\n") : std::string(1, c);
    CV_Error(Error::StsBadArg, format("TextGenerationModel: the mmproj's projector (%s) needs the token \"%s\", which the "
                                      "language model's vocabulary does not have: not a matching pair",
                                      encoder_.hparams().projectorName.c_str(), shown.c_str()));
}

Mat MultimodalPrompter::embed(const Mat& bgr)
{
    if (tiled())
        return tiledEntry(bgr).rows;  // tiles row by row, then the overview
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

MultimodalPrompter::ImageEntry MultimodalPrompter::tiledEntry(const Mat& bgr)
{
    const VisionHyperParameters& hp = encoder_.hparams();
    const bool idefics3 = hp.projector == VisionProjector::Idefics3;
    const ImageTiles tiles = idefics3 ? preprocessIdefics3(bgr, hp) : preprocessLlavaTiles(bgr, hp);
    ImageEntry e;
    std::string all;
    for (const Mat& t : tiles.tiles)
        all += pixelDigest(t);
    e.digest = "tiles:" + pixelDigest(tiles.overview) + all;
    for (const ImageEntry& r : recent_)
        if (r.digest == e.digest)
            return r;
    const int64 t0 = getTickCount();
    std::vector<Mat> rows;
    for (const Mat& t : tiles.tiles)
        rows.push_back(encoder_.encode(t));
    rows.push_back(encoder_.encode(tiles.overview));
    lastEncodeMs_ = (getTickCount() - t0) * 1000.0 / getTickFrequency();
    vconcat(rows, e.rows);

    // mtmd_tokenizer::add_media: tiles first (ov_img_first = false), row ends between rows of
    // tiles only, then the overview; llava-1.6 has no marker tokens at all.
    int row = 0;
    auto addRows = [&](int n) {
        for (int i = 0; i < n; i++)
            e.layout.push_back(-1 - row++);
    };
    for (int y = 0; y < tiles.rows; y++)
    {
        for (int x = 0; x < tiles.cols; x++)
        {
            if (idefics3)
            {
                const std::vector<int> marker = tokenizer_->encode(
                    format("<fake_token_around_image><row_%d_col_%d>", y + 1, x + 1), false, true);
                e.layout.insert(e.layout.end(), marker.begin(), marker.end());
            }
            addRows(rows[y * tiles.cols + x].rows);
        }
        if (y != tiles.rows - 1)
            e.layout.insert(e.layout.end(), idefics3RowEnd_.begin(), idefics3RowEnd_.end());
    }
    e.layout.insert(e.layout.end(), idefics3OverviewStart_.begin(), idefics3OverviewStart_.end());
    addRows(rows.back().rows);
    e.layout.insert(e.layout.end(), idefics3OverviewEnd_.begin(), idefics3OverviewEnd_.end());
    return e;
}

MultimodalPrompter::ImageEntry MultimodalPrompter::entryOf(const Mat& bgr, const std::string& knownDigest)
{
    if (!knownDigest.empty())
    {
        const auto it = restored_.find(knownDigest);
        if (it != restored_.end())
            return it->second;
        for (const ImageEntry& r : recent_)
            if (r.digest == knownDigest)
                return r;
        if (bgr.empty())
            CV_Error(Error::StsError, "TextGenerationModel: an image of a loaded session is no longer known "
                                      "(its embeddings were not restored)");
    }
    return entryOf(bgr);
}

void MultimodalPrompter::restore(const std::vector<ImageEntry>& committed, const std::vector<ImageEntry>& known)
{
    committedEntries_ = committed;
    committed_.clear();
    std::vector<Mat> rows;
    for (const ImageEntry& e : committed)
    {
        committed_.emplace_back(e.digest, e.rows.rows);
        rows.push_back(e.rows);
    }
    committedTable_.release();
    if (!rows.empty())
        vconcat(rows, committedTable_);
    restored_.clear();
    for (const ImageEntry& e : known)
        restored_[e.digest] = e;
}

MultimodalPrompter::ImageEntry MultimodalPrompter::entryOf(const Mat& bgr)
{
    ImageEntry e;
    if (tiled())
        e = tiledEntry(bgr);
    else
    {
        const Mat pixels = preprocessImage(bgr, encoder_.hparams());
        e.digest = pixelDigest(pixels);
        auto it = std::find_if(recent_.begin(), recent_.end(), [&](const ImageEntry& r) { return r.digest == e.digest; });
        if (it != recent_.end())
            e = *it;
        else
        {
            const int64 t0 = getTickCount();
            e.rows = encoder_.encode(pixels);
            lastEncodeMs_ = (getTickCount() - t0) * 1000.0 / getTickFrequency();
            std::vector<int> before, after;  // gemma3's <start_of_image> / <end_of_image>
            imageWrappers(before, after);
            e.layout = before;
            for (int i = 0; i < e.rows.rows; i++)
                e.layout.push_back(-1 - i);
            e.layout.insert(e.layout.end(), after.begin(), after.end());
        }
    }
    auto it = std::find_if(recent_.begin(), recent_.end(), [&](const ImageEntry& r) { return r.digest == e.digest; });
    if (it != recent_.end())
        recent_.erase(it);
    recent_.push_front(e);
    const size_t kKeep = 8;  // images whose embeddings are kept beyond the current prompt
    if (recent_.size() > kKeep)
        recent_.pop_back();
    return e;
}

std::vector<int> MultimodalPrompter::encode(const std::string& text, bool addSpecial, bool parseSpecial)
{
    std::vector<int> ids;
    std::vector<Mat> rows;
    std::vector<ImageEntry> entries;
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
        const size_t k = rows.size();
        const ImageEntry e = entryOf(images_[k], k < digests_.size() ? digests_[k] : std::string());
        entries.push_back(e);
        rows.push_back(e.rows);
        digests.push_back(e.digest);
        for (int id : e.layout)
            ids.push_back(id >= 0 ? id : id - tableRows);
        tableRows += e.rows.rows;
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
    tableEntries_ = entries;
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
