// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Causal grouped-query attention with rotary embedding over the Net's paged KV cache.
// num_heads / num_kv_heads query heads share each K/V head. The first attention layer of a
// forward plans the batch (which sequence and position each token has, where its keys and
// values go); every layer then stores its keys and values and runs against that plan.

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
#include "../kernels/rotary_embedding.hpp"
#include "../kernels/paged_attention.hpp"

#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMAttentionLayerImpl CV_FINAL : public LLMAttentionLayer
{
public:
    explicit LLMAttentionLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        heads_ = params.get<int>("num_heads");
        kvHeads_ = params.get<int>("num_kv_heads", heads_);
        headDim_ = params.get<int>("head_dim");
        maxContext_ = params.get<int>("max_context");
        CV_CheckGT(heads_, 0, "LLMAttention: num_heads must be positive");
        CV_CheckGT(kvHeads_, 0, "LLMAttention: num_kv_heads must be positive");
        CV_CheckEQ(heads_ % kvHeads_, 0, "LLMAttention: num_heads must be a multiple of num_kv_heads");
        CV_CheckGT(headDim_, 0, "LLMAttention: head_dim must be positive");
        CV_CheckGT(maxContext_, 0, "LLMAttention: max_context must be positive");
        const int ropeDim = params.get<int>("rope_dim", headDim_);
        CV_CheckLE(ropeDim, headDim_, "LLMAttention: rope_dim exceeds head_dim");
        std::vector<float> freqFactors;
        if (!blobs.empty())
        {
            CV_CheckTypeEQ(blobs[0].type(), CV_32F, "LLMAttention: frequency factors must be float32");
            freqFactors.assign(blobs[0].ptr<float>(), blobs[0].ptr<float>() + blobs[0].total());
        }
        rope_ = llm::RotaryEmbedding(ropeDim, params.get<float>("rope_base", 10000.f),
                                     params.get<bool>("rope_neox", false),
                                     params.get<float>("rope_freq_scale", 1.f), freqFactors);
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)3, "LLMAttention: expects q, k and v");
        for (const MatShape& s : inputs)
            CV_CheckEQ((int)s.size(), 2, "LLMAttention: inputs must be 2-D (tokens x features)");
        CV_CheckEQ(inputs[0][1], heads_ * headDim_, "LLMAttention: q width != num_heads * head_dim");
        CV_CheckEQ(inputs[1][1], kvHeads_ * headDim_, "LLMAttention: k width != num_kv_heads * head_dim");
        CV_CheckEQ(inputs[2][1], kvHeads_ * headDim_, "LLMAttention: v width != num_kv_heads * head_dim");
        CV_CheckEQ(inputs[1][0], inputs[0][0], "LLMAttention: q and k token counts differ");
        CV_CheckEQ(inputs[2][0], inputs[0][0], "LLMAttention: q and v token counts differ");
        outputs.assign(1, inputs[0]);
        return false;
    }

    void attachKVCache(const Ptr<llm::PagedKVCache>& cache, int layerIndex) CV_OVERRIDE
    {
        CV_Assert(cache && layerIndex >= 0 && layerIndex < cache->layers());
        CV_CheckEQ(cache->kvHeads(), kvHeads_, "LLMAttention: the KV cache has another KV head count");
        CV_CheckEQ(cache->headDim(), headDim_, "LLMAttention: the KV cache has another head size");
        cache_ = cache;
        layerIndex_ = layerIndex;
        cache_->setLayerRotary(layerIndex_, rope_);
    }

    Ptr<llm::PagedKVCache> kvCache() CV_OVERRIDE
    {
        if (!cache_)  // a layer used on its own keeps a cache of its own
            attachKVCache(makePtr<llm::PagedKVCache>(1, kvHeads_, headDim_, maxContext_), 0);
        return cache_;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        const Mat q = inputs_arr.getMat(0), k = inputs_arr.getMat(1), v = inputs_arr.getMat(2);
        Mat& out = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(q.type(), CV_32F, "LLMAttention: float32 inputs only");
        CV_CheckTypeEQ(k.type(), CV_32F, "LLMAttention: float32 inputs only");
        CV_CheckTypeEQ(v.type(), CV_32F, "LLMAttention: float32 inputs only");
        const int tokens = q.size[0];
        llm::PagedKVCache& cache = *kvCache();
        // The first attention layer plans the forward; the others run against its plan.
        const llm::BatchPlan& plan = layerIndex_ == 0 ? cache.beginForward(tokens) : cache.plan();
        CV_CheckEQ(plan.tokens, tokens, "LLMAttention: the batch plan has another token count");

        // Rotated queries; rotated keys and the values go to the cache.
        const int qWidth = heads_ * headDim_, kvWidth = kvHeads_ * headDim_;
        query_.resize((size_t)tokens * qWidth);
        std::copy(q.ptr<float>(), q.ptr<float>() + query_.size(), query_.begin());
        rope_.apply(query_.data(), tokens, qWidth, heads_, headDim_, plan.position.data());
        keys_.resize((size_t)tokens * kvWidth);
        std::copy(k.ptr<float>(), k.ptr<float>() + keys_.size(), keys_.begin());
        rope_.apply(keys_.data(), tokens, kvWidth, kvHeads_, headDim_, plan.position.data());
        const float* values = v.ptr<float>();
        for (int t = 0; t < tokens; t++)
            cache.store(layerIndex_, t, keys_.data() + (size_t)t * kvWidth, values + (size_t)t * kvWidth);

        attention_.run(cache, layerIndex_, plan, query_.data(), heads_, 1.f / std::sqrt((float)headDim_),
                       out.ptr<float>());
    }

private:
    int heads_, kvHeads_, headDim_, maxContext_;
    llm::RotaryEmbedding rope_;
    Ptr<llm::PagedKVCache> cache_;
    int layerIndex_ = 0;
    llm::PagedAttention attention_;
    std::vector<float> query_, keys_;  // rotated copies, kept to avoid allocating per step
};

Ptr<LLMAttentionLayer> LLMAttentionLayer::create(const LayerParams& params)
{
    return makePtr<LLMAttentionLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
