// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "utf8.hpp"

namespace cv {
namespace dnn {
namespace llm {

int utf8SequenceLength(unsigned char leadByte)
{
    if (leadByte < 0xC0)
        return 1;
    if (leadByte < 0xE0)
        return 2;
    if (leadByte < 0xF0)
        return 3;
    return 4;
}

static bool isContinuation(const std::string& text, size_t pos)
{
    return pos < text.size() && ((unsigned char)text[pos] & 0xC0) == 0x80;
}

uint32_t decodeUtf8(const std::string& text, size_t& pos)
{
    const unsigned char lead = (unsigned char)text[pos];
    if (lead < 0x80)
    {
        pos++;
        return lead;
    }
    int length = 0;
    uint32_t codePoint = 0, minimum = 0;
    if (lead >= 0xC2 && lead <= 0xDF)
    {
        length = 2; codePoint = lead & 0x1F; minimum = 0x80;
    }
    else if (lead >= 0xE0 && lead <= 0xEF)
    {
        length = 3; codePoint = lead & 0x0F; minimum = 0x800;
    }
    else if (lead >= 0xF0 && lead <= 0xF4)
    {
        length = 4; codePoint = lead & 0x07; minimum = 0x10000;
    }
    for (int i = 1; i < length; i++)
    {
        if (!isContinuation(text, pos + i))
        {
            length = 0;
            break;
        }
        codePoint = (codePoint << 6) | ((unsigned char)text[pos + i] & 0x3F);
    }
    const bool valid = length > 0 && codePoint >= minimum && codePoint <= 0x10FFFF &&
                       !(codePoint >= 0xD800 && codePoint <= 0xDFFF);
    if (!valid)
    {
        pos++;
        return kReplacementCharacter;
    }
    pos += length;
    return codePoint;
}

std::vector<uint32_t> decodeUtf8(const std::string& text)
{
    std::vector<uint32_t> codePoints;
    codePoints.reserve(text.size());
    for (size_t pos = 0; pos < text.size();)
        codePoints.push_back(decodeUtf8(text, pos));
    return codePoints;
}

void appendUtf8(uint32_t codePoint, std::string& out)
{
    if (codePoint < 0x80)
    {
        out += (char)codePoint;
    }
    else if (codePoint < 0x800)
    {
        out += (char)(0xC0 | (codePoint >> 6));
        out += (char)(0x80 | (codePoint & 0x3F));
    }
    else if (codePoint < 0x10000)
    {
        out += (char)(0xE0 | (codePoint >> 12));
        out += (char)(0x80 | ((codePoint >> 6) & 0x3F));
        out += (char)(0x80 | (codePoint & 0x3F));
    }
    else
    {
        out += (char)(0xF0 | (codePoint >> 18));
        out += (char)(0x80 | ((codePoint >> 12) & 0x3F));
        out += (char)(0x80 | ((codePoint >> 6) & 0x3F));
        out += (char)(0x80 | (codePoint & 0x3F));
    }
}

std::string sanitizeUtf8(const std::string& text)
{
    std::string clean;
    clean.reserve(text.size());
    for (size_t pos = 0; pos < text.size();)
    {
        const size_t start = pos;
        const uint32_t codePoint = decodeUtf8(text, pos);
        // A malformed byte is consumed alone; a real U+FFFD in the text takes 3 bytes.
        const bool malformed = codePoint == kReplacementCharacter && pos - start == 1;
        if (malformed)
            appendUtf8(kReplacementCharacter, clean);
        else
            clean.append(text, start, pos - start);
    }
    return clean;
}

}}} // namespace cv::dnn::llm
