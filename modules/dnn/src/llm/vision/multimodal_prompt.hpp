// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Prompts with images for TextGenerationModel(model, mmproj): the text is split at the media
// marker (llama.cpp's "<__media__>"), each piece tokenized on its own without BOS, each marker
// replaced by the next image's embedding rows, and BOS put first when the model adds it, as
// libmtmd's mtmd_tokenize does: for llava no wrapper tokens around the image, and the image's
// tokens take consecutive positions under the causal mask like text; for gemma3 the image is
// wrapped in <start_of_image> ... <end_of_image> (each tokenized on its own, special tokens
// parsed) and its rows attend to each other both ways (nonCausalSpans()). Idefics3 (SmolVLM)
// puts each tile's rows after "<fake_token_around_image><row_R_col_C>" (tokenized with
// special tokens), "\n" after each row of tiles but the last, then "\n\n",
// "<fake_token_around_image>", "<global-img>" (single tokens looked up by their piece, as
// libmtmd's lookup_token), the overview's rows and "<fake_token_around_image>", causal like
// text. llava-1.6 (image_grid_pinpoints) puts the tiles' rows and then the overview's, with
// no tokens between.
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
// prefill (useTable()); a session saves the committed images (committedEntries()) and the
// conversation's, and restore() brings them back, the conversation's images then named by
// digest (setImages()).

#ifndef OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP
#define OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP

#include "vision_encoder.hpp"
#include "../layers/llm_layers.hpp"
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

    /** One image's part of the prompt: its embedding rows and the ids that stand for it, where
        -1 - k is its row k and ids >= 0 are wrapper tokens (gemma3's, idefics3's tile markers). */
    struct ImageEntry
    {
        std::string digest;
        Mat rows;
        std::vector<int> layout;
    };

    /** The images the next encode() puts at the markers, in order. `digests` (optional, may be
        shorter): a non-empty digests[i] names image i by its digest instead (images[i] may be
        empty): its entry comes from a loaded session (restore()) or the recent images. */
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
        committedEntries_ = tableEntries_;
        committedTable_ = table_;
    }
    //! The last encode()'s table, and (digest, rows) of each of its images.
    const Mat& table() const { return table_; }
    const std::vector<std::pair<std::string, int>>& tableImages() const { return table_digests_; }
    //! Puts `table` (a table of an earlier encode()) into the token-embedding layer (batches).
    void useTable(const Mat& table) { embedding_->setExternalRows(table); }
    //! The table of the last commit() and its images (what fed image ids mean).
    const Mat& committedTable() const { return committedTable_; }
    const std::vector<ImageEntry>& committedEntries() const { return committedEntries_; }
    /** A loaded session: the fed image ids mean the rows of the `committed` images' table, and
        the `known` images serve setImages()'s digests. */
    void restore(const std::vector<ImageEntry>& committed, const std::vector<ImageEntry>& known);
    /** `bgr`'s entry (from the recent images or encoded); with a `knownDigest` (setImages()'s
        digests), the entry restored or kept under it. */
    ImageEntry entryOf(const Mat& bgr, const std::string& knownDigest);
    /** Ranges of `ids` (a part of the last encode()'s ids) that must attend among themselves
        both ways: each image's rows for gemma3 (libmtmd's mtmd_decode_use_non_causal), none
        for llava. */
    std::vector<Range> nonCausalSpans(const std::vector<int>& ids) const;

private:
    //! `bgr`'s entry, from the cache of recent images or encoded.
    ImageEntry entryOf(const Mat& bgr);
    //! Idefics3 and llava-1.6: the tiles and the overview encoded, with libmtmd's markers around them.
    ImageEntry tiledEntry(const Mat& bgr);
    bool tiled() const
    {
        return encoder_.hparams().projector == VisionProjector::Idefics3 || !encoder_.hparams().gridPinpoints.empty();
    }
    //! The first id whose piece is `text` (libmtmd's lookup_token), or an error naming it.
    int lookupToken(const std::string& text) const;

    VisionEncoder encoder_;
    std::shared_ptr<Tokenizer> tokenizer_;
    Ptr<LLMTokenEmbeddingLayer> embedding_;
    std::string marker_ = "<__media__>";
    std::vector<Mat> images_;
    std::vector<std::string> digests_;      // setImages()'s
    Mat table_, committedTable_;            // the current prompt's image rows; those last fed
    std::vector<ImageEntry> tableEntries_, committedEntries_;  // their images
    // (digest, rows) of each image of the table, in order; and of the table last fed.
    std::vector<std::pair<std::string, int>> table_digests_, committed_;
    std::list<ImageEntry> recent_;          // most recent first
    std::map<std::string, ImageEntry> restored_;  // a loaded session's images, by digest
    std::vector<int> idefics3OverviewStart_, idefics3OverviewEnd_, idefics3RowEnd_;
    double lastEncodeMs_ = 0;
};

}}} // namespace cv::dnn::llm

#endif
