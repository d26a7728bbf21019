// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "amx_tiles.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__linux__) && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LLM_AMX_PROBE 1
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace cv {
namespace dnn {
namespace llm {

#ifdef LLM_AMX_PROBE
static bool cpuAndOsHaveAmxInt8()
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27)))  // OSXSAVE: XGETBV may be used
        return false;
    if (__get_cpuid_max(0, nullptr) < 7)
        return false;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned amxTile = 1u << 24, amxInt8 = 1u << 25;
    if ((d & (amxTile | amxInt8)) != (amxTile | amxInt8))
        return false;
    unsigned xcr0 = 0, xcr0High = 0;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0High) : "c"(0));
    const unsigned tileConfig = 1u << 17, tileData = 1u << 18;  // the OS saves both
    return (xcr0 & (tileConfig | tileData)) == (tileConfig | tileData);
}

static bool requestTileData()
{
    const long kArchReqXcompPerm = 0x1023, kXFeatureXTileData = 18;  // <asm/prctl.h>, Linux 5.16
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXFeatureXTileData) == 0;
}
#endif

bool amxTilesGranted()
{
    static const bool granted = [] {
        const char* v = std::getenv("OPENCV_DNN_LLM_AMX");
        if (v && std::strcmp(v, "0") == 0)
            return false;
#ifdef LLM_AMX_PROBE
        return cpuAndOsHaveAmxInt8() && requestTileData();
#else
        return false;
#endif
    }();
    return granted;
}

}}} // namespace cv::dnn::llm
