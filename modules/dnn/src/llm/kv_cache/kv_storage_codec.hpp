// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// How the KV cache stores one head row (the keys or the values of one token, one layer, one KV
// head): float32, float16, or 8 bits with one float scale.

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_KV_STORAGE_CODEC_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_KV_STORAGE_CODEC_HPP

#include <opencv2/core.hpp>

#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

class KVStorageCodec
{
public:
    //! type: CV_32F, CV_16F or CV_8S (an error otherwise, naming the type).
    KVStorageCodec(int type, int headDim);

    int type() const { return type_; }
    //! Bytes of one stored head row (a multiple of 4, so rows stay aligned for floats).
    size_t rowBytes() const { return rowBytes_; }
    //! True when a stored row is the float row itself (rows can be read in place).
    bool storesFloat32() const { return type_ == CV_32F; }

    //! headDim floats -> one stored row. 8 bits: q = round(x * 127 / max|x|), then the scale.
    void encode(const float* src, uchar* dst) const;
    //! One stored row -> headDim floats.
    void decode(const uchar* src, float* dst) const;
    //! An 8-bit row's scale: the float after its headDim elements (element i decodes to q[i] * scale).
    static float int8RowScale(const uchar* row, int headDim)
    {
        float scale;
        std::memcpy(&scale, row + headDim, sizeof(float));
        return scale;
    }

private:
    int type_, headDim_;
    size_t rowBytes_;
};

}}} // namespace cv::dnn::llm

#endif
