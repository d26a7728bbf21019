// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The lists of GGUF architectures a user reads (README.md, opencv2/dnn/gguf.hpp) against the
// architecture table the loader uses: none may omit a row or name an architecture the table
// does not have.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "test_common.hpp"
#include "../../modules/dnn/src/llm/gguf/gguf_architecture.hpp"
#include "../../modules/dnn/src/llm/vision/mmproj_file.hpp"

namespace {

std::string readText(const std::string& relative)
{
    const std::vector<char> bytes = llm_test::readFileBytes(llm_test::projectRoot() + "/" + relative);
    return std::string(bytes.begin(), bytes.end());
}

// The `backticked` words of `text` from the first `start` to the first `end` after it (whole
// lines joined: the list may wrap); empty when `start` or `end` is not found.
std::vector<std::string> backtickedNamesBetween(const std::string& text, const std::string& start, const std::string& end)
{
    const size_t from = text.find(start);
    if (from == std::string::npos)
        return {};
    const size_t to = text.find(end, from + start.size());
    if (to == std::string::npos)
        return {};
    std::vector<std::string> names;
    for (size_t open = text.find('`', from); open != std::string::npos && open < to; )
    {
        const size_t close = text.find('`', open + 1);
        if (close == std::string::npos || close > to)
            break;
        names.push_back(text.substr(open + 1, close - open - 1));
        open = text.find('`', close + 1);
    }
    return names;
}

std::string joined(const std::set<std::string>& names)
{
    std::string s;
    for (const std::string& n : names)
        s += (s.empty() ? "" : ", ") + n;
    return s;
}

// Expects `listed` (what `where` names) to be the table's architectures, each once.
void expectTableListed(const std::vector<std::string>& listed, const std::string& where)
{
    const std::vector<std::string> table = cv::dnn::llm::ggufArchitectureNames();
    ASSERT_FALSE(listed.empty()) << where << ": no list of architectures found";
    const std::set<std::string> tableSet(table.begin(), table.end()), listedSet(listed.begin(), listed.end());
    std::set<std::string> omitted, unknown;
    for (const std::string& name : tableSet)
        if (!listedSet.count(name))
            omitted.insert(name);
    for (const std::string& name : listedSet)
        if (!tableSet.count(name))
            unknown.insert(name);
    EXPECT_TRUE(omitted.empty()) << where << " omits " << joined(omitted);
    EXPECT_TRUE(unknown.empty()) << where << " names " << joined(unknown) << ", which the table does not have";
    EXPECT_EQ(listed.size(), listedSet.size()) << where << " names an architecture twice";
}

} // namespace

TEST(GGUFArchitectureTable, NamesEachArchitectureOnce)
{
    const std::vector<std::string> names = cv::dnn::llm::ggufArchitectureNames();
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names.front(), "llama");  // first in the loader's "supported:" list
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
}

TEST(GGUFArchitectureTable, GgufHeaderListsTheTable)
{
    const std::string header = readText("modules/dnn/include/opencv2/dnn/gguf.hpp");
    expectTableListed(backtickedNamesBetween(header, "Reads a GGUF language model (architectures", ")"),
                      "gguf.hpp's readNetFromGGUF documentation");
}

TEST(GGUFArchitectureTable, ReadmeListsTheTable)
{
    const std::string readme = readText("README.md");
    expectTableListed(backtickedNamesBetween(readme, "Any GGUF of architecture", " works"),
                      "README.md's sentence \"Any GGUF of architecture ... works\"");
}

// text_generation.hpp's list of mmproj projectors against the loader's table.
TEST(VisionProjectorTable, headerListsEveryProjector)
{
    const std::string header = readText("modules/dnn/include/opencv2/dnn/text_generation.hpp");
    std::vector<std::string> listed = backtickedNamesBetween(header, "supported projectors:", "). The projector");
    std::vector<std::string> table = cv::dnn::llm::visionProjectorNames();
    std::sort(listed.begin(), listed.end());
    std::sort(table.begin(), table.end());
    EXPECT_EQ(listed, table);
}
