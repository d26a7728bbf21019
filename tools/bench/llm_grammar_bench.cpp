// The cost of grammar-constrained sampling per token (issue 20): the time to compute the mask
// of allowed tokens (GrammarMatcher + TokenTrie, as Completion does it) over a model's whole
// vocabulary, along a JSON text that follows a schema, token by token.
//
//   llm_grammar_bench --model=FILE [--json-schema=TEXT|@FILE] [--text=TEXT|@FILE] [--repetitions=N]
//
// The model file may hold only a vocabulary (tokenizer.ggml.*). Prints the vocabulary size,
// the trie's build time and the mask time per token (mean, median, max). Compare it with a
// decode step of the model (llm_bench).
//
// A tool, not a sample: it times internals that the public API does not expose (the tokenizer's
// pieces, TokenTrie, GrammarMatcher), so it includes the library's private headers, as the tests
// do. It is built beside its smoke test (test/tests.cmake) and shares the samples' command line.

#include <opencv2/dnn.hpp>
#include <opencv2/dnn/gguf.hpp>

#include "../../samples/command_line.hpp"

#include "../../modules/dnn/src/llm/grammar/gbnf_parser.hpp"
#include "../../modules/dnn/src/llm/grammar/json_schema_to_grammar.hpp"
#include "../../modules/dnn/src/llm/grammar/token_mask.hpp"
#include "../../modules/dnn/src/llm/tokenizer/tokenizer.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace cv;
using namespace cv::dnn;
using namespace cv::dnn::llm;

namespace {

const char* const keys =
    "{help h usage ? |    | print this help }"
    "{model m        |    | GGUF file with a tokenizer (a vocabulary-only file will do) (required) }"
    "{json-schema    |    | the JSON schema (text or @FILE; default: a record with strings, numbers, an array, an enum) }"
    "{text           |    | the JSON text to walk (text or @FILE; default: one that follows the default schema) }"
    "{repetitions    | 3  | walks of the text }";

const char* const kSchema = R"({"type": "object", "properties": {
  "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
  "status": {"enum": ["active", "inactive", "pending"]}, "score": {"type": "number"},
  "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
              "required": ["street", "city"]}},
  "required": ["name", "age", "tags", "status", "address"]})";

// required properties come first, then the optional ones (the order llama.cpp's conversion allows)
const char* const kText = R"({"name": "Ada Lovelace, Countess of Lovelace", "age": 36,
 "tags": ["mathematician", "writer", "analytical engine", "notes on the Bernoulli numbers"],
 "status": "inactive", "address": {"street": "St James's Square 12", "city": "London"},
 "email": "ada@example.org", "score": 98.25})";

std::string valueOrFile(const std::string& v)
{
    if (v.empty() || v[0] != '@')
        return v;
    std::ifstream f(v.substr(1), std::ios::binary);
    CV_Assert(f.good());
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

} // namespace

int main(int argc, char** argv)
{
    SampleCommandLine cl(argc, argv, keys, "Grammar mask cost per token");
    const std::string modelPath = cl.getString("model");
    if (modelPath.empty())
        cl.fail("--model is required");
    const std::string schema = cl.given("json-schema") ? valueOrFile(cl.getString("json-schema")) : kSchema;
    const std::string text = cl.given("text") ? valueOrFile(cl.getString("text")) : kText;
    const int repetitions = cl.getInt("repetitions", 1);
    try
    {
        Ptr<GGUFFile> file = GGUFFile::open(modelPath);
        std::shared_ptr<llm::Tokenizer> tok = llm::Tokenizer::fromGGUF(*file);
        TickMeter build;
        build.start();
        std::vector<std::string> pieces((size_t)tok->vocabSize());
        for (int id = 0; id < tok->vocabSize(); id++)
            if (!tok->isSpecial(id) && !tok->isEndOfGeneration(id))
                pieces[(size_t)id] = tok->tokenToPiece(id, false);
        TokenTrie trie(pieces);
        build.stop();
        std::shared_ptr<const Grammar> grammar = parseGbnf(jsonSchemaToGbnf(schema));
        std::vector<double> ms;
        std::vector<uint8_t> allowed;
        double allowedShare = 0;
        size_t tokens = 0;
        for (int r = 0; r < repetitions; r++)
        {
            GrammarMatcher m(grammar);
            TokenTrie::Scratch scratch;  // fresh for each walk, as for each generated sequence
            // The text as a model would write it under the grammar: at each step the longest
            // allowed token that the rest of the text starts with.
            size_t pos = 0;
            tokens = 0;
            while (pos < text.size())
            {
                TickMeter t;
                t.start();
                const int n = trie.mask(m, allowed, scratch);
                t.stop();
                ms.push_back(t.getTimeMilli());
                allowedShare += (double)n / tok->vocabSize();
                int best = -1;
                size_t bestLen = 0;
                for (int id = 0; id < tok->vocabSize(); id++)
                    if (allowed[(size_t)id] && pieces[(size_t)id].size() > bestLen &&
                        text.compare(pos, pieces[(size_t)id].size(), pieces[(size_t)id]) == 0)
                    {
                        best = id;
                        bestLen = pieces[(size_t)id].size();
                    }
                if (best < 0)
                {
                    std::cerr << "llm_grammar_bench: no allowed token continues the text at byte " << pos
                              << " (the text does not follow the schema)" << std::endl;
                    return 1;
                }
                m.accept(pieces[(size_t)best]);
                pos += bestLen;
                tokens++;
            }
            if (!m.canEnd())
            {
                std::cerr << "llm_grammar_bench: the text does not end a sentence of the schema" << std::endl;
                return 1;
            }
        }
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        double sum = 0;
        for (double v : ms) sum += v;
        std::cout << format("vocabulary %d tokens, trie %zu nodes built in %.1f ms\n", tok->vocabSize(),
                            trie.nodeCount(), build.getTimeMilli());
        std::cout << format("text %zu tokens x %d walks: mask per token mean %.3f ms, median %.3f ms, max %.3f ms; "
                            "%.1f%% of the vocabulary allowed on average\n",
                            tokens, repetitions, sum / ms.size(), sorted[sorted.size() / 2], sorted.back(),
                            100.0 * allowedShare / ms.size());
        return 0;
    }
    catch (const cv::Exception& e)
    {
        std::cerr << "llm_grammar_bench: " << e.what() << std::endl;
        return 1;
    }
}
