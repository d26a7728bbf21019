// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "image_preprocess.hpp"

#include <opencv2/imgproc.hpp>

namespace cv {
namespace dnn {
namespace llm {

namespace {

// Pillow's bicubic kernel (a = -0.5; OpenCV's INTER_CUBIC uses -0.75 and does not widen the
// kernel when shrinking, so its results differ from what the models were trained on).
double bicubic(double x)
{
    const double a = -0.5;
    x = std::abs(x);
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0)
        return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

const int kPrecisionBits = 32 - 8 - 2;  // 8-bit pixels, 2 bits of headroom

// One output pixel's taps along one axis: the first input index and fixed-point weights.
struct Taps
{
    int first = 0;
    std::vector<int> weights;
};

// Pillow's bilinear (triangle) kernel, support 1.
double bilinear(double x)
{
    x = std::abs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

std::vector<Taps> resampleTaps(int inSize, int outSize, bool linear)
{
    const double scale = (double)inSize / outSize;
    const double filterScale = std::max(scale, 1.0);  // widen the kernel when shrinking (anti-aliasing)
    const double support = (linear ? 1.0 : 2.0) * filterScale;
    std::vector<Taps> taps(outSize);
    for (int o = 0; o < outSize; o++)
    {
        const double center = (o + 0.5) * scale;
        int lo = std::max((int)(center - support + 0.5), 0);
        int hi = std::min((int)(center + support + 0.5), inSize);
        std::vector<double> w(hi - lo);
        double sum = 0;
        for (int i = lo; i < hi; i++)
        {
            const double d = (i - center + 0.5) / filterScale;
            w[i - lo] = linear ? bilinear(d) : bicubic(d);
            sum += w[i - lo];
        }
        taps[o].first = lo;
        for (double v : w)
        {
            const double n = sum != 0 ? v / sum : 0;
            taps[o].weights.push_back((int)(n < 0 ? -0.5 + n * (1 << kPrecisionBits) : 0.5 + n * (1 << kPrecisionBits)));
        }
    }
    return taps;
}

inline uchar clip8(int v)
{
    v >>= kPrecisionBits;
    return (uchar)std::min(255, std::max(0, v));
}

}  // namespace

Mat resizeBicubicPillow(const Mat& rgb, Size size)
{
    return resizePillow(rgb, size, false);
}

Mat resizePillow(const Mat& rgb, Size size, bool bilinear)
{
    CV_CheckTypeEQ(rgb.type(), CV_8UC3, "resizePillow: expects an 8-bit 3-channel image");
    // Horizontal pass, then vertical, each rounded to 8 bits (as Pillow and libmtmd).
    const std::vector<Taps> tx = resampleTaps(rgb.cols, size.width, bilinear), ty = resampleTaps(rgb.rows, size.height, bilinear);
    Mat wide(rgb.rows, size.width, CV_8UC3);
    for (int y = 0; y < rgb.rows; y++)
    {
        const uchar* src = rgb.ptr<uchar>(y);
        uchar* dst = wide.ptr<uchar>(y);
        for (int x = 0; x < size.width; x++)
            for (int c = 0; c < 3; c++)
            {
                int acc = 1 << (kPrecisionBits - 1);
                for (size_t k = 0; k < tx[x].weights.size(); k++)
                    acc += src[(tx[x].first + (int)k) * 3 + c] * tx[x].weights[k];
                dst[x * 3 + c] = clip8(acc);
            }
    }
    Mat out(size, CV_8UC3);
    for (int y = 0; y < size.height; y++)
    {
        uchar* dst = out.ptr<uchar>(y);
        for (int x = 0; x < size.width; x++)
            for (int c = 0; c < 3; c++)
            {
                int acc = 1 << (kPrecisionBits - 1);
                for (size_t k = 0; k < ty[y].weights.size(); k++)
                    acc += wide.ptr<uchar>(ty[y].first + (int)k)[x * 3 + c] * ty[y].weights[k];
                dst[x * 3 + c] = clip8(acc);
            }
    }
    return out;
}

Mat preprocessImage(const Mat& bgr, const VisionHyperParameters& hp)
{
    if (bgr.empty())
        CV_Error(Error::StsBadArg, "TextGenerationModel: an image is empty");
    if (bgr.channels() != 3 || (bgr.depth() != CV_8U && bgr.depth() != CV_32F && bgr.depth() != CV_64F))
        CV_Error(Error::StsBadArg, format("TextGenerationModel: images must be 3-channel BGR, 8-bit (CV_8UC3) or float "
                                          "in [0, 1] (CV_32FC3, CV_64FC3); got %s", typeToString(bgr.type()).c_str()));
    Mat rgb;
    if (bgr.depth() == CV_8U)
        cvtColor(bgr, rgb, COLOR_BGR2RGB);
    else
    {
        Mat u8;
        bgr.convertTo(u8, CV_8U, 255.0);  // rounds and saturates, as an 8-bit image would be stored
        cvtColor(u8, rgb, COLOR_BGR2RGB);
    }

    // llava without grid pinpoints: fit into S x S keeping the aspect ratio (sizes rounded
    // up), centred on llava's pad colour (libmtmd's fixed-size preprocessor, PAD_CEIL).
    // gemma3: the same preprocessor with Pillow's bilinear resampling and black padding
    // (clip.cpp sets only image_resize_algo for it; the pad style and colour stay the defaults).
    const bool gemma3 = hp.projector == VisionProjector::Gemma3;
    const Scalar padColor = gemma3 ? Scalar(0, 0, 0) : Scalar(122, 116, 104);
    const int S = hp.imageSize;
    Mat square;
    if (rgb.cols == S && rgb.rows == S)
        square = rgb;
    else
    {
        const float scale = std::min((float)S / rgb.cols, (float)S / rgb.rows);
        const int w = std::min((int)std::ceil(rgb.cols * scale), S), h = std::min((int)std::ceil(rgb.rows * scale), S);
        square = Mat(S, S, CV_8UC3, padColor);
        resizePillow(rgb, Size(w, h), gemma3).copyTo(square(Rect((S - w) / 2, (S - h) / 2, w, h)));
    }

    const int shape[] = {1, 3, S, S};
    Mat blob(4, shape, CV_32F);
    for (int c = 0; c < 3; c++)
    {
        const float mean = hp.imageMean[c], sd = hp.imageStd[c];
        float* dst = blob.ptr<float>(0, c);
        for (int y = 0; y < S; y++)
        {
            const uchar* src = square.ptr<uchar>(y);
            for (int x = 0; x < S; x++)
                dst[y * S + x] = (src[x * 3 + c] / 255.f - mean) / sd;  // as clip_image_f32::normalize
        }
    }
    return blob;
}

}}} // namespace cv::dnn::llm
