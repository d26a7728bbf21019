// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "kv_storage_codec.hpp"

#include <cmath>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

KVStorageCodec::KVStorageCodec(int type, int headDim) : type_(type), headDim_(headDim)
{
    if (type != CV_32F && type != CV_16F && type != CV_8S)
        CV_Error(Error::StsBadArg, format("KVCache: storage type %s is not supported (CV_32F, CV_16F, CV_8S are)",
                                          typeToString(type).c_str()));
    CV_CheckGT(headDim, 0, "KVCache: head size must be positive");
    if (type == CV_32F)
        rowBytes_ = (size_t)headDim * sizeof(float);
    else if (type == CV_16F)
        rowBytes_ = (size_t)headDim * sizeof(hfloat);
    else
        rowBytes_ = (size_t)headDim + sizeof(float);  // int8 elements, then the scale
    rowBytes_ = alignSize(rowBytes_, 4);
}

void KVStorageCodec::encode(const float* src, uchar* dst) const
{
    if (type_ == CV_32F)
    {
        std::memcpy(dst, src, (size_t)headDim_ * sizeof(float));
    }
    else if (type_ == CV_16F)
    {
        hfloat* d = reinterpret_cast<hfloat*>(dst);
        for (int i = 0; i < headDim_; i++)
            d[i] = hfloat(src[i]);
    }
    else
    {
        float amax = 0.f;
        for (int i = 0; i < headDim_; i++)
            amax = std::max(amax, std::abs(src[i]));
        const float scale = amax / 127.f, inv = amax > 0.f ? 127.f / amax : 0.f;
        signed char* q = reinterpret_cast<signed char*>(dst);
        for (int i = 0; i < headDim_; i++)
            q[i] = (signed char)cvRound(src[i] * inv);
        std::memcpy(dst + headDim_, &scale, sizeof(float));
    }
}

void KVStorageCodec::decode(const uchar* src, float* dst) const
{
    if (type_ == CV_32F)
    {
        std::memcpy(dst, src, (size_t)headDim_ * sizeof(float));
    }
    else if (type_ == CV_16F)
    {
        const hfloat* h = reinterpret_cast<const hfloat*>(src);
        for (int i = 0; i < headDim_; i++)
            dst[i] = float(h[i]);
    }
    else
    {
        const signed char* q = reinterpret_cast<const signed char*>(src);
        const float scale = int8RowScale(src, headDim_);
        for (int i = 0; i < headDim_; i++)
            dst[i] = q[i] * scale;
    }
}

}}} // namespace cv::dnn::llm
