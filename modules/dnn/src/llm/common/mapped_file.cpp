// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

namespace cv {
namespace dnn {
namespace llm {

MappedFile::MappedFile(const std::string& path) : path_(path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        CV_Error(Error::StsError, format("GGUF: cannot open '%s': %s", path.c_str(), std::strerror(errno)));
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    {
        ::close(fd);
        CV_Error(Error::StsError, format("GGUF: '%s' is not a regular file", path.c_str()));
    }
    size_ = (size_t)st.st_size;
    if (size_ == 0)
    {
        ::close(fd);
        CV_Error(Error::StsParseError, format("GGUF: '%s' is empty", path.c_str()));
    }
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED)
        CV_Error(Error::StsError, format("GGUF: cannot map '%s': %s", path.c_str(), std::strerror(errno)));
    data_ = static_cast<const uchar*>(p);
}

MappedFile::~MappedFile()
{
    if (data_)
        ::munmap(const_cast<uchar*>(data_), size_);
}

namespace {

// Gives Mats a reference to a mapped file. Each wrapped Mat gets its own UMatData whose
// userdata holds a shared_ptr to the mapping; the last Mat to go releases it.
class MappedFileAllocator CV_FINAL : public MatAllocator
{
public:
    UMatData* allocate(int, const int*, int, void*, size_t*, AccessFlag, UMatUsageFlags) const CV_OVERRIDE
    {
        CV_Error(Error::StsNotImplemented, "GGUF: mapped tensors are read-only views");
    }
    bool allocate(UMatData*, AccessFlag, UMatUsageFlags) const CV_OVERRIDE
    {
        return false;
    }
    void deallocate(UMatData* u) const CV_OVERRIDE
    {
        if (!u)
            return;
        CV_Assert(u->urefcount == 0 && u->refcount == 0);
        delete static_cast<std::shared_ptr<MappedFile>*>(u->userdata);
        delete u;
    }
};

MatAllocator* mappedFileAllocator()
{
    static MappedFileAllocator* allocator = new MappedFileAllocator();  // never destroyed: Mats may outlive statics
    return allocator;
}

} // namespace

Mat wrapMappedBytes(const std::shared_ptr<MappedFile>& file, const uchar* data, int64 rows, int64 rowBytes)
{
    CV_Assert(file && rows > 0 && rowBytes > 0);
    if (rows > INT_MAX || rowBytes > INT_MAX)
        CV_Error(Error::StsOutOfRange, format("GGUF: a tensor of %lld rows of %lld bytes is too large to wrap",
                                              (long long)rows, (long long)rowBytes));
    const size_t bytes = (size_t)rows * (size_t)rowBytes;
    CV_Assert(data >= file->data() && bytes <= file->size() &&
              (size_t)(data - file->data()) <= file->size() - bytes);
    // A Mat over external data; then hand it a UMatData so its header copies share ownership.
    Mat m((int)rows, (int)rowBytes, CV_8U, const_cast<uchar*>(data));
    UMatData* u = new UMatData(mappedFileAllocator());
    u->data = u->origdata = const_cast<uchar*>(data);
    u->size = bytes;
    u->flags = UMatData::USER_ALLOCATED;
    u->userdata = new std::shared_ptr<MappedFile>(file);
    u->refcount = 1;
    m.allocator = mappedFileAllocator();
    m.u = u;
    return m;
}

void releaseMappedPages(const Mat& m, const uchar* data, size_t bytes)
{
    if (!m.u || m.u->currAllocator != mappedFileAllocator())
        return;
    CV_Assert(data >= m.u->origdata && bytes <= m.u->size && (size_t)(data - m.u->origdata) <= m.u->size - bytes);
#ifndef _WIN32
    // A private read-only file mapping: dropped pages come back from the file, unchanged.
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t begin = ((uintptr_t)data + page - 1) / page * page, end = ((uintptr_t)data + bytes) / page * page;
    if (end > begin)
        madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#endif
}

}}} // namespace cv::dnn::llm
