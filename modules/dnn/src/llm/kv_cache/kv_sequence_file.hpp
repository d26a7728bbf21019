// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The file of one KV-cache sequence (KVCache::saveSequence / loadSequence, and the sessions of
// TextGenerationModel): its tokens, the keys and values of their rows in the cache's storage
// type, the identity of the model that computed them, a format version and a checksum. The
// format is described in doc/design.md ("Sessions on disk").
//
// All numbers are little-endian. The file:
//   magic "OCVKVSEQ" (8 bytes), u32 version (2; 1 is read too), u32 flags (bit 0: tokens present)
//   u64 layout hash, u64 weights hash, u32 description bytes, description (UTF-8)
//   u32 layers, u32 KV heads, u32 head size, u32 storage type (0 f32, 1 f16, 2 8-bit), u32 row bytes
//   u32 window of each layer (0: the whole context)
//   u32 length (tokens of the sequence), then `length` i32 token ids when flag bit 0 is set
//   u64 extra bytes, extra (opaque: the session of TextGenerationModel)
//   u64 payload bytes, payload: for each layer, keys then values, for each KV head the rows of
//       positions [first, length) (first: 0, or the first position a sliding-window layer still
//       attends to), row bytes each
//   (version 2) u64 recurrent-state floats (0 for a model without recurrent layers), then the
//       sequence's state block (recurrent_state_store.hpp) as float32
//   u64 checksum (kvChecksum) of every byte before it
// The header's numbers are written byte by byte; the rows are the cache's bytes as they lie
// (little-endian floats, halves and scales on every platform this code targets).

#ifndef OPENCV_DNN_SRC_LLM_KV_CACHE_KV_SEQUENCE_FILE_HPP
#define OPENCV_DNN_SRC_LLM_KV_CACHE_KV_SEQUENCE_FILE_HPP

#include <opencv2/dnn.hpp>

#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** What makes two Nets "the same model" for a saved sequence (see doc/design.md): a hash of
    the Net's layers (`layout`) and one of a sample of its weights (`weights`). Computed from the
    Net when its state is installed (net/net_assembly.cpp) and given to its cache. */
struct KVModelIdentity
{
    uint64 layout = 0;
    uint64 weights = 0;
    std::string description;  //!< for error messages: what the model is
};

//! A 64-bit hash (multiply-rotate over 8-byte words, then a final mix); not cryptographic.
CV_EXPORTS uint64 kvChecksum(const void* data, size_t bytes, uint64 seed = 0);

static const uint32_t kKVSequenceFileVersion = 2;

//! A parsed, checked sequence file (sizes checked against the file, checksum verified).
struct KVSequenceFile
{
    uint32_t version = 0;
    KVModelIdentity identity;
    int layers = 0, kvHeads = 0, headDim = 0;
    int storageType = CV_32F;  //!< CV_32F, CV_16F or CV_8S
    size_t rowBytes = 0;
    std::vector<int> windows;  //!< per layer
    int length = 0;
    bool hasTokens = false;
    std::vector<int> tokens;
    std::vector<uchar> extra;
    std::vector<uchar> bytes;    //!< the whole file
    size_t payloadOffset = 0;    //!< into `bytes`
    size_t payloadBytes = 0;
    size_t stateOffset = 0;      //!< into `bytes`: the recurrent state (stateFloats float32)
    size_t stateFloats = 0;

    //! The first position a layer's rows are saved for (see the format above).
    int firstSaved(int layer) const
    {
        const int w = windows[layer];
        return w > 0 ? std::max(0, length - w + 1) : 0;
    }
};

/** Parses and checks a sequence file held in memory: a cv::Exception naming `what` (the file's
    path) and the problem for anything that is not a whole, uncorrupted file of this version. */
CV_EXPORTS KVSequenceFile parseKVSequenceFile(std::vector<uchar>&& bytes, const std::string& what);
//! Reads a file whole (its size checked first) and parses it.
CV_EXPORTS KVSequenceFile readKVSequenceFile(const std::string& path);
/** Writes `bytes` atomically: to a temporary file in the same folder, flushed, then renamed
    over `path`, so that a reader sees the old file or the new one, never a part. */
CV_EXPORTS void writeFileAtomically(const std::string& path, const std::vector<uchar>& bytes);

//! Storage type <-> the file's code.
int kvStorageCode(int type);

}}} // namespace cv::dnn::llm

#endif
