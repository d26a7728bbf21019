// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#ifndef OPENCV_DNN_SRC_LLM_COMMON_MAPPED_FILE_HPP
#define OPENCV_DNN_SRC_LLM_COMMON_MAPPED_FILE_HPP

#include <opencv2/core.hpp>
#include <memory>
#include <string>

namespace cv {
namespace dnn {
namespace llm {

//! A whole file mapped read-only into memory (private mapping; pages load on first touch).
class MappedFile
{
public:
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uchar* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const uchar* data_ = nullptr;
    size_t size_ = 0;
};

/** A rows x rowBytes CV_8U Mat over part of a mapped file, with no copy. The Mat (and every
    copy of its header) keeps the mapping alive, so layers may hold it as a blob. */
Mat wrapMappedBytes(const std::shared_ptr<MappedFile>& file, const uchar* data, int64 rows, int64 rowBytes);

/** For weights copied elsewhere at load (repacked): drops the whole pages of [data, data +
    bytes) of a Mat made by wrapMappedBytes() from the process's resident memory; touched again,
    they are read from the file. Does nothing for other Mats (their memory is not a file's). */
void releaseMappedPages(const Mat& m, const uchar* data, size_t bytes);

}}} // namespace cv::dnn::llm

#endif
