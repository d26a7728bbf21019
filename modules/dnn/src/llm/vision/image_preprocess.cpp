// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "image_preprocess.hpp"

#include <opencv2/imgproc.hpp>

#include <climits>

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

// Pillow's bilinear (triangle) kernel, support 1.
double bilinear(double x)
{
    x = std::abs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's Lanczos kernel (a = 3), as libmtmd's resize_pillow computes it.
double lanczos(double x)
{
    if (!(-3.0 <= x && x < 3.0))
        return 0.0;
    auto sinc = [](double v) {
        if (v == 0.0)
            return 1.0;
        const double pv = v * 3.141592653589793238462643383279502884;
        return std::sin(pv) / pv;
    };
    return sinc(x) * sinc(x / 3.0);
}

const int kPrecisionBits = 32 - 8 - 2;  // 8-bit pixels, 2 bits of headroom

// One output pixel's taps along one axis: the first input index and fixed-point weights.
struct Taps
{
    int first = 0;
    std::vector<int> weights;
};

std::vector<Taps> resampleTaps(int inSize, int outSize, PillowFilter filter)
{
    const double scale = (double)inSize / outSize;
    const double filterScale = std::max(scale, 1.0);  // widen the kernel when shrinking (anti-aliasing)
    const double support = (filter == PillowFilter::Lanczos ? 3.0 : filter == PillowFilter::Bilinear ? 1.0 : 2.0) *
                           filterScale;
    const double ss = 1.0 / filterScale;
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
            const double t = (i - center + 0.5) * ss;
            w[i - lo] = filter == PillowFilter::Lanczos ? lanczos(t) : filter == PillowFilter::Bilinear ? bilinear(t) : bicubic(t);
            sum += w[i - lo];
        }
        taps[o].first = lo;
        for (double v : w)
        {
            const double n = sum != 0 ? v / sum : v;
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

Mat resampleHorizontal(const Mat& rgb, int width, PillowFilter filter)
{
    const std::vector<Taps> tx = resampleTaps(rgb.cols, width, filter);
    Mat wide(rgb.rows, width, CV_8UC3);
    for (int y = 0; y < rgb.rows; y++)
    {
        const uchar* src = rgb.ptr<uchar>(y);
        uchar* dst = wide.ptr<uchar>(y);
        for (int x = 0; x < width; x++)
            for (int c = 0; c < 3; c++)
            {
                int acc = 1 << (kPrecisionBits - 1);
                for (size_t k = 0; k < tx[x].weights.size(); k++)
                    acc += src[(tx[x].first + (int)k) * 3 + c] * tx[x].weights[k];
                dst[x * 3 + c] = clip8(acc);
            }
    }
    return wide;
}

Mat resampleVertical(const Mat& rgb, int height, PillowFilter filter)
{
    const std::vector<Taps> ty = resampleTaps(rgb.rows, height, filter);
    Mat out(height, rgb.cols, CV_8UC3);
    for (int y = 0; y < height; y++)
    {
        uchar* dst = out.ptr<uchar>(y);
        for (int x = 0; x < rgb.cols; x++)
            for (int c = 0; c < 3; c++)
            {
                int acc = 1 << (kPrecisionBits - 1);
                for (size_t k = 0; k < ty[y].weights.size(); k++)
                    acc += rgb.ptr<uchar>(ty[y].first + (int)k)[x * 3 + c] * ty[y].weights[k];
                dst[x * 3 + c] = clip8(acc);
            }
    }
    return out;
}

// An image as libmtmd works on it: 8-bit RGB (clear errors for other types).
Mat toRGB8(const Mat& bgr)
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
    return rgb;
}

// An 8-bit RGB S x S image as the encoder's 1 x 3 x S x S blob, normalized by mean / std.
Mat toBlob(const Mat& square, const VisionHyperParameters& hp)
{
    const int S = square.rows;
    CV_Assert(square.cols == S && square.type() == CV_8UC3);
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

}  // namespace

Mat resizePillow(const Mat& rgb, Size size, PillowFilter filter)
{
    CV_CheckTypeEQ(rgb.type(), CV_8UC3, "resizePillow: expects an 8-bit 3-channel image");
    // Horizontal pass, then vertical, each rounded to 8 bits; a pass whose size does not
    // change is skipped (as Pillow and libmtmd's resize_pillow).
    Mat out = rgb;
    if (size.width != rgb.cols)
        out = resampleHorizontal(out, size.width, filter);
    if (size.height != rgb.rows)
        out = resampleVertical(out, size.height, filter);
    return out.data == rgb.data ? rgb.clone() : out;
}

Mat resizeBicubicPillow(const Mat& rgb, Size size)
{
    return resizePillow(rgb, size, PillowFilter::Bicubic);
}

ImageTiles preprocessIdefics3(const Mat& bgr, const VisionHyperParameters& hp)
{
    CV_Assert(hp.projector == VisionProjector::Idefics3 && hp.longestEdge > 0);
    const Mat rgb = toRGB8(bgr);
    const int tile = hp.imageSize, edge = hp.longestEdge;
    // libmtmd's mtmd_image_preprocessor_idefics3: the longer side to `edge` keeping the aspect
    // ratio (the other side truncated, then made even), ...
    const double aspect = (double)rgb.cols / rgb.rows;
    Size resized;
    if (rgb.cols >= rgb.rows)
    {
        resized.width = edge;
        resized.height = (int)(edge / aspect);
        resized.height += resized.height % 2;
    }
    else
    {
        resized.height = edge;
        resized.width = (int)(edge * aspect);
        resized.width += resized.width % 2;
    }
    if (resized.width <= 0 || resized.height <= 0)
        CV_Error(Error::StsBadArg, format("TextGenerationModel: a %d x %d image is too thin to tile", rgb.cols, rgb.rows));
    // ... then each side rounded up to a multiple of the tile size (Lanczos both times) ...
    ImageTiles out;
    out.cols = (resized.width + tile - 1) / tile;
    out.rows = (resized.height + tile - 1) / tile;
    auto resize = [](const Mat& m, Size size) { return m.size() == size ? m : resizePillow(m, size, PillowFilter::Lanczos); };
    const Mat refined = resize(resize(rgb, resized), Size(out.cols * tile, out.rows * tile));
    // ... cut into tiles row by row; the overview is the refined image resized to one tile.
    for (int y = 0; y < out.rows; y++)
        for (int x = 0; x < out.cols; x++)
            out.tiles.push_back(toBlob(refined(Rect(x * tile, y * tile, tile, tile)).clone(), hp));
    out.overview = toBlob(resize(refined, Size(tile, tile)), hp);
    return out;
}

// libmtmd's mtmd_image_preprocessor_llava_uhd::select_best_resolution: the candidate that keeps
// the most of the image's pixels (fitted keeping its aspect ratio), then the least padding.
static Size selectBestResolution(Size original, const std::vector<Size>& candidates)
{
    Size best;
    int minWasted = INT_MAX, maxEffective = 0;
    for (const Size& c : candidates)
    {
        const float scale = std::min((float)c.width / original.width, (float)c.height / original.height);
        const int w = (int)(original.width * scale), h = (int)(original.height * scale);
        const int effective = std::min(w * h, original.width * original.height);
        const int wasted = c.width * c.height - effective;
        if (effective > maxEffective || (effective == maxEffective && wasted < minWasted))
        {
            maxEffective = effective;
            minWasted = wasted;
            best = c;
        }
    }
    return best;
}

ImageTiles preprocessLlavaTiles(const Mat& bgr, const VisionHyperParameters& hp)
{
    CV_Assert(hp.projector == VisionProjector::Mlp && !hp.gridPinpoints.empty());
    const Mat rgb = toRGB8(bgr);
    const int S = hp.imageSize;
    ImageTiles out;
    // The overview: the whole image stretched to S x S (PAD_NONE, bicubic). Alone when the
    // image fits in one tile.
    out.overview = toBlob(rgb.size() == Size(S, S) ? rgb : resizeBicubicPillow(rgb, Size(S, S)), hp);
    if (rgb.cols <= S && rgb.rows <= S)
        return out;
    // The best pinpoint resolution, the image fitted into it keeping its aspect ratio (sizes
    // rounded up) and centred on black (llama.cpp's PAD_CEIL with the default pad colour of the
    // refined image), cut into S x S tiles row by row.
    const Size refined = selectBestResolution(rgb.size(), hp.gridPinpoints);
    Mat canvas;
    if (rgb.size() == refined)
        canvas = rgb;
    else
    {
        const float scale = std::min((float)refined.width / rgb.cols, (float)refined.height / rgb.rows);
        const int w = std::min((int)std::ceil(rgb.cols * scale), refined.width);
        const int h = std::min((int)std::ceil(rgb.rows * scale), refined.height);
        canvas = Mat(refined, CV_8UC3, Scalar(0, 0, 0));
        resizeBicubicPillow(rgb, Size(w, h)).copyTo(canvas(Rect((refined.width - w) / 2, (refined.height - h) / 2, w, h)));
    }
    out.cols = refined.width / S;
    out.rows = refined.height / S;
    for (int y = 0; y < out.rows; y++)
        for (int x = 0; x < out.cols; x++)
            out.tiles.push_back(toBlob(canvas(Rect(x * S, y * S, S, S)).clone(), hp));
    return out;
}

Mat preprocessImage(const Mat& bgr, const VisionHyperParameters& hp)
{
    const Mat rgb = toRGB8(bgr);
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
        resizePillow(rgb, Size(w, h), gemma3 ? PillowFilter::Bilinear : PillowFilter::Bicubic)
            .copyTo(square(Rect((S - w) / 2, (S - h) / 2, w, h)));
    }
    return toBlob(square, hp);
}

}}} // namespace cv::dnn::llm
