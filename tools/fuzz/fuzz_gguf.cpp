// libFuzzer target: arbitrary bytes as a GGUF file, through the metadata reader and the
// GGUF-to-Net builder. Anything but a cv::Exception (a crash, a sanitizer report, a leak, a
// timeout) is a bug.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>

static std::string scratchPath()
{
    static const std::string path = "/dev/shm/fuzz_gguf_" + std::to_string(getpid()) + ".gguf";
    return path;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string path = scratchPath();
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f)
        return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    try
    {
        cv::Ptr<cv::dnn::GGUFFile> file = cv::dnn::GGUFFile::open(path);
        for (const cv::String& key : file->getMetadataKeys())
        {
            const cv::String type = file->getMetadataType(key);
            if (type == "string")
                file->getString(key);
            else if (type == "array[string]")
                file->getStringArray(key);
            else if (type.compare(0, 6, "array[") == 0 && type != "array[array]")
            {
                try { file->getNumberArray(key); } catch (const cv::Exception&) {}
            }
            else if (type != "array[array]")
                file->getNumber(key);
        }
        for (const cv::String& name : file->getTensorNames())
        {
            file->getTensorType(name);
            file->getTensorShape(name);
        }
        cv::dnn::Net net = cv::dnn::readNetFromGGUF(path);
        net.setInput(cv::Mat(1, 2, CV_32F, cv::Scalar(1)));
        net.forward();
    }
    catch (const cv::Exception&)
    {
    }
    return 0;
}
