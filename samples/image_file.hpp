// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Reading the samples' images.

#ifndef LLM_SAMPLES_IMAGE_FILE_HPP
#define LLM_SAMPLES_IMAGE_FILE_HPP

#include <opencv2/imgcodecs.hpp>

#include <string>

//! An image file (PNG, JPEG, PPM, ...) as a BGR Mat, or an error naming the file.
inline cv::Mat readImage(const std::string& path)
{
    const cv::Mat image = cv::imread(path, cv::IMREAD_COLOR);
    if (image.empty())
        CV_Error(cv::Error::StsError, "cannot read the image '" + path + "' (imread: missing file or unknown format)");
    return image;
}

#endif
