#include "vocab_test_vectors.hpp"
#include "test_common.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace llm_test {

std::string vocabPath(const std::string& name)
{
    return sharedTestData("llama.cpp-vocab/ggml-vocab-" + name + ".gguf");
}

std::string readTextFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw std::runtime_error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> readVocabInputs(const std::string& name)
{
    return readInputFile(vocabPath(name) + ".inp");
}

std::vector<std::vector<int>> readVocabExpectedIds(const std::string& name)
{
    return readIdFile(vocabPath(name) + ".out");
}

std::vector<std::string> readInputFile(const std::string& path)
{
    const std::string text = readTextFile(path);
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    size_t start = 0;
    for (size_t pos; (pos = text.find(separator, start)) != std::string::npos; start = pos + separator.size())
        inputs.push_back(text.substr(start, pos - start));
    if (start < text.size())
        inputs.push_back(text.substr(start));
    return inputs;
}

std::vector<std::vector<int>> readIdFile(const std::string& path)
{
    std::istringstream lines(readTextFile(path));
    std::vector<std::vector<int>> expected;
    for (std::string line; std::getline(lines, line);)
    {
        std::istringstream numbers(line);
        std::vector<int> ids;
        for (int id; numbers >> id;)
            ids.push_back(id);
        expected.push_back(ids);
    }
    return expected;
}

std::string joinIds(const std::vector<int>& ids)
{
    std::ostringstream s;
    for (size_t i = 0; i < ids.size(); i++)
        s << (i ? " " : "") << ids[i];
    return s.str();
}

} // namespace llm_test
