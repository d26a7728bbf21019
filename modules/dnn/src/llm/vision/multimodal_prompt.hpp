// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Prompts with images for TextGenerationModel(model, mmproj): the text is split at the media
// marker (llama.cpp's "<__media__>"), each piece tokenized on its own without BOS, each marker
// replaced by the next image's embedding rows, and BOS put first when the model adds it, as
// libmtmd's mtmd_tokenize does: for llava no wrapper tokens around the image, and the image's
// tokens take consecutive positions under the causal mask like text; for gemma3 the image is
// wrapped in <start_of_image> ... <end_of_image> (each tokenized on its own, special tokens
// parsed) and its rows attend to each other both ways (nonCausalSpans()).
//
// An image's rows enter the language model's Net through its token-embedding layer: the
// prompt carries ids -1, -2, ... that stand for rows of the table of the prompt's image
// embeddings, in the order of the images (LLMTokenEmbeddingLayer::setExternalRows). The table
// holds the current prompt's images only; the embeddings of the last few images are kept, so
// an image is encoded once while it is in use (the next chat turn repeats it). A later prompt
// whose images are the same, in the same order, has the same ids and shares the KV cache's
// prefix like repeated text; firstChangedRow() tells the caller where the rows' meaning
// changed, so that it does not reuse keys and values computed from another image.
// generateBatch keeps each prompt's table (table()) and puts it back before that prompt's
// prefill (useTable()); a session saves the committed table with its images' digests and
// restore() brings them back, the conversation's images then named by digest (setImages()).

#ifndef OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP
#define OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP

#include "vision_encoder.hpp"
#include "../llm_layers.hpp"
#include "../tokenizer/tokenizer.hpp"

#include <climits>
#include <list>
#include <map>

namespace cv {
namespace dnn {
namespace llm {

class MultimodalPrompter
{
public:
    /** Checks that the projector's output width is the language model's embedding width and
        attaches the image table to `languageModel`'s token-embedding layer. */
    MultimodalPrompter(const std::string& mmprojPath, Net& languageModel, std::shared_ptr<Tokenizer> tokenizer);

    /** The images the next encode() puts at the markers, in order. `digests` (optional, may be
        shorter): a non-empty digests[i] names image i by the digest of its pixels instead
        (images[i] may be empty): its embeddings come from a loaded session (pin()). */
    void setImages(const std::vector<Mat>& images, const std::vector<std::string>& digests = std::vector<std::string>())
    {
        images_ = images;
        digests_ = digests;
    }
    //! The text's ids with image rows at its markers (see above); `addSpecial`: BOS / EOS as the model asks.
    std::vector<int> encode(const std::string& text, bool addSpecial, bool parseSpecial);
    //! The ids of an image's wrapper tokens, before and after its rows (gemma3: <start_of_image>, <end_of_image>).
    void imageWrappers(std::vector<int>& before, std::vector<int>& after) const;
    //! Image embeddings of one BGR image (rows of the language model's width).
    Mat embed(const Mat& bgr);

    VisionEncoder& encoder() { return encoder_; }
    const std::string& marker() const { return marker_; }
    //! Whether `id` stands for an image row.
    static bool isImageId(int id) { return id < 0; }
    double lastEncodeMs() const { return lastEncodeMs_; }
    /** The first row of the last encode()'s table whose image differs from the table of the
        last commit() (INT_MAX: none): ids from there on meant other images when they were fed. */
    int firstChangedRow() const;
    //! The last encode()'s rows went through the Net (the KV cache holds what they meant).
    void commit()
    {
        committed_ = table_digests_;
        committedTable_ = table_;
    }
    //! The last encode()'s table, and (digest, rows) of each of its images.
    const Mat& table() const { return table_; }
    const std::vector<std::pair<std::string, int>>& tableImages() const { return table_digests_; }
    //! Puts `table` (a table of an earlier encode()) into the token-embedding layer (batches).
    void useTable(const Mat& table) { embedding_->setExternalRows(table); }
    //! The table of the last commit() and (digest, rows) of its images: what fed image ids mean.
    const Mat& committedTable() const { return committedTable_; }
    const std::vector<std::pair<std::string, int>>& committedImages() const { return committed_; }
    /** A loaded session: the fed image ids mean the rows of `table`, made of `images`; and
        `embeddings` (digest -> rows) serve setImages()'s digests. */
    void restore(const Mat& table, const std::vector<std::pair<std::string, int>>& images,
                 const std::map<std::string, Mat>& embeddings)
    {
        committedTable_ = table;
        committed_ = images;
        pinned_ = embeddings;
    }
    /** `bgr`'s embeddings and the digest of its preprocessed pixels; with a `knownDigest`
        (setImages()'s digests), the embeddings pinned or kept under it. */
    Mat embeddingsOf(const Mat& bgr, const std::string& knownDigest, std::string& digest);
    /** Ranges of `ids` (a part of the last encode()'s ids) that must attend among themselves
        both ways: each image's rows for gemma3 (libmtmd's mtmd_decode_use_non_causal), none
        for llava. */
    std::vector<Range> nonCausalSpans(const std::vector<int>& ids) const;

private:

    VisionEncoder encoder_;
    std::shared_ptr<Tokenizer> tokenizer_;
    Ptr<LLMTokenEmbeddingLayer> embedding_;
    std::string marker_ = "<__media__>";
    std::vector<Mat> images_;
    std::vector<std::string> digests_;      // setImages()'s
    Mat table_, committedTable_;            // the current prompt's image rows; those last fed
    // (digest, rows) of each image of the table, in order; and of the table last fed.
    std::vector<std::pair<std::string, int>> table_digests_, committed_;
    std::list<std::pair<std::string, Mat>> recent_;  // digest -> embeddings, most recent first
    std::map<std::string, Mat> pinned_;     // a loaded session's images
    double lastEncodeMs_ = 0;
};

}}} // namespace cv::dnn::llm

#endif
