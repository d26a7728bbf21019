// The one command-line style of the samples: cv::CommandLineParser with a `keys` string, every
// argument written `--key=value` (multi-word keys in kebab-case: --max-new-tokens=64), a flag
// (a key whose default is `false`) also as `--key` alone, `--help` printing the keys.
//
// CommandLineParser ignores what it does not know (unknown keys, `--key value` leaves the value
// as a stray positional argument) and reads numbers leniently ("12abc" reads as 12).
// SampleCommandLine adds the checks: an unknown key, a value without its key, a key given twice
// (unless listed as repeatable), a key without its value, a value that is not a number or out of
// its range: each prints "<program>: <what is wrong> (see <program> --help)" to stderr and exits
// with status 2. `--help` (or -h) prints parser.printMessage() and exits with status 0.

#ifndef OPENCV_DNN_LLM_SAMPLES_COMMAND_LINE_HPP
#define OPENCV_DNN_LLM_SAMPLES_COMMAND_LINE_HPP

#include <opencv2/core/utility.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

class SampleCommandLine
{
public:
    /** `keys`: CommandLineParser's format, `{names | default | help}`; its first group must be
    `{help h usage ? | | ...}`. `repeatable`: keys that may be given several times (getAll). */
    SampleCommandLine(int argc, const char* const argv[], const char* keys, const char* about,
                      const std::set<std::string>& repeatable = {})
        : parser(argc, argv, keys)
    {
        const std::string exe = argv[0];
        program_ = exe.substr(exe.find_last_of('/') + 1);
        parser.about(about);
        parseKeys(keys);
        for (int i = 1; i < argc; i++)  // --help wins over anything else on the line
            if (groupOf(nameOf(argv[i])) == 0)
            {
                parser.printMessage();
                std::exit(0);
            }
        for (int i = 1; i < argc; i++)
        {
            const std::string arg = argv[i];
            if (arg.size() < 2 || arg[0] != '-')
                fail("unexpected argument '" + arg + "': every value goes with its key, --key=value");
            const size_t eq = arg.find('=');
            const int g = groupOf(nameOf(arg));
            if (g < 0)
                fail("unknown option " + arg.substr(0, eq));
            if (eq == std::string::npos && !groups_[g].flag)
                fail("--" + groups_[g].names[0] + " needs a value: --" + groups_[g].names[0] + "=VALUE");
            const std::string value = eq == std::string::npos ? "true" : arg.substr(eq + 1);
            if (!groups_[g].values.empty() && !repeatable.count(groups_[g].names[0]))
                fail("--" + groups_[g].names[0] + " is given twice");
            groups_[g].values.push_back(value);
        }
        if (!parser.check())
            failWithParserErrors();
    }

    //! "<program>: msg (see <program> --help)" to stderr; exits with status 2.
    [[noreturn]] void fail(const std::string& msg) const
    {
        std::cerr << program_ << ": " << msg << " (see " << program_ << " --help)" << std::endl;
        std::exit(2);
    }

    //! Whether the command line gives this key.
    bool given(const std::string& name) const { return !group(name).values.empty(); }

    //! The value as written (spaces kept), or the key's default.
    std::string getString(const std::string& name) const
    {
        const Group& g = group(name);
        const std::string v = g.values.empty() ? parser.get<cv::String>(name) : parser.get<cv::String>(name, false);
        if (!parser.check())
            failWithParserErrors();
        return v;
    }

    //! Every value of a repeatable key, in order.
    std::vector<std::string> getAll(const std::string& name) const { return group(name).values; }

    //! A flag: `--key` alone or `--key=true|false|1|0`.
    bool getFlag(const std::string& name) const
    {
        const std::string v = getString(name);
        if (v == "true" || v == "1")
            return true;
        if (v == "false" || v == "0" || v.empty())
            return false;
        fail("--" + name + " takes no value or one of true, false, 1, 0; got '" + v + "'");
    }

    //! An integer in [lo, hi].
    int getInt(const std::string& name, long lo = INT_MIN, long hi = INT_MAX) const
    {
        return parseInt(name, trimmed(getString(name)), lo, hi);
    }

    //! An integer in [lo, hi] read from text (e.g. one item of a list).
    int parseInt(const std::string& name, const std::string& s, long lo = INT_MIN, long hi = INT_MAX) const
    {
        char* end = nullptr;
        errno = 0;
        const long v = std::strtol(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno != 0 || v < INT_MIN || v > INT_MAX)
            fail("--" + name + ": invalid number '" + s + "'");
        if (v < lo || v > hi)
            fail("--" + name + " must be " + rangeText(lo, hi) + ", got " + s);
        return (int)v;
    }

    //! A finite number in [lo, hi] (hi may be INFINITY); loOpen / hiOpen exclude the bound.
    double getReal(const std::string& name, double lo, double hi = INFINITY, bool loOpen = false, bool hiOpen = false) const
    {
        const std::string s = trimmed(getString(name));
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(s.c_str(), &end);
        if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
            fail("--" + name + ": invalid number '" + s + "'");
        if (v < lo || v > hi || (loOpen && v == lo) || (hiOpen && v == hi))
        {
            std::ostringstream range;
            if (std::isinf(hi))
                range << (loOpen ? "greater than " : "at least ") << lo;
            else
                range << "in " << (loOpen ? "(" : "[") << lo << ", " << hi << (hiOpen ? ")" : "]");
            fail("--" + name + " must be " + range.str() + ", got " + s);
        }
        return v;
    }

    /** The FILE[:SCALE] items of a repeatable key, each value a comma list (LoRA adapters, as
    llama.cpp's --lora-scaled writes them): the text after an item's last ':' is its scale, a
    finite number; `defaultScale` without one. */
    std::vector<std::pair<std::string, float>> getScaledFiles(const std::string& name, float defaultScale = 1.f) const
    {
        std::vector<std::pair<std::string, float>> items;
        for (const std::string& value : getAll(name))
        {
            std::stringstream ss(value);
            for (std::string item; std::getline(ss, item, ',');)
            {
                const size_t colon = item.find_last_of(':');
                const std::string file = item.substr(0, colon);
                if (file.empty())
                    fail("--" + name + ": an item without its file in '" + value + "'; write FILE[:SCALE],...");
                float scale = defaultScale;
                if (colon != std::string::npos)
                {
                    const std::string text = trimmed(item.substr(colon + 1));
                    char* end = nullptr;
                    errno = 0;
                    scale = std::strtof(text.c_str(), &end);
                    if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(scale))
                        fail("--" + name + ": invalid scale '" + text + "' of " + file);
                }
                items.emplace_back(file, scale);
            }
        }
        return items;
    }

    //! The thread count key: -1 (OpenCV's default) or a positive number.
    int getThreads(const std::string& name = "threads") const
    {
        const int n = getInt(name, -1, 1024);
        if (n == 0)
            fail("--" + name + " must be -1 (OpenCV's default) or positive, got 0");
        return n;
    }

    cv::CommandLineParser parser;

private:
    struct Group
    {
        std::vector<std::string> names;
        bool flag = false;
        std::vector<std::string> values;
    };

    // "--key=value" -> "key"; "" when arg is not an option.
    static std::string nameOf(const std::string& arg)
    {
        if (arg.size() < 2 || arg[0] != '-')
            return std::string();
        const size_t begin = arg[1] == '-' ? 2 : 1;
        return arg.substr(begin, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - begin);
    }

    static std::string trimmed(const std::string& s)
    {
        const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
        return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    }

    static std::string rangeText(long lo, long hi)
    {
        if (hi == INT_MAX)
            return "at least " + std::to_string(lo);
        return "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    }

    // The keys string, read the way CommandLineParser reads it.
    void parseKeys(const std::string& keys)
    {
        for (size_t open = keys.find('{'); open != std::string::npos; open = keys.find('{', open + 1))
        {
            const size_t close = keys.find('}', open);
            std::vector<std::string> fields;
            std::stringstream ss(keys.substr(open + 1, close - open - 1));
            for (std::string f; std::getline(ss, f, '|');)
                fields.push_back(f);
            Group g;
            std::stringstream names(fields.at(0));
            for (std::string n; names >> n;)
                g.names.push_back(n);
            g.flag = groups_.empty() || trimmed(fields.at(1)) == "false";
            groups_.push_back(g);
        }
        CV_Assert(!groups_.empty() && groups_[0].names[0] == "help");
    }

    int groupOf(const std::string& name) const
    {
        for (size_t g = 0; g < groups_.size(); g++)
            for (const std::string& n : groups_[g].names)
                if (n == name)
                    return (int)g;
        return -1;
    }

    const Group& group(const std::string& name) const
    {
        const int g = groupOf(name);
        CV_Assert(g >= 0);  // a key the program did not declare: a bug in the sample
        return groups_[g];
    }

    [[noreturn]] void failWithParserErrors() const
    {
        std::cerr << program_ << ": invalid command line (see " << program_ << " --help)" << std::endl;
        parser.printErrors();
        std::exit(2);
    }

    std::string program_;
    std::vector<Group> groups_;
};

#endif
