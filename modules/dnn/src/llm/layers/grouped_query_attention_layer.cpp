// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Causal grouped-query attention with rotary embedding and a per-layer key/value store that
// persists across forward calls. num_heads / num_kv_heads query heads share each K/V head.

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
#include "../kernels/rotary_embedding.hpp"
#include "../kernels/vector_ops.hpp"

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

    void resetSequence() CV_OVERRIDE
    {
        length_ = 0;
    }

    void truncateSequence(int length) CV_OVERRIDE
    {
        CV_CheckGE(length, 0, "LLMAttention: sequence length must not be negative");
        length_ = std::min(length_, length);
    }

    int sequenceLength() const CV_OVERRIDE
    {
        return length_;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        std::vector<Mat> inputs, outputs;
        inputs_arr.getMatVector(inputs);
        outputs_arr.getMatVector(outputs);
        for (const Mat& m : inputs)
            CV_CheckTypeEQ(m.type(), CV_32F, "LLMAttention: float32 inputs only");
        const int tokens = inputs[0].size[0];
        if (tokens > maxContext_ - length_)
            CV_Error(Error::StsOutOfRange, format(
                "LLMAttention '%s': the context is full: %d cached + %d new tokens exceed the maximum of %d "
                "(start a new sequence with resetLLMState())", name.c_str(), length_, tokens, maxContext_));

        const int qWidth = heads_ * headDim_, kvWidth = kvHeads_ * headDim_;
        positions_.resize(tokens);
        for (int t = 0; t < tokens; t++)
            positions_[t] = length_ + t;

        // Rotated queries; rotated keys and values appended to the store.
        query_.resize((size_t)tokens * qWidth);
        std::copy(inputs[0].ptr<float>(), inputs[0].ptr<float>() + query_.size(), query_.begin());
        rope_.apply(query_.data(), tokens, qWidth, heads_, headDim_, positions_.data());
        const size_t needed = (size_t)(length_ + tokens) * kvWidth;
        if (keys_.size() < needed)
        {
            // Grow geometrically up to the context limit so that appends stay amortized O(1).
            const size_t cap = std::min((size_t)maxContext_ * kvWidth, std::max(needed, 2 * keys_.size()));
            keys_.resize(cap);
            values_.resize(cap);
        }
        float* newKeys = keys_.data() + (size_t)length_ * kvWidth;
        std::copy(inputs[1].ptr<float>(), inputs[1].ptr<float>() + (size_t)tokens * kvWidth, newKeys);
        rope_.apply(newKeys, tokens, kvWidth, kvHeads_, headDim_, positions_.data());
        std::copy(inputs[2].ptr<float>(), inputs[2].ptr<float>() + (size_t)tokens * kvWidth,
                  values_.data() + (size_t)length_ * kvWidth);
        const int past = length_;
        length_ += tokens;

        const float scale = 1.f / std::sqrt((float)headDim_);
        const int group = heads_ / kvHeads_;
        float* out = outputs[0].ptr<float>();
        parallel_for_(Range(0, tokens * heads_), [&](const Range& r) {
            AutoBuffer<float> scores(past + tokens);
            for (int task = r.start; task < r.end; task++)
            {
                const int t = task / heads_, h = task % heads_;
                const int kvHead = h / group;
                const int visible = past + t + 1;  // causal: positions 0 .. past + t
                const float* q = query_.data() + (size_t)t * qWidth + (size_t)h * headDim_;
                float maxScore = -FLT_MAX;
                for (int j = 0; j < visible; j++)
                {
                    const float* k = keys_.data() + (size_t)j * kvWidth + (size_t)kvHead * headDim_;
                    scores[j] = llm::dotF32(q, k, headDim_) * scale;
                    maxScore = std::max(maxScore, scores[j]);
                }
                float sum = 0.f;
                for (int j = 0; j < visible; j++)
                {
                    scores[j] = std::exp(scores[j] - maxScore);
                    sum += scores[j];
                }
                float* o = out + (size_t)t * qWidth + (size_t)h * headDim_;
                std::fill(o, o + headDim_, 0.f);
                for (int j = 0; j < visible; j++)
                    llm::axpyF32(scores[j], values_.data() + (size_t)j * kvWidth + (size_t)kvHead * headDim_, o, headDim_);
                llm::scaleF32(1.f / sum, o, headDim_);
            }
        });
    }

private:
    int heads_, kvHeads_, headDim_, maxContext_;
    llm::RotaryEmbedding rope_;
    int length_ = 0;
    std::vector<int> positions_;  // scratch, kept to avoid allocating per decode step
    std::vector<float> query_;
    std::vector<float> keys_, values_;  // [position][kv head][head_dim]
};

Ptr<LLMAttentionLayer> LLMAttentionLayer::create(const LayerParams& params)
{
    return makePtr<LLMAttentionLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
