// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Sessions' extra data (format: session_file.hpp).

#include "../../precomp.hpp"
#include "session_file.hpp"
#include "../common/byte_io.hpp"

#include <climits>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

namespace {

const uint32_t kMaxDigestBytes = 65536;  // tiled images: a digest per tile

typedef MultimodalPrompter::ImageEntry ImageEntry;

std::string truncatedMessage(const std::string& path, const char* field, uint64, size_t, size_t)
{
    return format("TextGenerationModel::loadSession: the conversation in '%s' ends inside %s", path.c_str(), field);
}

void writeImages(ByteWriter& w, const SessionImages& images)
{
    w.u32((uint32_t)images.images.size());
    for (const ImageEntry& image : images.images)
    {
        w.string(image.digest);
        const Mat rows = image.rows.isContinuous() ? image.rows : image.rows.clone();
        CV_Assert(rows.type() == CV_32F);
        w.u32((uint32_t)rows.rows);
        w.u32((uint32_t)rows.cols);
        for (size_t i = 0; i < rows.total(); i++)
            w.f32(rows.ptr<float>()[i]);
        w.u32((uint32_t)image.layout.size());
        for (int id : image.layout)
            w.i32(id);
    }
    for (const std::vector<uint32_t>* list : {&images.conversation, &images.table})
    {
        w.u32((uint32_t)list->size());
        for (uint32_t index : *list)
            w.u32(index);
    }
}

} // namespace

uint32_t SessionImages::add(const ImageEntry& image)
{
    for (size_t i = 0; i < images.size(); i++)
        if (images[i].digest == image.digest)
            return (uint32_t)i;
    images.push_back(image);
    return (uint32_t)(images.size() - 1);
}

std::vector<uchar> encodeSession(const std::vector<ChatMessage>& conversation, const SessionImages* images,
                                 const std::vector<SessionAdapter>& adapters)
{
    ByteWriter w;
    const uint32_t version = !adapters.empty() ? 3 : images ? 2 : 1;
    w.u32(version);
    w.u32((uint32_t)conversation.size());
    for (const ChatMessage& m : conversation)
    {
        w.string(m.role);
        w.string(m.content);
    }
    if (version == 3)
        w.u32(images ? 1 : 0);
    if (images)
        writeImages(w, *images);
    if (version == 3)
    {
        w.u32((uint32_t)adapters.size());
        for (const SessionAdapter& a : adapters)
        {
            w.u64(a.digest);
            w.f32(a.scale);
            w.string(a.path);
        }
    }
    return w.out;
}


std::vector<ChatMessage> decodeSession(const std::vector<uchar>& bytes, const std::string& path, int vocab,
                                       SessionImages& images, std::vector<SessionAdapter>& adapters)
{
    if (bytes.empty())
        CV_Error(Error::StsBadArg, format("TextGenerationModel::loadSession: '%s' is a KV sequence file without a "
                                          "session (saved by KVCache::saveSequence, not saveSession)", path.c_str()));
    ByteReader r(bytes.data(), bytes.size(), path, truncatedMessage);
    const uint32_t version = r.u32("its version");
    if (version < 1 || version > 3)
        CV_Error(Error::StsNotImplemented, format("TextGenerationModel::loadSession: the conversation in '%s' has "
                                                  "version %u; this build reads versions 1 to 3", path.c_str(), version));
    const uint32_t count = r.u32("the message count");
    std::vector<ChatMessage> conversation;
    for (uint32_t i = 0; i < count; i++)
    {
        ChatMessage m;
        for (std::string* text : {&m.role, &m.content})
        {
            const uint32_t n = r.u32("a message");
            text->assign((const char*)r.bytes(n, format("message %u", i).c_str()), n);
        }
        conversation.push_back(m);
    }
    images = SessionImages();
    adapters.clear();
    bool hasImages = version == 2;
    if (version == 3)
    {
        const uint32_t flag = r.u32("whether it has images");
        if (flag > 1)
            CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: '%s' says %u for whether it has "
                                                  "images (0 or 1)", path.c_str(), flag));
        hasImages = flag == 1;
    }
    if (hasImages)
    {
        const uint32_t imageCount = r.u32("the image count");
        for (uint32_t i = 0; i < imageCount; i++)
        {
            ImageEntry e;
            const uint32_t n = r.u32("an image digest");
            if (n == 0 || n > kMaxDigestBytes || r.remaining() < n)
                CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: image %u of '%s' has a digest "
                                                      "of %u bytes (1 to %u, within the file)", i, path.c_str(), n,
                                                      kMaxDigestBytes));
            e.digest.assign((const char*)r.bytes(n, "an image digest"), n);
            const uint32_t rows = r.u32("an image's rows"), cols = r.u32("an image's columns");
            if (rows == 0 || cols == 0 || rows > (uint32_t)INT_MAX || cols > (uint32_t)INT_MAX ||
                (uint64_t)cols > (uint64_t)r.remaining() / 4 / rows)
                CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: image %u of '%s' has %u x %u "
                                                      "embeddings, which the file does not hold", i, path.c_str(),
                                                      rows, cols));
            e.rows.create((int)rows, (int)cols, CV_32F);
            const size_t embeddingBytes = (size_t)rows * cols * 4;
            std::memcpy(e.rows.ptr<float>(), r.bytes(embeddingBytes, "an image's embeddings"),
                        embeddingBytes);  // little-endian hosts
            // The layout: rows -1 .. -rows once each, in order, among wrapper tokens of the vocabulary.
            const uint32_t layoutLength = r.u32("an image's layout");
            r.need((uint64)layoutLength * 4, format("image %u's layout", i).c_str());
            int nextRow = 0;
            for (uint32_t k = 0; k < layoutLength; k++)
            {
                const int id = r.i32("an image's layout");
                if ((id < 0 && id != -1 - nextRow) || id >= vocab)
                    CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: image %u of '%s' has id %d "
                                                          "at place %u of its layout (expected row id %d or a token "
                                                          "below %d)", i, path.c_str(), id, k, -1 - nextRow, vocab));
                nextRow += id < 0;
                e.layout.push_back(id);
            }
            if (nextRow != (int)rows)
                CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: image %u of '%s' has %u rows "
                                                      "but its layout places %d", i, path.c_str(), rows, nextRow));
            images.images.push_back(e);
        }
        for (std::vector<uint32_t>* list : {&images.conversation, &images.table})
        {
            const uint32_t n = r.u32("a list of images");
            r.need((uint64)n * 4, format("a list of %u images", n).c_str());
            for (uint32_t k = 0; k < n; k++)
            {
                const uint32_t index = r.u32("a list of images");
                if (index >= imageCount)
                    CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: '%s' refers to image %u; "
                                                          "it holds %u", path.c_str(), index, imageCount));
                list->push_back(index);
            }
        }
    }
    if (version == 3)
    {
        const uint32_t count = r.u32("the adapter count");
        r.need((uint64)count * 16, format("%u LoRA adapters", count).c_str());
        for (uint32_t i = 0; i < count; i++)
        {
            SessionAdapter a;
            a.digest = r.u64("an adapter's digest");
            Cv32suf scale;
            scale.u = r.u32("an adapter's scale");
            a.scale = scale.f;
            const uint32_t n = r.u32("an adapter's path");
            a.path.assign((const char*)r.bytes(n, "an adapter's path"), n);
            if (!std::isfinite(a.scale) || a.scale == 0.f)
                CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: LoRA adapter %u of '%s' has "
                                                      "scale %g", i, path.c_str(), a.scale));
            adapters.push_back(a);
        }
    }
    if (r.remaining() != 0)
        CV_Error(Error::StsParseError, format("TextGenerationModel::loadSession: the conversation in '%s' has %zu "
                                              "bytes after its end", path.c_str(), r.remaining()));
    return conversation;
}

}}} // namespace cv::dnn::llm
