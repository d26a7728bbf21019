// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Sequence files (format: kv_sequence_file.hpp; doc/design.md "Sessions on disk") and
// PagedKVCache::saveSequence / loadSequence.

#include "../../precomp.hpp"
#include "../common/byte_io.hpp"
#include "kv_sequence_file.hpp"
#include "paged_kv_cache.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#else
#include <unistd.h>
#endif

namespace cv {
namespace dnn {
namespace llm {

namespace {

const char kMagic[8] = {'O', 'C', 'V', 'K', 'V', 'S', 'E', 'Q'};
const uint32_t kFlagTokens = 1;
// Bounds of header fields, far above any model, so that a corrupted field is named as such.
const uint32_t kMaxLayers = 1u << 16, kMaxHeads = 1u << 16, kMaxHeadDim = 1u << 16, kMaxDescription = 1u << 16;

inline uint64 rotl64(uint64 x, int r) { return (x << r) | (x >> (64 - r)); }

inline uint64 mix64(uint64 h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

std::string truncatedMessage(const std::string& what, const char* field, uint64 needed, size_t offset,
                             size_t left)
{
    return format("KV sequence file '%s' is truncated or corrupted: %s needs %llu bytes at offset %zu, the file has %zu "
                  "left", what.c_str(), field, (unsigned long long)needed, offset, left);
}

//! A u32 in [lo, hi].
uint32_t readBounded(ByteReader& r, const std::string& what, const char* field, uint32_t lo, uint32_t hi)
{
    const uint32_t v = r.u32(field);
    if (v < lo || v > hi)
        CV_Error(Error::StsParseError, format("KV sequence file '%s' is corrupted: %s is %u (expected %u..%u)",
                                              what.c_str(), field, v, lo, hi));
    return v;
}

int storageTypeOfCode(uint32_t code, const std::string& what)
{
    switch (code)
    {
    case 0: return CV_32F;
    case 1: return CV_16F;
    case 2: return CV_8S;
    default:
        CV_Error(Error::StsParseError, format("KV sequence file '%s' is corrupted: unknown storage type code %u",
                                              what.c_str(), code));
    }
    return -1;
}

const char* storageName(int type)
{
    return type == CV_32F ? "CV_32F" : type == CV_16F ? "CV_16F" : "CV_8S";
}

} // namespace

uint64 kvChecksum(const void* data, size_t bytes, uint64 seed)
{
    const uint64 p1 = 0x9E3779B185EBCA87ULL, p2 = 0xC2B2AE3D27D4EB4FULL;
    const uchar* b = static_cast<const uchar*>(data);
    uint64 h = seed ^ (bytes * p1);
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8)
    {
        uint64 w = 0;
        for (int k = 0; k < 8; k++)  // little-endian on any host
            w |= (uint64)b[i + k] << (8 * k);
        h = rotl64(h ^ (w * p2), 31) * p1;
    }
    uint64 tail = 0;
    for (int k = 0; i < bytes; i++, k++)
        tail |= (uint64)b[i] << (8 * k);
    h = rotl64(h ^ (tail * p2), 31) * p1;
    return mix64(h);
}

int kvStorageCode(int type)
{
    return type == CV_32F ? 0 : type == CV_16F ? 1 : 2;
}

void writeFileAtomically(const std::string& path, const std::vector<uchar>& bytes)
{
    static std::atomic<unsigned> counter{0};
#ifdef _WIN32
    const unsigned pid = (unsigned)GetCurrentProcessId();
#else
    const unsigned pid = (unsigned)getpid();
#endif
    const std::string tmp = format("%s.tmp-%u-%u", path.c_str(), pid, counter++);
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f)
        CV_Error(Error::StsError, format("KV sequence file '%s': cannot create the temporary file '%s': %s",
                                         path.c_str(), tmp.c_str(), std::strerror(errno)));
    bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fflush(f) == 0 && ok;
#ifndef _WIN32
    ok = ok && fsync(fileno(f)) == 0;
#endif
    const int err = errno;
    ok = std::fclose(f) == 0 && ok;
    if (!ok)
    {
        std::remove(tmp.c_str());
        CV_Error(Error::StsError, format("KV sequence file '%s': writing %zu bytes failed: %s", path.c_str(),
                                         bytes.size(), std::strerror(err)));
    }
#ifdef _WIN32
    ok = MoveFileExA(tmp.c_str(), path.c_str(), MOVEFILE_REPLACE_EXISTING) != 0;
#else
    ok = std::rename(tmp.c_str(), path.c_str()) == 0;
#endif
    if (!ok)
    {
        const int e = errno;
        std::remove(tmp.c_str());
        CV_Error(Error::StsError, format("KV sequence file '%s': renaming the temporary file '%s' failed: %s",
                                         path.c_str(), tmp.c_str(), std::strerror(e)));
    }
}

KVSequenceFile parseKVSequenceFile(std::vector<uchar>&& data, const std::string& what)
{
    KVSequenceFile f;
    f.bytes = std::move(data);
    const std::vector<uchar>& b = f.bytes;
    if (b.size() < sizeof(kMagic) || std::memcmp(b.data(), kMagic, sizeof(kMagic)) != 0)
        CV_Error(Error::StsParseError, format("'%s' is not a KV sequence file (no OCVKVSEQ magic; %zu bytes)",
                                              what.c_str(), b.size()));
    ByteReader r(b.data(), b.size(), what, truncatedMessage);
    r.bytes(sizeof(kMagic), "the magic");  // checked above
    f.version = r.u32("the format version");
    if (f.version != kKVSequenceFileVersion && f.version != 1)
        CV_Error(Error::StsNotImplemented, format("KV sequence file '%s' has format version %u; this build reads version %u",
                                                  what.c_str(), f.version, kKVSequenceFileVersion));
    const uint32_t flags = readBounded(r, what, "the flags", 0, kFlagTokens);
    f.hasTokens = (flags & kFlagTokens) != 0;
    f.identity.layout = r.u64("the layout hash");
    f.identity.weights = r.u64("the weights hash");
    const uint32_t descriptionBytes = readBounded(r, what, "the description size", 0, kMaxDescription);
    f.identity.description.assign((const char*)r.bytes(descriptionBytes, "the model description"), descriptionBytes);
    f.layers = (int)readBounded(r, what, "the layer count", 1, kMaxLayers);
    f.kvHeads = (int)readBounded(r, what, "the KV head count", 1, kMaxHeads);
    f.headDim = (int)readBounded(r, what, "the head size", 1, kMaxHeadDim);
    f.storageType = storageTypeOfCode(r.u32("the storage type"), what);
    f.rowBytes = r.u32("the row size");
    if (f.rowBytes != KVStorageCodec(f.storageType, f.headDim).rowBytes())
        CV_Error(Error::StsParseError, format("KV sequence file '%s' is corrupted: rows of %zu bytes for head size %d in %s",
                                              what.c_str(), f.rowBytes, f.headDim, storageName(f.storageType)));
    r.need((uint64)f.layers * 4, "the layer windows");
    f.windows.resize(f.layers);
    for (int l = 0; l < f.layers; l++)
        f.windows[l] = (int)readBounded(r, what, "a layer window", 0, INT_MAX);
    f.length = (int)readBounded(r, what, "the sequence length", 0, INT_MAX);
    if (f.hasTokens)
    {
        r.need((uint64)f.length * 4, "the token ids");
        f.tokens.resize(f.length);
        for (int i = 0; i < f.length; i++)
            f.tokens[i] = r.i32("a token id");
    }
    const uint64 extraBytes = r.u64("the extra data size");
    const uchar* extra = r.bytes(extraBytes, "the extra data");
    f.extra.assign(extra, extra + (size_t)extraBytes);
    const uint64 payloadBytes = r.u64("the payload size");
    // The payload the header describes (beyond 2^62 bytes: a corrupted header, not a big file).
    const uint64 kHuge = (uint64)1 << 62;
    uint64 expected = 0;
    for (int l = 0; l < f.layers && expected < kHuge; l++)
    {
        const uint64 rows = (uint64)2 * f.kvHeads * (uint64)(f.length - f.firstSaved(l));
        expected = rows > kHuge / f.rowBytes ? kHuge : std::min(kHuge, expected + rows * f.rowBytes);
    }
    if (payloadBytes != expected)
        CV_Error(Error::StsParseError, format(
            "KV sequence file '%s' is corrupted: a payload of %llu bytes, where %d layers of %d KV heads, %d tokens "
            "and rows of %zu bytes take %llu", what.c_str(), (unsigned long long)payloadBytes, f.layers, f.kvHeads,
            f.length, f.rowBytes, (unsigned long long)expected));
    f.payloadOffset = r.position();
    f.payloadBytes = (size_t)payloadBytes;
    r.bytes(payloadBytes, "the keys and values");
    if (f.version >= 2)
    {
        const uint64 stateFloats = r.u64("the recurrent state's size");
        if (stateFloats > r.remaining() / sizeof(float))
            CV_Error(Error::StsParseError, format("KV sequence file '%s' is truncated or corrupted: a recurrent state of "
                                                  "%llu floats, %zu bytes left", what.c_str(),
                                                  (unsigned long long)stateFloats, r.remaining()));
        f.stateFloats = (size_t)stateFloats;
        f.stateOffset = r.position();
        r.bytes(stateFloats * sizeof(float), "the recurrent state");
    }
    const size_t checked = r.position();
    const uint64 checksum = r.u64("the checksum");
    if (r.remaining() != 0)
        CV_Error(Error::StsParseError, format("KV sequence file '%s' is corrupted: %zu bytes after its end (%zu bytes)",
                                              what.c_str(), r.remaining(), r.position()));
    const uint64 actual = kvChecksum(b.data(), checked);
    if (actual != checksum)
        CV_Error(Error::StsParseError, format("KV sequence file '%s' is corrupted: its checksum is %016llx, its "
                                              "content hashes to %016llx", what.c_str(), (unsigned long long)checksum,
                                              (unsigned long long)actual));
    return f;
}

KVSequenceFile readKVSequenceFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        CV_Error(Error::StsObjectNotFound, format("KV sequence file '%s' cannot be opened", path.c_str()));
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    in.seekg(0, std::ios::beg);
    if (size < 0)
        CV_Error(Error::StsError, format("KV sequence file '%s': its size cannot be read", path.c_str()));
    std::vector<uchar> bytes((size_t)size);
    if (size > 0 && !in.read((char*)bytes.data(), size))
        CV_Error(Error::StsError, format("KV sequence file '%s': reading %lld bytes failed", path.c_str(), (long long)size));
    return parseKVSequenceFile(std::move(bytes), path);
}

// PagedKVCache's side.

void PagedKVCache::saveSequence(int sequenceId, const String& path, const std::vector<int>& tokens) const
{
    saveSequence(sequenceId, path, tokens, std::vector<uchar>());
}

void PagedKVCache::saveSequence(int sequenceId, const String& path, const std::vector<int>& tokens,
                                const std::vector<uchar>& extra) const
{
    checkId(sequenceId, "saveSequence");
    const auto it = sequences_.find(sequenceId);
    if (it == sequences_.end())
        CV_Error(Error::StsObjectNotFound, format("KVCache::saveSequence: no sequence %d", sequenceId));
    const Sequence& s = it->second;
    if (!tokens.empty() && (int)tokens.size() != s.length)
        CV_Error(Error::StsBadArg, format("KVCache::saveSequence: %zu token ids given for sequence %d of %d tokens",
                                          tokens.size(), sequenceId, s.length));
    ByteWriter w;
    w.bytes(kMagic, sizeof(kMagic));
    w.u32(kKVSequenceFileVersion);
    w.u32(tokens.empty() ? 0 : kFlagTokens);
    w.u64(identity_.layout);
    w.u64(identity_.weights);
    w.string(identity_.description.substr(0, kMaxDescription));
    w.u32((uint32_t)layers_);
    w.u32((uint32_t)kvHeads_);
    w.u32((uint32_t)headDim_);
    w.u32((uint32_t)kvStorageCode(codec_.type()));
    w.u32((uint32_t)codec_.rowBytes());
    for (int l = 0; l < layers_; l++)
        w.u32((uint32_t)layerWindow(l));
    w.u32((uint32_t)s.length);
    for (int t : tokens)
        w.i32(t);
    w.u64(extra.size());
    w.bytes(extra.data(), extra.size());
    // The rows of the positions a next token attends to: all of them, but in sliding-window
    // layers, whose older pages may be released already.
    size_t payload = 0;
    std::vector<int> first(layers_);
    for (int l = 0; l < layers_; l++)
    {
        const int g = layerGroup_[l];
        first[l] = firstAttended(g, s.length);
        for (int p = first[l]; p < s.length; p += pageSize_ - p % pageSize_)
            if (s.pages[g][p / pageSize_] == kReleased)
                CV_Error(Error::StsError, format("KVCache::saveSequence: sequence %d has released position %d, "
                                                 "which its next token attends to", sequenceId, p));
        payload += (size_t)2 * kvHeads_ * (s.length - first[l]) * codec_.rowBytes();
    }
    w.u64(payload);
    w.out.reserve(w.out.size() + payload + 8);
    const size_t rowBytes = codec_.rowBytes();
    for (int l = 0; l < layers_; l++)
    {
        const int g = layerGroup_[l];
        for (int kv = 0; kv < 2; kv++)
            for (int h = 0; h < kvHeads_; h++)
                for (int p = first[l]; p < s.length;)
                {
                    // A page's rows of one head are contiguous.
                    const int n = std::min(pageSize_ - p % pageSize_, s.length - p);
                    w.bytes(headRow(g, s.pages[g][p / pageSize_], l, kv == 1, h, p % pageSize_), (size_t)n * rowBytes);
                    p += n;
                }
    }
    // The recurrent layers' state after the sequence's last token (its checkpoints are not saved).
    const size_t stateFloats = recurrent_.has(sequenceId) ? recurrent_.floats() : 0;
    w.u64(stateFloats);
    if (stateFloats > 0)
        w.bytes(recurrent_.state(sequenceId), stateFloats * sizeof(float));
    w.u64(kvChecksum(w.out.data(), w.out.size()));
    writeFileAtomically(path, w.out);
}

int PagedKVCache::loadSequence(const String& path, int sequenceId, std::vector<int>& tokens)
{
    checkId(sequenceId, "loadSequence");
    const KVSequenceFile file = readKVSequenceFile(path);
    loadSequence(file, path, sequenceId);
    tokens = file.tokens;
    return file.length;
}

void PagedKVCache::loadSequence(const KVSequenceFile& f, const std::string& path, int sequenceId)
{
    checkId(sequenceId, "loadSequence");
    const char* p = path.c_str();
    if (f.layers != layers_ || f.kvHeads != kvHeads_ || f.headDim != headDim_)
        CV_Error(Error::StsBadArg, format(
            "KVCache::loadSequence: '%s' was saved from another model (%s): %d layers, %d KV heads, head size %d; this "
            "cache has %d layers, %d KV heads, head size %d", p, f.identity.description.c_str(), f.layers, f.kvHeads,
            f.headDim, layers_, kvHeads_, headDim_));
    for (int l = 0; l < layers_; l++)
        if (f.windows[l] != layerWindow(l))
            CV_Error(Error::StsBadArg, format(
                "KVCache::loadSequence: '%s' was saved from another model (%s): layer %d has a sliding window of %d, "
                "here %d", p, f.identity.description.c_str(), l, f.windows[l], layerWindow(l)));
    if (f.identity.layout != identity_.layout)
        CV_Error(Error::StsBadArg, format(
            "KVCache::loadSequence: '%s' was saved from another model: its layers differ (the file's model: %s, "
            "layout hash %016llx; this one: %s, layout hash %016llx)", p, f.identity.description.c_str(),
            (unsigned long long)f.identity.layout, identity_.description.c_str(), (unsigned long long)identity_.layout));
    if (f.identity.weights != identity_.weights)
        CV_Error(Error::StsBadArg, format(
            "KVCache::loadSequence: '%s' was saved from another model with the same layers but other weights "
            "(the file's model: %s, weights hash %016llx; this one: %016llx)", p, f.identity.description.c_str(),
            (unsigned long long)f.identity.weights, (unsigned long long)identity_.weights));
    if (f.stateFloats != (f.length > 0 ? recurrent_.floats() : f.stateFloats))
        CV_Error(Error::StsBadArg, format(
            "KVCache::loadSequence: '%s' holds a recurrent state of %zu floats; this model's recurrent layers keep %zu",
            p, f.stateFloats, recurrent_.floats()));
    if (f.length > maxSequenceLength_)
        CV_Error(Error::StsOutOfRange, format("KVCache::loadSequence: '%s' holds %d tokens; the context holds %d",
                                              p, f.length, maxSequenceLength_));
    // Pages to take per group (window groups: from the first saved position's page on) and
    // pages the replaced sequence frees.
    std::vector<int> firstPage(groups_.size(), 0);
    for (int l = 0; l < layers_; l++)
        firstPage[layerGroup_[l]] = f.firstSaved(l) / pageSize_;
    size_t needed = 0, freed = 0;
    for (size_t g = 0; g < groups_.size(); g++)
        needed += (size_t)(pagesFor(f.length) - firstPage[g]) * groups_[g].pageBytes;
    if (recurrent_.enabled())
        needed += recurrent_.bytesPerState();
    const auto old = sequences_.find(sequenceId);
    if (old != sequences_.end())
        for (size_t g = 0; g < groups_.size(); g++)
            for (int page : old->second.pages[g])
                if (page != kReleased && groups_[g].refCount[page] == 1)
                    freed += groups_[g].pageBytes;
    if (getBytesInUse() - freed + needed > budget_)
        CV_Error(Error::StsNoMem, format(
            "KVCache::loadSequence: '%s' needs %zu bytes of pages; the memory budget has %zu left (budget %zu bytes, "
            "%zu in use; raise it with KVCache::setMemoryBudget or remove sequences)", p, needed,
            budget_ - std::min(budget_, getBytesInUse() - freed), budget_, getBytesInUse()));

    // Everything fits: replace the sequence.
    if (old != sequences_.end())
        removeSequence(sequenceId);
    Sequence s = newSequence();
    s.length = f.length;
    s.firstHeld.assign(groups_.size(), 0);
    for (int l = 0; l < layers_; l++)
        s.firstHeld[layerGroup_[l]] = f.firstSaved(l);
    for (size_t g = 0; g < groups_.size(); g++)
    {
        s.pages[g].assign(pagesFor(f.length), (int)kReleased);  // a value: kReleased has no definition to bind to
        for (int i = firstPage[g]; i < pagesFor(f.length); i++)
        {
            s.pages[g][i] = takePage((int)g);
            clearPage((int)g, s.pages[g][i]);  // slots before the first saved one
        }
    }
    const bool sameType = f.storageType == codec_.type();
    const KVStorageCodec fileCodec(f.storageType, headDim_);
    std::vector<float> row(headDim_);
    const uchar* src = f.bytes.data() + f.payloadOffset;
    for (int l = 0; l < layers_; l++)
    {
        const int g = layerGroup_[l];
        for (int kv = 0; kv < 2; kv++)
            for (int h = 0; h < kvHeads_; h++)
                for (int pos = f.firstSaved(l); pos < f.length; pos++, src += f.rowBytes)
                {
                    uchar* dst = headRow(g, s.pages[g][pos / pageSize_], l, kv == 1, h, pos % pageSize_);
                    if (sameType)
                        std::memcpy(dst, src, f.rowBytes);
                    else
                    {
                        fileCodec.decode(src, row.data());
                        codec_.encode(row.data(), dst);
                    }
                }
    }
    CV_Assert(src == f.bytes.data() + f.payloadOffset + f.payloadBytes);
    sequences_[sequenceId] = std::move(s);
    if (recurrent_.enabled())
    {
        recurrent_.create(sequenceId);
        if (f.stateFloats == recurrent_.floats())
            std::memcpy(recurrent_.state(sequenceId), f.bytes.data() + f.stateOffset, f.stateFloats * sizeof(float));
    }
}

}}} // namespace cv::dnn::llm
