// llama.cpp's tokenizer test vectors (../shared/testdata/llama.cpp-vocab, and the project's own
// in test/data/tokenizer), shared by the tokenizer tests.
#ifndef OPENCV_DNN_LLM_VOCAB_TEST_VECTORS_HPP
#define OPENCV_DNN_LLM_VOCAB_TEST_VECTORS_HPP

#include <string>
#include <vector>

namespace llm_test {

//! ../shared/testdata/llama.cpp-vocab/ggml-vocab-<name>.gguf
std::string vocabPath(const std::string& name);

//! A whole file as a string (throws std::runtime_error when it cannot be read).
std::string readTextFile(const std::string& path);

//! The inputs of an .inp file, as llama.cpp's test-tokenizer-0 splits them.
std::vector<std::string> readInputFile(const std::string& path);

//! The ids of an .out file, one line per input.
std::vector<std::vector<int>> readIdFile(const std::string& path);

//! The inputs of <vocab>.inp, as llama.cpp's test-tokenizer-0 splits them.
std::vector<std::string> readVocabInputs(const std::string& name);

//! The expected ids of <vocab>.out, one line per input.
std::vector<std::vector<int>> readVocabExpectedIds(const std::string& name);

//! "1 2 3"
std::string joinIds(const std::vector<int>& ids);

} // namespace llm_test

#endif
