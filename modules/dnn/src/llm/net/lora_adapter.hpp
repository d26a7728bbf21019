// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// LoRA adapters as a Net holds them: y = W x + s * B (A x) for the weights an adapter names,
// applied without merging (quantized bases stay quantized), per sequence: the Net's state says
// which adapters, with which scales, each sequence of a forward runs with (AdapterSet), and the
// matmul layers add the low-rank terms of those adapters to that sequence's rows only.

#ifndef OPENCV_DNN_SRC_LLM_NET_LORA_ADAPTER_HPP
#define OPENCV_DNN_SRC_LLM_NET_LORA_ADAPTER_HPP

#include <opencv2/core.hpp>

#include <deque>
#include <map>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

/** How llama.cpp's CPU matmul rounds the activations it multiplies by a weight of a given type
    (the type's vec_dot_type): an F16 weight's input is rounded to fp16, BF16's to bfloat16, a
    Q8_0 weight's to Q8_0 blocks (32 values, fp16 scale); F32 keeps it. */
enum class AdapterRounding { None, F16, BF16, Q8_0 };

//! x rounded as `kind` says into out, which may be x (n values; Q8_0: n is a multiple of 32).
void roundAdapterInput(const float* x, float* out, int n, AdapterRounding kind);

/** One adapter's low-rank pair for one weight (or the part of its rows one matmul weight
    holds): delta = B (A x), B's rows limited to that part. */
struct LowRankWeight
{
    int rank = 0, in = 0, out = 0;
    Mat a;   //!< rank x in, float32: lora_a decoded
    Mat bt;  //!< rank x out, float32: lora_b decoded and transposed (one row per rank)
    //! llama.cpp's get_scale: alpha / rank, or 1 without alpha; the sequence's scale multiplies it.
    float alphaScale = 1.f;
    AdapterRounding aInput = AdapterRounding::None;  //!< x's rounding for A (A's type)
    AdapterRounding bInput = AdapterRounding::None;  //!< (A x)'s rounding for B (B's type)
};

//! An adapter file as read: its low-rank pairs by the base tensor they adapt.
struct LoRAAdapter
{
    std::string path;
    std::string architecture;   //!< general.architecture
    float alpha = 0.f;          //!< adapter.lora.alpha (0: absent)
    //! A hash of its pairs (names, types, bytes) and alpha: sessions name their adapters by it.
    uint64 digest = 0;
    std::map<std::string, LowRankWeight> weights;  //!< by base tensor name ("blk.0.attn_q.weight")
    //! B split by rows for the weights that hold part of a tensor (phi3's fused ffn_up); a deque keeps their addresses.
    std::deque<LowRankWeight> slices;
};

//! One adapter applied to a sequence: its id (LLMNetState::addAdapter) and scale.
struct AdapterUse
{
    int id = -1;
    float scale = 0.f;
    bool operator==(const AdapterUse& o) const { return id == o.id && scale == o.scale; }
};

/** The adapters a sequence runs with: ascending ids, no zero scales (normalizeAdapterSet), so
    that two equal sets compare equal and add their terms in the same order. */
typedef std::vector<AdapterUse> AdapterSet;

//! ids and scales (empty scales: 1 each) as an AdapterSet; zero scales dropped, a repeated id refused.
AdapterSet normalizeAdapterSet(const std::vector<int>& ids, const std::vector<float>& scales, const char* caller);

}}} // namespace cv::dnn::llm

#endif
