// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "drafter.hpp"

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
    for (int n = std::min(ngram_, length - 1); n >= 1; n--)
    {
        const int* suffix = context.data() + length - n;
        // The latest earlier occurrence: recent text predicts best (a repeated line, the
        // current paragraph of a summary).
        for (int start = length - n - 1; start >= 0; start--)
        {
            if (!std::equal(suffix, suffix + n, context.data() + start))
                continue;
            const int from = start + n, to = std::min(length, from + maxTokens);
            draft.assign(context.begin() + from, context.begin() + to);
            return;
        }
    }
}

}}} // namespace cv::dnn::llm
