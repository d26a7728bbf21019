// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Shared by the vision-language model tests (test_vision_projectors.cpp,
// test_vision_batches_sessions.cpp): the generated models, libmtmd's records
// (test/data/oracle/vision/README.md) and the test image they were computed on.
#ifndef OPENCV_DNN_LLM_TEST_VISION_TEST_COMMON_HPP
#define OPENCV_DNN_LLM_TEST_VISION_TEST_COMMON_HPP

#include <opencv2/core.hpp>
#include <opencv2/dnn/text_generation.hpp>
#include <opencv2/imgproc.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_common.hpp"

namespace llm_test {

//! A model made by test/tools/make_vision_models.py (build/test-models/vision/<name>).
inline std::string visionModel(const std::string& name)
{
    return testModel("vision/" + name);
}

//! A libmtmd record of test/data/oracle/vision.
inline nlohmann::json oracle(const std::string& name)
{
    const std::string path = projectRoot() + "/test/data/oracle/vision/" + name;
    std::ifstream f(path);
    if (!f)
        throw std::runtime_error("cannot open " + path);
    return nlohmann::json::parse(f);
}

//! The test image, as tools/vision/make_test_image.py draws it (BGR).
inline cv::Mat drawTestImage(int w, int h)
{
    using namespace cv;
    Mat img(h, w, CV_8UC3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            img.at<Vec3b>(y, x) = Vec3b((uchar)(x * 255 / std::max(1, w - 1)), (uchar)(y * 255 / std::max(1, h - 1)), 40);
    circle(img, Point(w / 3, h / 2), std::min(w, h) / 4, Scalar(30, 30, 220), -1, LINE_AA);
    rectangle(img, Point(w / 2, h / 6), Point(w - 4, h / 2), Scalar(255, 255, 255), 2);
    line(img, Point(0, h - 1), Point(w - 1, 0), Scalar(0, 255, 255), 1, LINE_AA);
    std::vector<Point> tri{Point(w * 2 / 3, h - 3), Point(w - 3, h - 3), Point(w * 5 / 6, h * 2 / 3)};
    fillPoly(img, std::vector<std::vector<Point>>{tri}, Scalar(20, 60, 20));
    return img;
}

//! Greedy decoding of n tokens, past EOS.
inline cv::dnn::GenerationConfig greedy(int n)
{
    cv::dnn::GenerationConfig c;
    c.maxNewTokens = n;
    c.ignoreEndOfGeneration = true;  // the oracle's ids continue past EOS
    return c;
}

//! The message of the cv::Exception f throws, or "(no error)".
inline std::string errorOf(const std::function<void()>& f)
{
    try
    {
        f();
    }
    catch (const cv::Exception& e)
    {
        return e.what();
    }
    return "(no error)";
}

} // namespace llm_test

#endif
