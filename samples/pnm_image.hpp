// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Binary PPM / PGM (P6 / P5, 8-bit) as a BGR cv::Mat, for the samples: this project's OpenCV
// build has no imgcodecs (no imread). Convert other formats first, e.g. with
// `python3 -c "from PIL import Image; Image.open('in.jpg').convert('RGB').save('out.ppm')"`.

#ifndef LLM_SAMPLES_PNM_IMAGE_HPP
#define LLM_SAMPLES_PNM_IMAGE_HPP

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>
#include <string>

inline cv::Mat readPNM(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
        CV_Error(cv::Error::StsError, "cannot open image '" + path + "'");
    std::string magic;
    f >> magic;
    if (magic != "P6" && magic != "P5")
        CV_Error(cv::Error::StsNotImplemented, "image '" + path + "' is not a binary PPM/PGM (P6/P5); this OpenCV build "
                                               "reads no other format (no imgcodecs): convert it to .ppm first");
    int w = 0, h = 0, maxval = 0;
    auto next = [&](int& v) {
        f >> std::ws;
        while (f.peek() == '#')
        {
            std::string comment;
            std::getline(f, comment);
            f >> std::ws;
        }
        f >> v;
    };
    next(w);
    next(h);
    next(maxval);
    f.get();
    if (!f || w <= 0 || h <= 0 || maxval != 255)
        CV_Error(cv::Error::StsParseError, "image '" + path + "': an 8-bit PPM/PGM header was expected");
    const int channels = magic == "P6" ? 3 : 1;
    cv::Mat raw(h, w, CV_8UC(channels));
    f.read((char*)raw.data, (std::streamsize)raw.total() * channels);
    if (!f)
        CV_Error(cv::Error::StsParseError, "image '" + path + "' is truncated");
    cv::Mat bgr;
    cv::cvtColor(raw, bgr, channels == 3 ? cv::COLOR_RGB2BGR : cv::COLOR_GRAY2BGR);
    return bgr;
}

#endif
