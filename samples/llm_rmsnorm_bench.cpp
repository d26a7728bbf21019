// The RMSNorm layer (as every Llama-family block starts with) alone in a cv::dnn Net: run on a
// batch of hidden states, checked against the formula, timed (ms per forward and GB/s moved).
//
//   llm_rmsnorm_bench [--rows=512] [--dim=2048] [--eps=1e-5]

#include <opencv2/dnn.hpp>

#include "command_line.hpp"

#include <cmath>
#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

static const char* keys =
    "{help h usage ? |      | print this help }"
    "{rows           | 512  | hidden states (tokens) per forward }"
    "{dim            | 2048 | hidden size }"
    "{eps            | 1e-5 | RMSNorm epsilon }";

int main(int argc, char** argv)
{
    const SampleCommandLine cl(argc, argv, keys, "RMSNorm layer micro-benchmark (cv::dnn), checked against the formula");
    const int rows = cl.getInt("rows", 1, 1 << 20), dim = cl.getInt("dim", 1, 1 << 20);
    const float eps = (float)cl.getReal("eps", 0, 1, true);
    if ((double)rows * dim > (double)(1 << 28))
        cl.fail(format("--rows=%d x --dim=%d is more than 2^28 values", rows, dim));

    try
    {
        Mat gamma(1, dim, CV_32F), x(rows, dim, CV_32F);
        randu(gamma, 0.5, 1.5);
        randn(x, 0.0, 1.0);

        LayerParams lp;
        lp.name = "attn_norm";
        lp.type = "RMSNorm";
        lp.set("epsilon", eps);
        lp.blobs.push_back(gamma);
        Net net;
        net.addLayerToPrev(lp.name, lp.type, lp);
        net.setInput(x);
        net.forward();  // the first forward plans and allocates

        const int iters = 20;
        TickMeter tm;
        Mat y;
        for (int it = 0; it < iters; it++)
        {
            net.setInput(x);
            tm.start();
            y = net.forward();
            tm.stop();
        }

        double worst = 0;
        for (int r = 0; r < rows; r++)
        {
            const float* xr = x.ptr<float>(r);
            double ss = 0;
            for (int j = 0; j < dim; j++)
                ss += (double)xr[j] * xr[j];
            const double inv = 1.0 / std::sqrt(ss / dim + eps);
            for (int j = 0; j < dim; j++)
                worst = std::max(worst, std::abs(y.ptr<float>(r)[j] - xr[j] * inv * gamma.at<float>(j)));
        }

        std::cout << "OpenCV " << CV_VERSION << " with the LLM extension, " << getNumThreads() << " threads\n"
                  << "layers:";
        for (const std::string& name : net.getLayerNames())
            std::cout << ' ' << name << " (" << net.getLayer(name)->type << ")";
        std::cout << "\nRMSNorm over " << rows << " x " << dim << ": "
                  << tm.getTimeMilli() / iters << " ms per forward, "
                  << (double)rows * dim * sizeof(float) * 2 / (tm.getTimeSec() / iters) / 1e9 << " GB/s, "
                  << "max |y - exact| = " << worst << "\n";
        return worst < 1e-4 ? 0 : 1;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_rmsnorm_bench: " << e.what() << "\n";
        return 1;
    }
}
