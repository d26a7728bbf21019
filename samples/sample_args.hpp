// Command-line helpers shared by the benchmark samples.
#ifndef OPENCV_DNN_LLM_SAMPLE_ARGS_HPP
#define OPENCV_DNN_LLM_SAMPLE_ARGS_HPP

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <string>

//! Prints "<program>: msg" and the usage line to stderr and exits with status 2.
[[noreturn]] inline void usageError(const char* program, const std::string& usage, const std::string& msg)
{
    std::cerr << program << ": " << msg << "\n" << "usage: " << usage << "\n";
    std::exit(2);
}

//! A positive int, or -1 when s is not one.
inline int parsePositiveInt(const std::string& s)
{
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || errno != 0 || v <= 0 || v > INT_MAX)
        return -1;
    return (int)v;
}

#endif
