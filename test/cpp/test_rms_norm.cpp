// RMSNorm against exact math in double precision: in a Net built in C++, in ONNX files
// (RMSNormalization opset 23, SimplifiedLayerNormalization) loaded with readNet, and on
// wrong input.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/core/utils/logger.hpp>

#include <cmath>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

// Mirrors test_scale_value() in test/tools/make_test_onnx_models.py.
float testScaleValue(int j)
{
    return 1.0f + ((j * 37) % 101 - 50) / 100.0f;
}

Mat makeScale(int n)
{
    Mat scale(1, n, CV_32F);
    for (int j = 0; j < n; j++)
        scale.at<float>(j) = testScaleValue(j);
    return scale;
}

Mat randomInput(const std::vector<int>& shape, uint64 seed)
{
    Mat x(shape, CV_32F);
    RNG rng(seed);
    rng.fill(x, RNG::NORMAL, 0.0, 2.0);
    return x;
}

// y = x / sqrt(mean(x^2) + eps) * scale over the axes from `axis` on, in double.
Mat referenceRMSNorm(const Mat& x, const Mat& scale, int axis, double eps, Mat* invStd = nullptr)
{
    size_t normSize = 1;
    for (int i = axis; i < x.dims; i++)
        normSize *= x.size[i];
    const size_t rows = x.total() / normSize;
    const size_t scaleSize = scale.total();
    Mat y(x.dims, x.size.p, CV_32F);
    if (invStd)
        invStd->create(1, (int)rows, CV_32F);
    const float* xp = x.ptr<float>();
    const float* sp = scale.ptr<float>();
    float* yp = y.ptr<float>();
    for (size_t r = 0; r < rows; r++)
    {
        double ss = 0;
        for (size_t j = 0; j < normSize; j++)
            ss += (double)xp[r * normSize + j] * xp[r * normSize + j];
        const double inv = 1.0 / std::sqrt(ss / normSize + eps);
        for (size_t j = 0; j < normSize; j++)
            yp[r * normSize + j] = (float)(xp[r * normSize + j] * inv * sp[j % scaleSize]);
        if (invStd)
            invStd->at<float>((int)r) = (float)inv;
    }
    return y;
}

// float32 accumulation over a row gives a relative error well below 1e-5 for these sizes.
void expectClose(const Mat& actual, const Mat& expected)
{
    ASSERT_EQ(actual.total(), expected.total());
    const float* a = actual.ptr<float>();
    const float* e = expected.ptr<float>();
    double worst = 0;
    for (size_t i = 0; i < expected.total(); i++)
        worst = std::max(worst, std::abs((double)a[i] - e[i]) / (1e-6 + std::abs((double)e[i])));
    EXPECT_LT(worst, 2e-5) << "worst relative error";
}

Net makeRMSNormNet(const Mat& scale, int axis, float eps)
{
    LayerParams lp;
    lp.name = "norm";
    lp.type = "RMSNorm";
    lp.set("axis", axis);
    lp.set("epsilon", eps);
    lp.blobs.push_back(scale);
    Net net;
    net.addLayerToPrev(lp.name, lp.type, lp);
    return net;
}

struct NetCase
{
    std::vector<int> shape;
    int axis;
    float eps;
    int scaleSize;  // 0: the whole normalized size
};

void PrintTo(const NetCase& c, std::ostream* os)
{
    for (size_t i = 0; i < c.shape.size(); i++)
        *os << (i ? "x" : "") << c.shape[i];
    *os << " axis " << c.axis << " eps " << c.eps << " scale " << c.scaleSize;
}

class RMSNormNet : public ::testing::TestWithParam<NetCase> {};

TEST_P(RMSNormNet, matchesDoubleMath)
{
    const NetCase& c = GetParam();
    const int dims = (int)c.shape.size();
    const int axis = c.axis < 0 ? c.axis + dims : c.axis;
    int normSize = 1;
    for (int i = axis; i < dims; i++)
        normSize *= c.shape[i];
    const Mat scale = makeScale(c.scaleSize ? c.scaleSize : normSize);
    const Mat x = randomInput(c.shape, 1234 + normSize);

    Net net = makeRMSNormNet(scale, c.axis, c.eps);
    net.setInput(x);
    const Mat y = net.forward();
    ASSERT_EQ(y.dims, x.dims);
    for (int i = 0; i < dims; i++)
        ASSERT_EQ(y.size[i], x.size[i]);
    expectClose(y, referenceRMSNorm(x, scale, axis, c.eps));
}

INSTANTIATE_TEST_CASE_P(Shapes, RMSNormNet, ::testing::Values(
    NetCase{{1, 1}, -1, 1e-5f, 0},
    NetCase{{3, 7}, -1, 1e-6f, 0},           // shorter than one SIMD register
    NetCase{{2, 3, 17}, -1, 1e-5f, 0},       // odd length: SIMD tail
    NetCase{{2, 2, 64}, -1, 1e-2f, 0},
    NetCase{{1, 5, 4099}, -1, 1e-6f, 0},     // long odd row
    NetCase{{64, 2048}, -1, 1e-5f, 0},       // many rows: threaded
    NetCase{{2, 5, 6}, 1, 0.5f, 0},          // normalize over two axes
    NetCase{{2, 3, 10}, -2, 1e-5f, 10},      // scale covers a suffix and is broadcast
    NetCase{{4, 9}, -1, 1e-5f, 1}));         // scalar scale

TEST(RMSNormNet, sameResultWithOneThread)
{
    const Mat scale = makeScale(1031);
    const Mat x = randomInput({16, 1031}, 7);
    Net net = makeRMSNormNet(scale, -1, 1e-5f);
    net.setInput(x);
    const Mat multi = net.forward().clone();
    const int threads = getNumThreads();
    setNumThreads(1);
    net.setInput(x);
    const Mat single = net.forward().clone();
    setNumThreads(threads);
    EXPECT_EQ(cv::norm(multi, single, NORM_INF), 0.0);
}

// group_size: each group of that many elements of a row normalized on its own with one group's
// scale (per-head Q/K norm): the same as normalizing the rows of the input viewed as groups.
TEST(RMSNormNet, groupsNormalizedOnTheirOwn)
{
    const int heads = 5, headDim = 24;
    const Mat scale = makeScale(headDim);
    const Mat x = randomInput({3, heads * headDim}, 11);
    LayerParams lp;
    lp.name = "norm";
    lp.type = "RMSNorm";
    lp.set("epsilon", 1e-6f);
    lp.set("group_size", headDim);
    lp.blobs.push_back(scale);
    Net grouped;
    grouped.addLayerToPrev(lp.name, lp.type, lp);
    grouped.setInput(x);
    const Mat y = grouped.forward();
    ASSERT_EQ(y.size[0], 3);
    ASSERT_EQ(y.size[1], heads * headDim);
    expectClose(y, referenceRMSNorm(x.reshape(1, 3 * heads), scale, 1, 1e-6));

    lp.set("group_size", 7);  // does not divide 120
    Net bad;
    bad.addLayerToPrev(lp.name, lp.type, lp);
    bad.setInput(x);
    try
    {
        bad.forward();
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("group_size 7 does not divide the normalized size 120"), std::string::npos) << e.msg;
    }
}

TEST(RMSNormNet, rejectsScaleOfWrongLength)
{
    Net net = makeRMSNormNet(makeScale(16), -1, 1e-5f);
    net.setInput(randomInput({2, 17}, 1));
    try
    {
        net.forward();
        FAIL() << "no exception";
    }
    catch (const cv::Exception& e)
    {
        EXPECT_NE(e.msg.find("RMSNorm: scale has 16 elements"), std::string::npos) << e.msg;
    }
}

TEST(RMSNormLayer, rejectsZeroDimInput)
{
    LayerParams lp;
    lp.type = "RMSNorm";
    lp.blobs.push_back(makeScale(1));
    Ptr<Layer> layer = LayerFactory::createLayerInstance("RMSNorm", lp);
    ASSERT_TRUE(layer);
    std::vector<MatShape> outputs, internals;
    EXPECT_THROW(layer->getMemoryShapes({MatShape()}, 1, outputs, internals), cv::Exception);
}

TEST(RMSNormLayer, rejectsAxisOutOfRange)
{
    Net net = makeRMSNormNet(makeScale(4), 2, 1e-5f);
    net.setInput(randomInput({3, 4}, 1));
    EXPECT_THROW(net.forward(), cv::Exception);
}

TEST(RMSNormLayer, rejectsNegativeEpsilon)
{
    LayerParams lp;
    lp.set("epsilon", -1.f);
    lp.blobs.push_back(makeScale(4));
    EXPECT_THROW(LayerFactory::createLayerInstance("RMSNorm", lp), cv::Exception);
}

TEST(RMSNormLayer, registeredUnderOnnxNames)
{
    for (const char* type : {"RMSNorm", "RMSNormalization", "SimplifiedLayerNormalization",
                             "com.microsoft.SimplifiedLayerNormalization"})
        EXPECT_TRUE(LayerFactory::isLayerRegistered(type)) << type;
}

// ONNX files made by make_test_onnx_models.py, described by rms_norm_cases.json.
TEST(RMSNormOnnx, matchesDoubleMath)
{
    FileStorage fs(llm_test::testModel("rms_norm_cases.json"), FileStorage::READ | FileStorage::FORMAT_JSON);
    ASSERT_TRUE(fs.isOpened()) << "run test/tools/make_test_onnx_models.py first";
    const FileNode cases = fs["cases"];
    ASSERT_GE((int)cases.size(), 7);
    for (const FileNode& c : cases)
    {
        const std::string file = (std::string)c["file"];
        SCOPED_TRACE(file);
        std::vector<int> shape;
        c["input_shape"] >> shape;
        const int axis = (int)c["axis"];
        const double eps = (double)c["epsilon"];
        const Mat scale = makeScale((int)c["scale_size"]);
        const Mat x = randomInput(shape, 99);

        Net net = readNet(llm_test::testModel(file));
        ASSERT_FALSE(net.empty());
        net.setInput(x, "X");
        if ((int)c["scale_as_input"])
            net.setInput(scale, "scale");
        Mat expectedInvStd;
        const Mat expected = referenceRMSNorm(x, scale, axis, eps, &expectedInvStd);
        if ((int)c["outputs"] == 2)
        {
            std::vector<Mat> outs;
            net.forward(outs, std::vector<String>{"Y", "inv_std_var"});
            ASSERT_EQ(outs.size(), 2u);
            expectClose(outs[0], expected);
            expectClose(outs[1], expectedInvStd);
        }
        else
        {
            expectClose(net.forward("Y"), expected);
        }
    }
}

} // namespace
