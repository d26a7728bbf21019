// LLMElementwise add / sub / mul / div of two activations (residual connections, imported
// graphs' Add / Sub / Mul / Div nodes) against IEEE single-precision arithmetic element by
// element: the vector loops must give exactly what one float operation gives, partial last
// vectors and special values (infinities, zeros of both signs, NaN) included. Not subnormals:
// dnn runs a forward with denormals flushed to zero (Net's FTZ / DAZ mode), on every path.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "test_common.hpp"

using namespace cv;
using namespace cv::dnn;

namespace {

bool sameBits(float x, float y)
{
    return std::memcmp(&x, &y, sizeof(float)) == 0 || (std::isnan(x) && std::isnan(y));
}

TEST(ElementwiseBinary, matchesSinglePrecisionArithmetic)
{
    // An odd count (a partial last vector at every width), random values and a run of special ones.
    const int n = 4099;
    Mat a(1, n, CV_32F), b(1, n, CV_32F);
    RNG rng(11);
    rng.fill(a, RNG::NORMAL, 0, 100);
    rng.fill(b, RNG::NORMAL, 0, 100);
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    const float special[] = {0.f, -0.f, inf, -inf, nan, 1e37f, -1e37f, 1.f, -1.5f, 2.f};
    const int count = (int)(sizeof(special) / sizeof(special[0]));
    for (int i = 0; i < count; i++)
        for (int j = 0; j < count; j++)
        {
            a.at<float>(i * count + j) = special[i];
            b.at<float>(i * count + j) = special[j];
        }
    struct Case
    {
        const char* op;
        float (*exact)(float, float);
    };
    const Case cases[] = {
        {"add", [](float x, float y) { return x + y; }},
        {"sub", [](float x, float y) { return x - y; }},
        {"mul", [](float x, float y) { return x * y; }},
        {"div", [](float x, float y) { return x / y; }},
    };
    for (const Case& c : cases)
    {
        const Mat y = llm_test::runElementwise(c.op, a, b);
        ASSERT_EQ(y.total(), (size_t)n) << c.op;
        int wrong = 0;
        for (int i = 0; i < n; i++)
        {
            const float x = a.at<float>(i), z = b.at<float>(i);
            if (!sameBits(y.at<float>(i), c.exact(x, z)) && wrong++ == 0)
                ADD_FAILURE() << c.op << "(" << x << ", " << z << ") = " << y.at<float>(i) << ", not " << c.exact(x, z);
        }
        EXPECT_EQ(wrong, 0) << c.op;
    }
}

} // namespace
