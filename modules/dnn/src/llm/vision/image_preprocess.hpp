// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// An image as a vision encoder takes it, prepared as llama.cpp's libmtmd prepares it for the
// projector (mtmd-image.cpp): for llava's `mlp` without grid pinpoints, the image is fitted
// into image_size x image_size keeping its aspect ratio (sizes rounded up), centred on a
// (122, 116, 104) RGB background, then scaled to [0, 1] and normalized per channel by the
// file's image_mean / image_std. gemma3: the same, with Pillow's bilinear filter and a black
// background (libmtmd's fixed-size preprocessor with RESIZE_ALGO_BILINEAR). Idefics3 and
// llava-1.6 tile the image instead (preprocessIdefics3, preprocessLlavaTiles).

#ifndef OPENCV_DNN_SRC_LLM_VISION_IMAGE_PREPROCESS_HPP
#define OPENCV_DNN_SRC_LLM_VISION_IMAGE_PREPROCESS_HPP

#include "mmproj_file.hpp"

namespace cv {
namespace dnn {
namespace llm {

/** `bgr`: 3-channel BGR (as imread gives), CV_8U, or CV_32F / CV_64F with values in [0, 1]
    (converted to 8 bits first, as libmtmd works on 8-bit images); any size. Returns a
    1 x 3 x S x S float blob of normalized RGB. Other types are refused naming the type. */
Mat preprocessImage(const Mat& bgr, const VisionHyperParameters& hp);

enum class PillowFilter { Bilinear, Bicubic, Lanczos };

/** The resampling libmtmd uses (Pillow's, anti-aliased when shrinking, 8-bit fixed-point;
    bilinear (gemma3), bicubic with a = -0.5 (llava) or Lanczos with a = 3 (idefics3)) of an
    8-bit RGB image to `size`. */
Mat resizePillow(const Mat& rgb, Size size, PillowFilter filter);
Mat resizeBicubicPillow(const Mat& rgb, Size size);

/** Idefics3's tiles (libmtmd's mtmd_image_preprocessor_idefics3): the image resized (Lanczos)
    so that its longer side is clip.vision.preproc_image_size, then to whole tiles of
    image_size, cut into `rows` x `cols` tiles (row by row), plus the overview (the tiled image
    resized to one tile). Each as preprocessImage's blob. */
struct ImageTiles
{
    std::vector<Mat> tiles;
    Mat overview;
    int rows = 0, cols = 0;
};
ImageTiles preprocessIdefics3(const Mat& bgr, const VisionHyperParameters& hp);

/** llava-1.6's tiles (libmtmd's mtmd_image_preprocessor_llava_uhd with
    clip.vision.image_grid_pinpoints): an image larger than one tile is fitted (bicubic, sizes
    rounded up, centred on black) into the pinpoint resolution that keeps the most of it, and
    cut into image_size tiles; the overview is the image stretched to one tile. An image that
    fits in one tile gives the overview only (no tiles). */
ImageTiles preprocessLlavaTiles(const Mat& bgr, const VisionHyperParameters& hp);

}}} // namespace cv::dnn::llm

#endif
