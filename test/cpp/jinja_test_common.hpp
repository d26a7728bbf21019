// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Shared by the Jinja engine tests: render options with strftime_now fixed to a moment of the
// reference data.
#ifndef OPENCV_DNN_LLM_TEST_JINJA_TEST_COMMON_HPP
#define OPENCV_DNN_LLM_TEST_JINJA_TEST_COMMON_HPP

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <string>

#include "../../modules/dnn/src/llm/jinja/template.hpp"

namespace llm_test {

//! Render options whose strftime_now returns `isoTime` ("2026-01-15T09:30:05", naive local time).
inline cv::dnn::llm::jinja::RenderOptions jinjaOptionsAt(const std::string& isoTime)
{
    cv::dnn::llm::jinja::RenderOptions options;
    options.fixedTime = true;
    std::tm t = std::tm();
    EXPECT_EQ(sscanf(isoTime.c_str(), "%d-%d-%dT%d:%d:%d", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour, &t.tm_min,
                     &t.tm_sec), 6) << isoTime;
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    std::tm normalized = t;
    timegm(&normalized);  // fills in the weekday and the day of the year
    t.tm_wday = normalized.tm_wday;
    t.tm_yday = normalized.tm_yday;
    options.time = t;
    return options;
}

} // namespace llm_test

#endif
