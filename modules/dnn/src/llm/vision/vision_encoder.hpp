// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// An mmproj file's vision encoder and projector as one cv::dnn Net: image (1 x 3 x S x S,
// normalized RGB) in, one row of the language model's embedding width per image token out.

#ifndef OPENCV_DNN_SRC_LLM_VISION_VISION_ENCODER_HPP
#define OPENCV_DNN_SRC_LLM_VISION_VISION_ENCODER_HPP

#include "mmproj_file.hpp"

namespace cv {
namespace dnn {
namespace llm {

class VisionEncoder
{
public:
    explicit VisionEncoder(const std::string& mmprojPath);

    const VisionHyperParameters& hparams() const { return file_->hparams(); }
    //! The projector's output width (must equal the language model's n_embd).
    int outputEmbd() const { return hparams().outputEmbd; }

    //! Image embeddings of a preprocessed image (image_preprocess.hpp): imageTokens() x outputEmbd().
    Mat encode(const Mat& pixels);
    //! Preprocesses a BGR image (8-bit or float in [0, 1]) and encodes it.
    Mat encodeImage(const Mat& bgr);

    Net& net() { return net_; }

private:
    void build();

    std::shared_ptr<MMProjFile> file_;
    Net net_;
    bool roundPixelsToF16_ = false;  // llama.cpp's patch embedding rounds the pixels to F16
};

}}} // namespace cv::dnn::llm

#endif
