// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "drafter.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {

PromptLookupDrafter::PromptLookupDrafter(int ngram) : ngram_(ngram)
{
    CV_CheckGT(ngram, 0, "TextGenerationModel: lookupNgram must be positive");
}

void PromptLookupDrafter::propose(int, const std::vector<int>& context, int maxTokens, std::vector<int>& draft)
{
    draft.clear();
    const int length = (int)context.size();
    if (maxTokens <= 0)
        return;
    // Image rows (negative ids, TextGenerationModel with an mmproj) are not text: a suffix that
    // holds one is not looked up (its ids stand for one image's rows only), and a draft ends
    // before one (an image row is no token to sample).
    for (int n = std::min(ngram_, length - 1); n >= 1; n--)
    {
        const int* suffix = context.data() + length - n;
        if (std::any_of(suffix, suffix + n, [](int id) { return id < 0; }))
            continue;  // a shorter suffix may be all text
        // The latest earlier occurrence: recent text predicts best (a repeated line, the
        // current paragraph of a summary).
        for (int start = length - n - 1; start >= 0; start--)
        {
            if (!std::equal(suffix, suffix + n, context.data() + start))
                continue;
            const int from = start + n;
            int to = std::min(length, from + maxTokens);
            to = (int)(std::find_if(context.begin() + from, context.begin() + to, [](int id) { return id < 0; }) -
                       context.begin());
            if (to == from)
                continue;  // an image follows this occurrence: an earlier one may have text after it
            draft.assign(context.begin() + from, context.begin() + to);
            return;
        }
    }
}

}}} // namespace cv::dnn::llm
