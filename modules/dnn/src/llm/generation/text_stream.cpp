// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "text_stream.hpp"
#include "../common/utf8.hpp"

namespace cv {
namespace dnn {
namespace llm {

size_t completeUtf8Prefix(const std::string& s)
{
    // Only the last few bytes can be an incomplete character: find the last lead byte.
    const size_t n = s.size();
    for (size_t back = 1; back <= 4 && back <= n; back++)
    {
        const unsigned char c = (unsigned char)s[n - back];
        if ((c & 0xC0) == 0x80)
            continue;  // continuation byte: keep looking for the lead
        const size_t length = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
        return back < length ? n - back : n;
    }
    return n;
}

TextStream::TextStream(const std::vector<std::string>& stopStrings)
{
    for (const std::string& s : stopStrings)
        if (!s.empty())
            stops_.push_back(s);
}

std::string TextStream::push(const std::string& bytes)
{
    if (stopped_)
        return std::string();
    pending_ += bytes;
    for (const std::string& stop : stops_)
    {
        const size_t at = pending_.find(stop);
        if (at != std::string::npos)
        {
            stopped_ = true;
            pending_.resize(at);
            return flush();
        }
    }
    // Hold back the longest tail that is a proper prefix of a stop string.
    size_t hold = 0;
    for (const std::string& stop : stops_)
        for (size_t len = std::min(stop.size() - 1, pending_.size()); len > hold; len--)
            if (pending_.compare(pending_.size() - len, len, stop, 0, len) == 0)
            {
                hold = len;
                break;
            }
    const size_t ready = completeUtf8Prefix(pending_.substr(0, pending_.size() - hold));
    // A model may emit byte tokens that form no character: those bytes become U+FFFD, so the
    // text is always valid UTF-8 (what Python's str and most displays require).
    const std::string out = sanitizeUtf8(pending_.substr(0, ready));
    pending_.erase(0, ready);
    released_ += out;
    return out;
}

std::string TextStream::flush()
{
    const std::string out = sanitizeUtf8(pending_);
    pending_.clear();
    released_ += out;
    return out;
}

}}} // namespace cv::dnn::llm
