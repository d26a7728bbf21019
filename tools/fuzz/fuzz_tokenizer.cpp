// libFuzzer target: arbitrary bytes through the tokenizers (encode with and without special
// tokens, then decode), and arbitrary ids through decode. The vocabularies are llama.cpp's
// test vocabularies (SentencePiece, byte-level BPE with several pre-tokenizers, gpt-neox's
// llama.cpp "default" among them, WordPiece), named by FUZZ_VOCAB_DIR.

#include <opencv2/dnn/tokenizer.hpp>

#include <cstdlib>
#include <string>
#include <vector>

static std::vector<cv::Ptr<cv::dnn::Tokenizer>>& tokenizers()
{
    static std::vector<cv::Ptr<cv::dnn::Tokenizer>> all = [] {
        const char* dir = std::getenv("FUZZ_VOCAB_DIR");
        const std::string base = dir ? dir : "../shared/testdata/llama.cpp-vocab";
        std::vector<cv::Ptr<cv::dnn::Tokenizer>> t;
        for (const char* name : {"llama-spm", "gpt-2", "bert-bge", "deepseek-coder", "phi-3", "gpt-neox"})
            t.push_back(cv::dnn::Tokenizer::create(base + "/ggml-vocab-" + name + ".gguf"));
        return t;
    }();
    return all;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    cv::dnn::Tokenizer& tok = *tokenizers()[data[0] % tokenizers().size()];
    const std::vector<int> ids = tok.encode(text, (data[0] & 8) != 0, (data[0] & 16) != 0);
    tok.decode(ids, (data[0] & 32) != 0);
    // The same bytes read as token ids, in and out of range.
    std::vector<int> raw;
    for (size_t i = 0; i + 4 <= text.size(); i += 4)
        raw.push_back(*reinterpret_cast<const int*>(text.data() + i));
    try
    {
        tok.decode(raw, true);
    }
    catch (const cv::Exception&)
    {
    }
    return 0;
}
