// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The session of TextGenerationModel::saveSession / loadSession: the extra data of a KV
// sequence file (kv_cache/kv_sequence_file.hpp) of sequence 0, whose tokens are the ones fed.
// The extra data is the conversation (little-endian):
//   u32 version (1 or 2), u32 message count, then per message u32 role bytes, role, u32
//   content bytes, content;
//   version 2 only (a session with images; text sessions stay version 1, which older builds
//   read): u32 image count, per image u32 digest bytes, digest (of the preprocessed pixels),
//   u32 rows, u32 columns, rows x columns f32 embeddings, u32 layout length, that many i32
//   ids (the image's ids in a prompt: -1 - k for row k, wrapper tokens); u32 count and that
//   many u32 indices into the images: the conversation's images in order; u32 count and
//   indices: the images of the table the fed image ids (-1, -2, ...) refer to, in order.

#ifndef OPENCV_DNN_SRC_LLM_GENERATION_SESSION_FILE_HPP
#define OPENCV_DNN_SRC_LLM_GENERATION_SESSION_FILE_HPP

#include "chat_template.hpp"
#include "../vision/multimodal_prompt.hpp"

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

//! The images of a session, each once.
struct SessionImages
{
    std::vector<MultimodalPrompter::ImageEntry> images;  //!< digest, embeddings (CV_32F), layout
    std::vector<uint32_t> conversation, table;           //!< indices into `images`

    //! The index of the image with `image`'s digest, added if new.
    uint32_t add(const MultimodalPrompter::ImageEntry& image);
};

//! The extra data of a session: version 1 without images (`images` null), else version 2.
//! A LoRA adapter a session's keys and values were computed with: its content digest (LoRAAdapter::digest), scale and file.
struct SessionAdapter
{
    uint64 digest = 0;
    float scale = 0.f;
    std::string path;
};

/** Version 1: the conversation; 2: and its images; 3: and the LoRA adapters the keys and values
    were computed with (images optional). */
std::vector<uchar> encodeSession(const std::vector<ChatMessage>& conversation, const SessionImages* images,
                                 const std::vector<SessionAdapter>& adapters = std::vector<SessionAdapter>());

/** Parses the extra data of the session file `path` (named in the errors): the conversation,
    into `images` its images (none for version 1), into `adapters` its LoRA adapters (none before
    version 3). Every size is checked against the data,
    every layout id against the vocabulary size `vocab`, every index against the images: a
    cv::Exception naming the file and the field otherwise. */
std::vector<ChatMessage> decodeSession(const std::vector<uchar>& bytes, const std::string& path, int vocab,
                                       SessionImages& images, std::vector<SessionAdapter>& adapters);

}}} // namespace cv::dnn::llm

#endif
