// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Vision-language models in batches, with prompt lookup and draft models, and in saved sessions,
// on every projector (LLaVA, Gemma 3, Idefics3, llava-1.6): the answers are libmtmd's
// (test/data/oracle/vision/README.md) and a lone run's; session files with images, their
// versions and damaged ones. Each projector against libmtmd: test_vision_projectors.cpp.

#include <gtest/gtest.h>
#include <opencv2/dnn.hpp>
#include <opencv2/dnn/llm.hpp>
#include <opencv2/dnn/text_generation.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "test_common.hpp"
#include "vision_test_common.hpp"
#include "../../modules/dnn/src/llm/kv_cache/kv_sequence_file.hpp"

using namespace cv;
using namespace cv::dnn;
using llm_test::drawTestImage;
using llm_test::errorOf;
using llm_test::greedy;
using llm_test::oracle;
using llm_test::visionModel;

namespace {


struct VisionPair
{
    const char* name;
    const char* lm;
    const char* mmproj;
    const char* oracleA;  // two oracle records of the same prompt with two images
    const char* oracleB;
    bool windows;         // the language model has sliding-window layers
};

// gtest prints a parameter without a printer as its bytes (pointers, different every run).
void PrintTo(const VisionPair& p, std::ostream* os)
{
    *os << p.name;
}

const VisionPair kLLaVA{"llava", "lm.gguf", "mmproj.gguf", "llava_mlp_56x56.json", "llava_mlp_80x48.json", false};
const VisionPair kGemma3{"gemma3", "gemma3_lm.gguf", "gemma3_mmproj.gguf", "gemma3_112x112.json", "gemma3_200x150.json", true};
const VisionPair kIdefics3{"idefics3", "lm_idefics3.gguf", "mmproj_idefics3.gguf", "idefics3_56x56.json",
                           "idefics3_80x48.json", false};
const VisionPair kLlava16{"llava16", "lm.gguf", "mmproj_llava16.gguf", "llava16_80x48.json", "llava16_120x100.json",
                          false};

Mat oracleImage(const nlohmann::json& ref)
{
    return drawTestImage(ref["image_size"][0], ref["image_size"][1]);
}

class VisionWith : public ::testing::TestWithParam<VisionPair>
{
protected:
    TextGenerationModel load() const
    {
        return TextGenerationModel(visionModel(GetParam().lm), visionModel(GetParam().mmproj));
    }
};

std::vector<int> loneIds(TextGenerationModel& m, const std::string& prompt, const std::vector<Mat>& images,
                         const GenerationConfig& config)
{
    m.generate(prompt, images, config);
    return m.getGeneratedTokenIds();
}

// One batch: both oracle images (llava, gemma3: their rows have the same ids -1, -2, ... but
// other embeddings; idefics3, llava-1.6: tiles and overview), the first again (prefilled once and shared) and a prompt without an image; two
// sequences at a time, so that prompts join as others finish. Greedy: libmtmd's answers inside
// the batch (for gemma3 they differ from a causal image's, so each sequence's image span is
// non-causal). Sampled: completion i equals a lone run with seed + i, token for token.
TEST_P(VisionWith, batchWithImagesEqualsLoneRunsAndLlamaCpp)
{
    const nlohmann::json a = oracle(GetParam().oracleA), b = oracle(GetParam().oracleB);
    TextGenerationModel m = load();
    m.setMaxParallelSequences(2);
    const std::string prompt = a["prompt"];
    const std::vector<String> prompts{prompt, prompt, prompt, "Describe"};
    const std::vector<std::vector<Mat>> images{{oracleImage(a)}, {oracleImage(b)}, {oracleImage(a)}, {}};

    const std::vector<std::vector<int>> greedyIds = m.generateBatchTokenIds(prompts, images, greedy(8));
    ASSERT_EQ(greedyIds.size(), 4u);
    EXPECT_EQ(greedyIds[0], a["greedy_ids"].get<std::vector<int>>());
    EXPECT_EQ(greedyIds[1], b["greedy_ids"].get<std::vector<int>>());
    EXPECT_EQ(greedyIds[2], a["greedy_ids"].get<std::vector<int>>());
    EXPECT_EQ(greedyIds[3], loneIds(m, "Describe", {}, greedy(8)));
    if (a.contains("causal_greedy_ids"))
        EXPECT_NE(greedyIds[0], a["causal_greedy_ids"].get<std::vector<int>>());

    GenerationConfig sampled = greedy(12);
    sampled.temperature = 0.9f;
    sampled.seed = 3;
    const std::vector<std::vector<int>> batch = m.generateBatchTokenIds(prompts, images, sampled);
    const std::vector<String> texts = m.generateBatch(prompts, images, sampled);
    for (size_t i = 0; i < prompts.size(); i++)
    {
        GenerationConfig lone = sampled;
        lone.seed = sampled.seed + (int)i;
        EXPECT_EQ(batch[i], loneIds(m, prompts[i], images[i], lone)) << "prompt " << i;
        EXPECT_EQ(texts[i], m.generate(prompts[i], images[i], lone)) << "prompt " << i;
    }
    Net net = m.getNetwork();
    EXPECT_LE(getLLMKVCache(net)->getSequenceIds().size(), 1u);  // the batch's sequences are gone

    // After a batch, the step API's own image rows are still what its cache holds.
    m.generate(prompt, {oracleImage(b)}, greedy(8));
    m.generate(prompt, {oracleImage(b)}, greedy(8));
    EXPECT_EQ(m.getGeneratedTokenIds(), b["greedy_ids"].get<std::vector<int>>());

    const std::string e = errorOf([&] { m.generateBatch(prompts, {{oracleImage(a)}}, greedy(1)); });
    EXPECT_NE(e.find("4 prompts but 1 lists of images"), std::string::npos) << e;
    const std::string markers = errorOf([&] { m.generateBatch({prompt}, {{}}, greedy(1)); });
    EXPECT_NE(markers.find("more image markers"), std::string::npos) << markers;
}

// Prompt lookup drafts on prompts with images (the lookup skips the image rows): the greedy
// ids are plain greedy's and libmtmd's, alone and in a batch; something was drafted and kept.
TEST_P(VisionWith, promptLookupWithImagesKeepsGreedyIds)
{
    const nlohmann::json a = oracle(GetParam().oracleA), b = oracle(GetParam().oracleB);
    TextGenerationModel m = load();
    const std::string prompt = a["prompt"];
    int drafted = 0, kept = 0;
    for (const nlohmann::json* ref : {&a, &b})
    {
        const std::vector<Mat> image{oracleImage(*ref)};
        const std::vector<int> plain = loneIds(m, prompt, image, greedy(32));
        for (int ngram : {1, 3})
        {
            GenerationConfig drafts = greedy(32);
            drafts.draftTokens = 4;
            drafts.lookupNgram = ngram;
            EXPECT_EQ(loneIds(m, prompt, image, drafts), plain) << "ngram " << ngram;
            drafted += m.getDraftCounts()[0];
            kept += m.getDraftCounts()[1];
            const std::vector<int> expected = (*ref)["greedy_ids"];
            EXPECT_EQ(std::vector<int>(plain.begin(), plain.begin() + expected.size()), expected);
            const std::vector<std::vector<int>> batch =
                m.generateBatchTokenIds({prompt, prompt + " it"}, {image, image}, drafts);
            EXPECT_EQ(batch[0], plain) << "ngram " << ngram;
            EXPECT_EQ(batch[1], loneIds(m, prompt + " it", image, greedy(32))) << "ngram " << ngram;
        }
    }
    std::cout << "prompt lookup with images: " << drafted << " drafted, " << kept << " kept" << std::endl;
    EXPECT_GT(drafted, 0);
    if (GetParam().windows)  // gemma3's answers repeat tokens: drafts are kept
        EXPECT_GT(kept, 0);
}

// A draft model cannot see the images: refused by name, alone and in a batch (text prompts
// still draft with it).
TEST_P(VisionWith, draftModelWithImagesIsRefused)
{
    const nlohmann::json a = oracle(GetParam().oracleA);
    TextGenerationModel m = load();
    m.setDraftModel(visionModel(GetParam().lm));
    GenerationConfig drafts = greedy(4);
    drafts.draftTokens = 3;
    const std::string prompt = a["prompt"];
    const std::vector<Mat> image{oracleImage(a)};
    for (const std::string& e : {errorOf([&] { m.generate(prompt, image, drafts); }),
                                 errorOf([&] { m.generateBatch({prompt}, {image}, drafts); })})
        EXPECT_NE(e.find("draft model (setDraftModel) of a prompt with images is not supported"), std::string::npos)
            << e;
    EXPECT_EQ(loneIds(m, "Describe", {}, drafts), loneIds(m, "Describe", {}, greedy(4)));
}

struct TempPath
{
    std::string path = cv::tempfile(".kvseq");
    ~TempPath() { std::remove(path.c_str()); }
};

// The next-token logits of sequence 0 after feeding `token`.
Mat logitsAfter(TextGenerationModel& m, int token)
{
    Net net = m.getNetwork();
    setLLMBatch(net, std::vector<int>{0});
    net.setInput(llm_test::idsToMat({token}));
    return net.forward().clone();
}

// A chat turn about an image, saved and loaded into another model: the next token's logits are
// bit-identical, and the next turn (the image not given again) reuses the cache's prefix, image
// rows included, exactly as the model that saved it does.
TEST_P(VisionWith, sessionWithImageRestoresBitExactly)
{
    const nlohmann::json a = oracle(GetParam().oracleA);
    TempPath file;
    TextGenerationModel original = load(), twin = load();
    for (TextGenerationModel* m : {&original, &twin})
    {
        m->setChatTemplate("chatml");
        m->chat("<__media__>What is this?", {oracleImage(a)}, greedy(4));
    }
    original.saveSession(file.path);

    TextGenerationModel restored = load();
    restored.setChatTemplate("chatml");
    const int length = restored.loadSession(file.path);
    EXPECT_EQ(length, (int)(original.getPromptTokenIds().size() + original.getGeneratedTokenIds().size() - 1));
    const String expected = twin.chat("And the colours?", greedy(6));
    EXPECT_EQ(restored.chat("And the colours?", greedy(6)), expected);
    EXPECT_EQ(restored.getPromptTokenIds(), twin.getPromptTokenIds());
    EXPECT_EQ(restored.getGeneratedTokenIds(), twin.getGeneratedTokenIds());
    // A loaded window layer holds only the rows its next token attended to (the saving model's
    // pages may still hold older ones), so with Gemma 3's window a restored model may feed more.
    const bool windows = GetParam().windows;
    if (windows)
        EXPECT_GE(restored.getLastPrefillTokenCount(), twin.getLastPrefillTokenCount());
    else
        EXPECT_EQ(restored.getLastPrefillTokenCount(), twin.getLastPrefillTokenCount());
    const std::vector<int> prompt = restored.getPromptTokenIds();
    const int imageRows = (int)std::count_if(prompt.begin(), prompt.end(), [](int id) { return id < 0; });
    EXPECT_EQ(imageRows, a["image_tokens"].get<int>());
    // Without window layers: the image is not fed again. (Gemma 3's window layers, window 8, do not hold what
    // the turn's shorter common prefix would attend to: the prompt is fed again.)
    const int lastImageRow = (int)(std::find_if(prompt.rbegin(), prompt.rend(), [](int id) { return id < 0; }).base() -
                                   prompt.begin()) - 1;
    if (!windows)
        EXPECT_LT(restored.getLastPrefillTokenCount(), (int)prompt.size() - lastImageRow - 1);

    TextGenerationModel again = load();
    again.loadSession(file.path);
    EXPECT_EQ(cv::norm(logitsAfter(again, 7), logitsAfter(original, 7), NORM_INF), 0.0);
}

// The image's identity is part of the session: the same prompt with another image (same ids)
// is fed again from the image on; with the saved image, only the last token is.
TEST_P(VisionWith, restoredSessionTellsImagesApart)
{
    const nlohmann::json a = oracle(GetParam().oracleA), b = oracle(GetParam().oracleB);
    const std::string prompt = a["prompt"];
    TempPath file;
    {
        TextGenerationModel original = load();
        original.generate(prompt, {oracleImage(a)}, greedy(8));
        original.saveSession(file.path);
    }
    TextGenerationModel other = load();
    other.loadSession(file.path);
    EXPECT_EQ(loneIds(other, prompt, {oracleImage(b)}, greedy(8)), b["greedy_ids"].get<std::vector<int>>());
    const std::vector<int> ids = other.getPromptTokenIds();
    const int firstImageRow = (int)(std::find_if(ids.begin(), ids.end(), [](int id) { return id < 0; }) - ids.begin());
    EXPECT_GE(other.getLastPrefillTokenCount(), (int)ids.size() - firstImageRow);

    TextGenerationModel same = load();
    same.loadSession(file.path);
    EXPECT_EQ(loneIds(same, prompt, {oracleImage(a)}, greedy(8)), a["greedy_ids"].get<std::vector<int>>());
    TextGenerationModel reference = load();  // what the saving model itself reuses
    reference.generate(prompt, {oracleImage(a)}, greedy(8));
    reference.generate(prompt, {oracleImage(a)}, greedy(8));
    EXPECT_EQ(reference.getGeneratedTokenIds(), a["greedy_ids"].get<std::vector<int>>());
    if (!GetParam().windows)  // (Gemma 3's loaded window layers may need the prompt again)
    {
        EXPECT_EQ(same.getLastPrefillTokenCount(), reference.getLastPrefillTokenCount());
        EXPECT_EQ(same.getLastPrefillTokenCount(), 1);
    }
    else
        EXPECT_GE(same.getLastPrefillTokenCount(), reference.getLastPrefillTokenCount());
}

INSTANTIATE_TEST_CASE_P(Vision, VisionWith, ::testing::Values(kLLaVA, kGemma3, kIdefics3, kLlava16),
                        [](const ::testing::TestParamInfo<VisionPair>& info) { return std::string(info.param.name); });

// Two turns with an image each, saved after the second: the restored conversation holds both
// images (by digest, with their embeddings), and its third turn is the saving model's.
TEST(VisionSession, twoImagesInTheConversation)
{
    const Mat first = drawTestImage(56, 56), second = drawTestImage(80, 48);
    TempPath file;
    auto load = [] {
        TextGenerationModel m(visionModel("lm.gguf"), visionModel("mmproj.gguf"));
        m.setChatTemplate("chatml");
        return m;
    };
    TextGenerationModel original = load(), twin = load(), restored = load();
    for (TextGenerationModel* m : {&original, &twin})
    {
        m->chat("<__media__>What is this?", {first}, greedy(3));
        m->chat("And <__media__> this?", {second}, greedy(3));
    }
    original.saveSession(file.path);
    restored.loadSession(file.path);
    const String expected = twin.chat("Compare them.", greedy(5));
    EXPECT_EQ(restored.chat("Compare them.", greedy(5)), expected);
    EXPECT_EQ(restored.getPromptTokenIds(), twin.getPromptTokenIds());
    EXPECT_EQ(restored.getLastPrefillTokenCount(), twin.getLastPrefillTokenCount());
    const std::vector<int> prompt = restored.getPromptTokenIds();
    EXPECT_EQ(std::count_if(prompt.begin(), prompt.end(), [](int id) { return id < 0; }), 32);
    const int afterLastImage = (int)(std::find_if(prompt.rbegin(), prompt.rend(), [](int id) { return id < 0; }).base() -
                                     prompt.begin());
    EXPECT_LE(restored.getLastPrefillTokenCount(), (int)prompt.size() - afterLastImage);  // neither image is fed again
    // The conversation's images went into the session once each, as 16 x 256 float rows.
    const size_t bytes = llm_test::readFileBytes(file.path).size();
    EXPECT_GT(bytes, 2u * 16 * 256 * 4);
}

// A session file's parts (kv_cache/kv_sequence_file.hpp): where its tokens and its extra data
// (the session) lie, so that a test can change them and seal the file again.
struct SessionFile
{
    std::vector<char> bytes;
    size_t tokens = 0, length = 0, extraSize = 0, extra = 0;

    explicit SessionFile(const std::string& path) : bytes(llm_test::readFileBytes(path))
    {
        size_t pos = 8 + 4 + 4 + 8 + 8;
        pos += 4 + u32(pos);                  // description
        const uint32_t layers = u32(pos);
        pos += 5 * 4 + 4 * (size_t)layers;    // shape, windows
        length = u32(pos);
        tokens = pos + 4;
        extraSize = tokens + 4 * length;
        extra = extraSize + 8;
    }
    uint32_t u32(size_t at) const
    {
        uint32_t v;
        std::memcpy(&v, bytes.data() + at, 4);
        return v;
    }
    uint64_t extraBytes() const
    {
        uint64_t v;
        std::memcpy(&v, bytes.data() + extraSize, 8);
        return v;
    }
    std::vector<uchar> session() const
    {
        return std::vector<uchar>(bytes.begin() + extra, bytes.begin() + extra + extraBytes());
    }
    //! The file with `session` as its extra data and token `index` set to `token` (if >= 0), checksum fixed.
    void write(const std::string& path, const std::vector<uchar>& session, int index = -1, int token = 0) const
    {
        std::vector<char> out(bytes.begin(), bytes.begin() + extraSize);
        if (index >= 0)
            std::memcpy(out.data() + tokens + 4 * index, &token, 4);
        const uint64_t n = session.size();
        out.insert(out.end(), (const char*)&n, (const char*)&n + 8);
        out.insert(out.end(), session.begin(), session.end());
        out.insert(out.end(), bytes.begin() + extra + extraBytes(), bytes.end() - 8);
        const uint64_t sum = cv::dnn::llm::kvChecksum(out.data(), out.size());
        out.insert(out.end(), (const char*)&sum, (const char*)&sum + 8);
        std::ofstream f(path, std::ios::binary | std::ios::trunc);
        f.write(out.data(), (std::streamsize)out.size());
    }
};

// Sessions with images are version 2 of the session data (text sessions stay version 1, which
// loads as before); damaged or mismatched ones are clear errors and leave the session as it was.
TEST(VisionSession, versionsAndDamagedFiles)
{
    const nlohmann::json ref = oracle("llava_mlp_56x56.json");
    const std::string prompt = ref["prompt"];
    TempPath withImage, textOnly, damaged;
    TextGenerationModel m(visionModel("lm.gguf"), visionModel("mmproj.gguf"));
    m.generate("Describe", {}, greedy(4));
    m.saveSession(textOnly.path);
    m.generate(prompt, {drawTestImage(56, 56)}, greedy(8));
    m.saveSession(withImage.path);
    const SessionFile text(textOnly.path), image(withImage.path);
    ASSERT_EQ(text.session().at(0), 1);  // version 1: a text session, as older builds wrote it
    const std::vector<uchar> session = image.session();
    ASSERT_EQ(session.at(0), 2);

    TextGenerationModel target(visionModel("lm.gguf"), visionModel("mmproj.gguf"));
    EXPECT_EQ(target.loadSession(textOnly.path), (int)text.length);
    auto loadError = [&](const std::vector<uchar>& bytes, int index = -1, int token = 0) {
        image.write(damaged.path, bytes, index, token);
        return errorOf([&] { target.loadSession(damaged.path); });
    };
    image.write(damaged.path, session);
    EXPECT_EQ(target.loadSession(damaged.path), (int)image.length);  // rewritten unchanged: loads

    std::vector<uchar> v4 = session;
    v4[0] = 4;
    EXPECT_NE(loadError(v4).find("version 4; this build reads versions 1 to 3"), std::string::npos);
    std::vector<uchar> shorter(session.begin(), session.end() - 2);
    EXPECT_NE(loadError(shorter).find("ends inside"), std::string::npos) << loadError(shorter);
    std::vector<uchar> badIndex = session;
    badIndex[badIndex.size() - 4] = 9;  // the table's last image index
    EXPECT_NE(loadError(badIndex).find("refers to image 9; it holds 1"), std::string::npos) << loadError(badIndex);
    const std::string row = loadError(session, 1, -1000);
    EXPECT_NE(row.find("image row id -1000; its images have 16 rows"), std::string::npos) << row;

    // Not mistaken for the damaged ones: the last good load is what the model holds.
    EXPECT_EQ(loneIds(target, prompt, {drawTestImage(56, 56)}, greedy(8)), ref["greedy_ids"].get<std::vector<int>>());
    EXPECT_EQ(target.getLastPrefillTokenCount(), 1);

    TextGenerationModel noMMProj(visionModel("lm.gguf"));
    const std::string e = errorOf([&] { noMMProj.loadSession(withImage.path); });
    EXPECT_NE(e.find("session with images; load it into a model made with its mmproj"), std::string::npos) << e;
    TextGenerationModel gemma3(visionModel("gemma3_lm.gguf"), visionModel("gemma3_mmproj.gguf"));
    EXPECT_THROW(gemma3.loadSession(withImage.path), cv::Exception);  // another model
}

}  // namespace
