#include "test_common.hpp"

#include <opencv2/dnn.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <climits>
#include <unistd.h>

namespace llm_test {

static std::string executableDir()
{
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return ".";
    std::string path(buf, (size_t)n);
    return path.substr(0, path.find_last_of('/'));
}

std::string projectRoot()
{
    if (const char* root = std::getenv("LLM_PROJECT_ROOT"))
        return root;
    return executableDir() + "/../..";
}

std::string sharedTestData(const std::string& relative)
{
    // LLM_SHARED_TESTDATA (test.sh exports it), else where the build found it, else beside the project.
    if (const char* dir = std::getenv("LLM_SHARED_TESTDATA"))
        return std::string(dir) + "/" + relative;
#ifdef LLM_SHARED_TESTDATA_DIR
    return std::string(LLM_SHARED_TESTDATA_DIR) + "/" + relative;
#else
    return projectRoot() + "/../shared/testdata/" + relative;
#endif
}

std::string testModel(const std::string& relative)
{
    if (const char* dir = std::getenv("LLM_TEST_MODELS"))
        return std::string(dir) + "/" + relative;
    return executableDir() + "/../test-models/" + relative;
}

std::vector<char> readFileBytes(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

cv::Mat idsToMat(const std::vector<int>& ids)
{
    cv::Mat m(1, (int)ids.size(), CV_32F);
    for (size_t i = 0; i < ids.size(); i++)
        m.at<float>((int)i) = (float)ids[i];
    return m;
}

int argmax(const cv::Mat& row)
{
    cv::Point loc;
    cv::minMaxLoc(row.reshape(1, 1), nullptr, nullptr, nullptr, &loc);
    return loc.x;
}

std::vector<double> softmax(const cv::Mat& logits)
{
    const cv::Mat row = logits.reshape(1, 1);
    double maxv;
    cv::minMaxLoc(row, nullptr, &maxv);
    std::vector<double> p(row.cols);
    double sum = 0;
    for (int i = 0; i < row.cols; i++)
        sum += p[i] = std::exp((double)row.at<float>(i) - maxv);
    for (double& v : p)
        v /= sum;
    return p;
}

double maxDifference(const std::vector<double>& p, const cv::FileNode& topK)
{
    double worst = 0;
    for (const cv::FileNode& e : topK)
        worst = std::max(worst, std::abs(p.at((int)e["id"]) - (double)e["p"]));
    return worst;
}

std::string onnxLlmError(const std::string& name)
{
    try
    {
        cv::dnn::readNet(testModel("onnx_llm_errors/" + name + "/model.onnx"));
    }
    catch (const cv::Exception& e)
    {
        return e.what();
    }
    return "(no error)";
}

cv::Mat runElementwise(const std::string& operation, const cv::Mat& a, const cv::Mat& b)
{
    cv::dnn::LayerParams lp;
    lp.name = "op";
    lp.type = "LLMElementwise";
    lp.set("operation", operation);
    cv::dnn::Net net;
    const int id = net.addLayer(lp.name, lp.type, lp);
    net.connect(0, 0, id, 0);
    if (b.empty())
        net.setInput(a);
    else
    {
        net.connect(0, 1, id, 1);
        net.setInputsNames({"a", "b"});
        net.setInput(a, "a");
        net.setInput(b, "b");
    }
    return net.forward().clone();
}

} // namespace llm_test
