// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: arbitrary bytes as an ONNX model through readNetFromONNX (the importer
// path our RMSNorm / SimplifiedLayerNormalization layers are reached by), then one forward of a
// small input when the model loads. Anything but a cv::Exception is a bug.

#include <opencv2/dnn.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    cv::setNumThreads(1);
    try
    {
        cv::dnn::Net net = cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(data), size);
        if (net.empty())
            return 0;
        int shape[] = {2, 3, 8};
        net.setInput(cv::Mat(3, shape, CV_32F, cv::Scalar(0.5)));
        net.forward();
    }
    catch (const cv::Exception&)
    {
    }
    return 0;
}
