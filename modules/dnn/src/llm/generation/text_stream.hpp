// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_TEXT_STREAM_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_TEXT_STREAM_HPP

#include <opencv2/core.hpp>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** Turns the bytes of generated tokens into text that is safe to show: it releases only whole
    UTF-8 characters (bytes that form none, such as two lead bytes in a row, come out as
    U+FFFD), and holds back any tail that could be the start of a stop string, so that a stop
    string never reaches the reader. */
class CV_EXPORTS TextStream  // exported (though internal) for the C++ tests
{
public:
    explicit TextStream(const std::vector<std::string>& stopStrings = std::vector<std::string>());

    //! Adds the bytes of one token; returns the text that can be released now.
    std::string push(const std::string& bytes);
    //! True once a stop string has appeared (the text before it has been released).
    bool stopped() const { return stopped_; }
    //! Releases what is held back (at the end of generation; an incomplete character as U+FFFD).
    std::string flush();
    //! Everything released so far.
    const std::string& text() const { return released_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;   // bytes not released yet
    std::string released_;
    bool stopped_ = false;
};

//! Length of the longest prefix of s made of whole UTF-8 characters (an invalid byte counts
//! as a character of its own, so nothing is held back forever).
CV_EXPORTS size_t completeUtf8Prefix(const std::string& s);

}}} // namespace cv::dnn::llm

#endif
