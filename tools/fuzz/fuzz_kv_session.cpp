// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libFuzzer target: the KV sequence file loader (KVCache::loadSequence, the file of
// TextGenerationModel's sessions). The first byte chooses the mode:
//   even: the rest is the file as it is; odd: the same, with its last 8 bytes replaced by the
//         checksum of the others, so that the parser's checks after the checksum are reached;
//   (byte / 2) % 3 == 1, 2: a valid file is made by a small cache from the next bytes (tokens
//         stored, a fork, a storage type, a sequence length), then edited by the rest (byte
//         writes at offsets, a truncation), its checksum fixed in mode 2.
// The file is parsed and loaded into a cache of the same shape (3 layers, one with a sliding
// window of 6; 2 KV heads of 8; 4-token pages) and into one of another shape. Anything but a
// cv::Exception is a bug, and so is a broken invariant: a loaded sequence whose rows differ from
// the file's, a cache changed by a load that failed, page accounting.

#include "precomp.hpp"  // dnn's, from -I build/opencv-src/modules/dnn/src
#include "llm/kv_cache/kv_sequence_file.hpp"
#include "llm/kv_cache/paged_kv_cache.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

using namespace cv;
using namespace cv::dnn::llm;

namespace {

const int kLayers = 3, kKVHeads = 2, kHeadDim = 8, kMaxLength = 40, kPageSize = 4;

void check(bool ok, const char* what)
{
    if (!ok)
    {
        std::fprintf(stderr, "invariant broken: %s\n", what);
        std::abort();
    }
}

Ptr<PagedKVCache> makeCache(int type, int layers = kLayers)
{
    Ptr<PagedKVCache> cache = makePtr<PagedKVCache>(layers, kKVHeads, kHeadDim, kMaxLength, kPageSize);
    std::vector<int> windows(layers, 0);
    windows[layers - 1] = 6;
    cache->setLayerWindows(windows);
    cache->setStorageType(type);
    cache->setMemoryBudget(cache->getBytesPerToken() * 64);
    return cache;
}

struct Input
{
    const uint8_t* data;
    size_t size, pos;
    int next(int n) { return pos < size ? data[pos++] % n : 0; }
};

const int kTypes[3] = {CV_32F, CV_16F, CV_8S};

// A valid file of a sequence of `length` tokens made from the input.
std::vector<uchar> makeFile(Input& in, const std::string& path)
{
    const int type = kTypes[in.next(3)];
    Ptr<PagedKVCache> cache = makeCache(type);
    const int length = 1 + in.next(kMaxLength - 1);
    std::vector<int> ids{0};
    std::vector<std::vector<const std::vector<int>*>> tables;
    std::vector<float> key(kKVHeads * kHeadDim), value(kKVHeads * kHeadDim);
    std::vector<int> tokens;
    for (int t = 0; t < length; t++)
    {
        cache->reserve(ids, std::vector<int>{1}, tables);
        for (size_t i = 0; i < key.size(); i++)
        {
            key[i] = (float)((t * 31 + (int)i * 7) % 23) - 11.f + in.next(5);
            value[i] = (float)((t * 17 + (int)i * 3) % 19) - 9.f;
        }
        for (int l = 0; l < kLayers; l++)
            cache->store(l, *tables[cache->layerGroup(l)][0], t, key.data(), value.data());
        tokens.push_back(in.next(256));
    }
    if (in.next(2))
    {
        cache->forkSequence(0, 3);  // saved from a sequence that shares its pages
        cache->removeSequence(0);
        ids[0] = 3;
    }
    cache->saveSequence(ids[0], path, in.next(2) ? tokens : std::vector<int>());
    return readKVSequenceFile(path).bytes;
}

void fixChecksum(std::vector<uchar>& bytes)
{
    if (bytes.size() < 8)
        return;
    const uint64 h = kvChecksum(bytes.data(), bytes.size() - 8);
    for (int i = 0; i < 8; i++)
        bytes[bytes.size() - 8 + i] = (uchar)(h >> (8 * i));
}

// Loads into `cache` (which holds sequence 1 of 5 tokens); checks what a load may do.
void loadInto(PagedKVCache& cache, const KVSequenceFile* file, const std::string& path)
{
    const int inUse = cache.getPagesInUse();
    const int id = 1;
    try
    {
        std::vector<int> tokens;
        const int length = cache.loadSequence(path, id, tokens);
        check(file != nullptr, "a file the parser refused was loaded");
        check(length == file->length && cache.getSequenceLength(id) == length, "the loaded length");
        check(tokens == file->tokens, "the loaded tokens");
        // The rows read back equal the file's: its bytes when the storage types are the same (a
        // loaded row is copied, not re-encoded: re-encoding an edited 8-bit row would change it),
        // else its values converted to the cache's type.
        std::vector<float> buffer(kPageSize * kHeadDim), row(kHeadDim), expected(kHeadDim);
        const KVStorageCodec fileCodec(file->storageType, kHeadDim), codec(cache.getStorageType(), kHeadDim);
        std::vector<uchar> encoded(codec.rowBytes());
        std::vector<std::vector<const std::vector<int>*>> tables;
        cache.forkSequence(id, 9);  // page tables of sequence 1, through a reserve of 0 tokens on a copy
        cache.reserve(std::vector<int>{9}, std::vector<int>{0}, tables);
        const uchar* src = file->bytes.data() + file->payloadOffset;
        for (int l = 0; l < kLayers; l++)
            for (int kv = 0; kv < 2; kv++)
                for (int h = 0; h < kKVHeads; h++)
                    for (int pos = file->firstSaved(l); pos < length; pos++, src += file->rowBytes)
                    {
                        const std::vector<int>& table = *tables[cache.layerGroup(l)][0];
                        size_t stride = 0;
                        const float* rows = cache.rows(l, kv == 1, table[pos / kPageSize], h, pos % kPageSize + 1,
                                                       buffer.data(), &stride);
                        fileCodec.decode(src, expected.data());
                        if (file->storageType == cache.getStorageType())
                            row = expected;
                        else
                        {
                            codec.encode(expected.data(), encoded.data());
                            codec.decode(encoded.data(), row.data());
                        }
                        const float* got = rows + (size_t)(pos % kPageSize) * stride;
                        check(std::memcmp(got, row.data(), kHeadDim * sizeof(float)) == 0 ||
                                  [&] { for (int i = 0; i < kHeadDim; i++) if (!(got[i] == row[i] || (got[i] != got[i] && row[i] != row[i]))) return false; return true; }(),
                              "a loaded row differs from the file's");
                    }
        cache.removeSequence(9);
    }
    catch (const cv::Exception&)
    {
        check(cache.getPagesInUse() == inUse && cache.getSequenceLength(id) == 5, "a failed load changed the cache");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    cv::redirectError([](int, const char*, const char*, const char*, int, void*) { return 0; });
    static const std::string path = format("/tmp/fuzz_kv_session_%d.bin", (int)getpid());
    Input in{data, size, 1};
    const int mode = (data[0] / 2) % 3;
    std::vector<uchar> bytes;
    if (mode == 0)
    {
        bytes.assign(data + 1, data + size);
        if (data[0] & 1)
            fixChecksum(bytes);
    }
    else
    {
        bytes = makeFile(in, path);
        // Edits: (offset, value) byte writes, then maybe a truncation.
        while (in.pos + 3 <= size && !bytes.empty())
        {
            const size_t offset = ((size_t)data[in.pos] | ((size_t)data[in.pos + 1] << 8)) % bytes.size();
            bytes[offset] = data[in.pos + 2];
            in.pos += 3;
        }
        if (in.pos < size && (data[in.pos] & 1) && !bytes.empty())
            bytes.resize((size_t)data[in.pos] * 97 % bytes.size());
        if (mode == 2)
            fixChecksum(bytes);
    }
    {
        FILE* f = std::fopen(path.c_str(), "wb");
        check(f != nullptr, "the temporary file");
        if (!bytes.empty())
            std::fwrite(bytes.data(), 1, bytes.size(), f);
        std::fclose(f);
    }
    KVSequenceFile parsed;
    bool ok = false;
    try
    {
        parsed = parseKVSequenceFile(std::vector<uchar>(bytes), path);
        ok = true;
        // Version 2 adds the recurrent state (a count, then its floats) between the rows and the checksum.
        const size_t stateSection = parsed.version >= 2 ? 8 + parsed.stateFloats * sizeof(float) : 0;
        check(parsed.length >= 0 && parsed.payloadOffset + parsed.payloadBytes + stateSection + 8 == bytes.size(),
              "parsed sizes");
        check(parsed.version < 2 || parsed.stateOffset == parsed.payloadOffset + parsed.payloadBytes + 8, "state offset");
    }
    catch (const cv::Exception&)
    {
    }
    for (int variant = 0; variant < 3; variant++)
    {
        // The same shape in each storage type; then a cache with another layer count.
        Ptr<PagedKVCache> cache = variant < 2 ? makeCache(kTypes[(data[0] / 6 + variant) % 3]) : makeCache(CV_32F, 2);
        std::vector<std::vector<const std::vector<int>*>> tables;
        cache->reserve(std::vector<int>{1}, std::vector<int>{5}, tables);
        loadInto(*cache, ok ? &parsed : nullptr, path);
        check(variant < 2 || !cache->hasSequence(1) || cache->getSequenceLength(1) == 5, "another shape was loaded");
        cache->clear();
        check(cache->getPagesInUse() == 0, "pages in use after clear");
    }
    return 0;
}
