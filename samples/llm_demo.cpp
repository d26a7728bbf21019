// Shows the LLM extension at work inside cv::dnn: a Net with the RMSNorm layer (as every
// Llama-family block starts with), run on a batch of hidden states, checked against the
// formula and timed. Text generation replaces this demo once the GGUF path lands.
//
// Usage: llm_demo [--rows N] [--dim D] [--eps E]

#include <opencv2/dnn.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace cv;
using namespace cv::dnn;

static int usage(const char* msg)
{
    std::cerr << "llm_demo: " << msg << "\nusage: llm_demo [--rows N] [--dim D] [--eps E]\n";
    return 2;
}

int main(int argc, char** argv)
{
    int rows = 512, dim = 2048;
    float eps = 1e-5f;
    for (int i = 1; i < argc; i++)
    {
        const std::string arg = argv[i];
        if (i + 1 >= argc)
            return usage(("missing value for " + arg).c_str());
        if (arg == "--rows")
            rows = std::atoi(argv[++i]);
        else if (arg == "--dim")
            dim = std::atoi(argv[++i]);
        else if (arg == "--eps")
            eps = (float)std::atof(argv[++i]);
        else
            return usage(("unknown option " + arg).c_str());
    }
    if (rows <= 0 || dim <= 0)
        return usage("--rows and --dim must be positive");

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
        std::cerr << "llm_demo: " << e.what() << "\n";
        return 1;
    }
}
