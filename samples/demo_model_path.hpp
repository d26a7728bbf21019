// Where the samples find the project's demo model by default (models/demo, trained by
// tools/demo_model): two folders above the program, which runs from build/bin.

#ifndef OPENCV_DNN_LLM_SAMPLES_DEMO_MODEL_PATH_HPP
#define OPENCV_DNN_LLM_SAMPLES_DEMO_MODEL_PATH_HPP

#include <string>
#include <unistd.h>

inline std::string demoModelPath()
{
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    const std::string exe = n > 0 ? std::string(buf, (size_t)n) : std::string("./x");
    return exe.substr(0, exe.find_last_of('/')) + "/../../models/demo/demo-stories.gguf";
}

#endif
