// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// JSON under jsonSchema / jsonMode is compact by default (as OpenAI's structured output), with
// llama.cpp's whitespace rule as an option (GenerationConfig::jsonFreeWhitespace). The converter
// against texts written by hand, and the demo model answering a two-field schema.

#include <gtest/gtest.h>
#include <opencv2/dnn/text_generation.hpp>

#include <nlohmann/json.hpp>

#include "../../modules/dnn/src/llm/grammar/gbnf_parser.hpp"
#include "../../modules/dnn/src/llm/grammar/grammar_matcher.hpp"
#include "../../modules/dnn/src/llm/grammar/json_schema_to_grammar.hpp"
#include "test_common.hpp"

namespace {

using namespace cv::dnn::llm;
using nlohmann::json;

const char* kPersonSchema = R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"}}, "required": ["name", "age"]})";

bool matches(const std::string& gbnf, const std::string& text)
{
    GrammarMatcher m(parseGbnf(gbnf));
    return m.accept(text) && m.canEnd();
}

bool hasWhitespaceOutsideStrings(const std::string& text)
{
    bool inString = false, escaped = false;
    for (char c : text)
    {
        if (inString)
        {
            inString = escaped || c != '"';
            escaped = !escaped && c == '\\';
        }
        else if (c == '"')
            inString = true;
        else if (c == ' ' || c == '\n' || c == '\t' || c == '\r')
            return true;
    }
    return false;
}

TEST(GrammarJsonWhitespace, compactAcceptsNoWhitespaceLlamaCppRuleSome)
{
    const std::string compact = jsonSchemaToGbnf(kPersonSchema, JsonWhitespace::Compact);
    const std::string free = jsonSchemaToGbnf(kPersonSchema, JsonWhitespace::LlamaCpp);
    EXPECT_EQ(jsonSchemaToGbnf(kPersonSchema), free);  // the converter's default: llama.cpp's
    const std::string tight = R"({"name":"Tom","age":3})";
    const std::string spaced = R"({ "name": "Tom", "age": 3 })";
    const std::string indented = "{\n  \"name\": \"Tom\",\n  \"age\": 3\n}";
    EXPECT_TRUE(matches(compact, tight));
    EXPECT_FALSE(matches(compact, spaced));
    EXPECT_FALSE(matches(compact, indented));
    EXPECT_TRUE(matches(free, tight));
    EXPECT_TRUE(matches(free, spaced));
    EXPECT_TRUE(matches(free, indented));
    // Whitespace inside strings is text, not layout: allowed either way.
    EXPECT_TRUE(matches(compact, R"({"name":"Tom Li","age":3})"));
    EXPECT_FALSE(hasWhitespaceOutsideStrings(R"({"name":"Tom \" Li","age":3})"));
    EXPECT_TRUE(hasWhitespaceOutsideStrings(spaced));

    // Arrays, nested objects and any JSON value (jsonMode) alike.
    const char* nested = R"({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}},
        "pos": {"type": "object", "properties": {"x": {"type": "number"}}}}})";
    EXPECT_TRUE(matches(jsonSchemaToGbnf(nested, JsonWhitespace::Compact), R"({"tags":["a","b"],"pos":{"x":1.5}})"));
    EXPECT_FALSE(matches(jsonSchemaToGbnf(nested, JsonWhitespace::Compact), R"({"tags":["a", "b"]})"));
    EXPECT_TRUE(matches(anyJsonValueGbnf(JsonWhitespace::Compact), R"({"a":[1,{"b":null}],"c":true})"));
    EXPECT_FALSE(matches(anyJsonValueGbnf(JsonWhitespace::Compact), R"({"a": 1})"));
    EXPECT_TRUE(matches(anyJsonValueGbnf(JsonWhitespace::LlamaCpp), R"({"a": 1})"));
}

// The demo model (a TinyStories model that knows no JSON) under a two-field schema: with the
// default compact JSON every answer ends within a few tokens and parses; with llama.cpp's rule
// it spends tokens on whitespace.
TEST(GrammarJsonWhitespace, demoModelAnswersATwoFieldSchemaInFewTokens)
{
    cv::dnn::TextGenerationModel model(llm_test::projectRoot() + "/models/demo/demo-stories.gguf");
    cv::dnn::GenerationConfig cfg;
    cfg.jsonSchema = kPersonSchema;
    cfg.maxNewTokens = 96;
    cfg.temperature = 0.8f;
    size_t compactTokens = 0, freeTokens = 0;
    const int seeds = 6;
    for (int seed = 0; seed < seeds; seed++)
    {
        cfg.seed = seed;
        cfg.jsonFreeWhitespace = false;
        const std::string text = model.generate("Once upon a time", cfg);
        const size_t tokens = model.getGeneratedTokenIds().size();
        EXPECT_LE(tokens, 40u) << text;
        compactTokens += tokens;
        json value;
        ASSERT_NO_THROW(value = json::parse(text)) << text;
        EXPECT_TRUE(value["name"].is_string()) << text;
        EXPECT_TRUE(value["age"].is_number_integer()) << text;
        EXPECT_FALSE(hasWhitespaceOutsideStrings(text)) << text;

        cfg.jsonFreeWhitespace = true;
        model.generate("Once upon a time", cfg);
        freeTokens += model.getGeneratedTokenIds().size();
    }
    std::cout << "[ demo model ] two-field schema, mean tokens: compact " << compactTokens / (double)seeds
              << ", llama.cpp whitespace " << freeTokens / (double)seeds << std::endl;
    EXPECT_LT(compactTokens * 2, freeTokens);
}

} // namespace
