// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Prompts with images for TextGenerationModel(model, mmproj): the text is split at the media
// marker (llama.cpp's "<__media__>"), each piece tokenized on its own without BOS, each marker
// replaced by the next image's embedding rows, and BOS put first when the model adds it, as
// libmtmd's mtmd_tokenize does for llava (no wrapper tokens around the image; the image's
// tokens take consecutive positions under the causal mask like text).
//
// An image's rows enter the language model's Net through its token-embedding layer: the
// prompt carries ids -1, -2, ... that stand for rows of a table of image embeddings
// (LLMTokenEmbeddingLayer::setExternalRows). An image is encoded once: the same pixels get the
// same rows and ids again, so a later prompt that repeats it (the next chat turn) shares the
// KV cache's prefix like repeated text.

#ifndef OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP
#define OPENCV_DNN_SRC_LLM_VISION_MULTIMODAL_PROMPT_HPP

#include "vision_encoder.hpp"
#include "../llm_layers.hpp"
#include "../tokenizer/tokenizer.hpp"

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

    //! The images the next encode() puts at the markers, in order.
    void setImages(const std::vector<Mat>& images) { images_ = images; }
    //! The text's ids with image rows at its markers (see above); `addSpecial`: BOS / EOS as the model asks.
    std::vector<int> encode(const std::string& text, bool addSpecial, bool parseSpecial);
    //! Image embeddings of one BGR image (rows of the language model's width).
    Mat embed(const Mat& bgr);

    VisionEncoder& encoder() { return encoder_; }
    const std::string& marker() const { return marker_; }
    //! Whether `id` stands for an image row.
    static bool isImageId(int id) { return id < 0; }
    double lastEncodeMs() const { return lastEncodeMs_; }

private:
    //! The first table row of `bgr`'s embeddings (encoding it when it is new).
    int rowsOf(const Mat& bgr);

    VisionEncoder encoder_;
    std::shared_ptr<Tokenizer> tokenizer_;
    Ptr<LLMTokenEmbeddingLayer> embedding_;
    std::string marker_ = "<__media__>";
    std::vector<Mat> images_;
    Mat table_;                            // image rows, appended
    std::map<std::string, int> known_;     // preprocessed pixels' digest -> first row
    double lastEncodeMs_ = 0;
};

}}} // namespace cv::dnn::llm

#endif
