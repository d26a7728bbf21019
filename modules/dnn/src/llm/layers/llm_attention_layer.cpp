// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Causal grouped-query attention with rotary embedding over the Net's paged KV cache.
// num_heads / num_kv_heads query heads share each K/V head. The Net's state planned the
// forward before it started (which sequence and position each token has, where its keys and
// values go: net/llm_net_state.hpp); every attention layer stores its keys and values and runs
// against that plan.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../attention/paged_attention.hpp"
#include "../attention/rotary_embedding.hpp"
#include "../net/llm_net_state.hpp"

#include <algorithm>
#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

// discardTokens() turns stored keys with the layer's rotary embedding.
class RotaryKeyShift CV_FINAL : public llm::KeyPositionShift
{
public:
    RotaryKeyShift(const llm::RotaryEmbedding& rope, int headDim) : rope_(rope), headDim_(headDim) {}
    void shift(float* keyRow, int delta) const CV_OVERRIDE
    {
        rope_.apply(keyRow, 1, headDim_, 1, headDim_, &delta);
    }

private:
    llm::RotaryEmbedding rope_;
    int headDim_;
};

} // namespace

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
        // Layers smaller than the Net's KV cache rows (gemma4's local layers beside its global
        // ones): q, k and v come with heads of input_head_dim, zero-padded to head_dim here (the
        // padding adds nothing to a score, and output_head_dim drops it from the output), and
        // with input_kv_heads KV heads, each stored num_kv_heads / input_kv_heads times (query
        // head h still meets the KV head it would have: h / (num_heads / input_kv_heads)).
        inHeadDim_ = params.get<int>("input_head_dim", headDim_);
        CV_Check(inHeadDim_, inHeadDim_ > 0 && inHeadDim_ <= headDim_, "LLMAttention: input_head_dim must be in [1, head_dim]");
        inKVHeads_ = params.get<int>("input_kv_heads", kvHeads_);
        CV_Check(inKVHeads_, inKVHeads_ > 0 && kvHeads_ % inKVHeads_ == 0,
                 "LLMAttention: num_kv_heads must be a multiple of input_kv_heads");
        // gemma4's KV sharing: the layer takes q only and reads the keys and values another
        // attention layer stored (attachState names that layer's KV-cache layer).
        kvShared_ = params.get<bool>("kv_shared", false);
        scale_ = params.get<float>("scale", 1.f / std::sqrt((float)inHeadDim_));
        CV_Check(scale_, scale_ > 0.f && std::isfinite(scale_), "LLMAttention: scale must be positive");
        // Gemma 2: scores soft-capped, c * tanh(s / c); sliding-window layers attend to their
        // last `sliding_window` positions (the token itself included).
        softCap_ = params.get<float>("logit_softcap", 0.f);
        CV_Check(softCap_, softCap_ >= 0.f && std::isfinite(softCap_), "LLMAttention: logit_softcap must not be negative");
        window_ = params.get<int>("sliding_window", 0);
        CV_CheckGE(window_, 0, "LLMAttention: sliding_window must not be negative");
        if (params.has("sinks"))
        {
            const DictValue sinks = params.get("sinks");
            CV_CheckEQ(sinks.size(), heads_, "LLMAttention: sinks needs one logit per query head");
            for (int h = 0; h < heads_; h++)
            {
                sinks_.push_back((float)sinks.get<double>(h));
                CV_Check(sinks_.back(), std::isfinite(sinks_.back()), "LLMAttention: attention sinks must be finite");
            }
        }
        // The first output_head_dim values of each head's output: an ONNX graph that padded its
        // heads for the attention operator slices the padding off after it (the importer folds
        // that Slice in here; the cache keeps the padded head size).
        outputHeadDim_ = params.get<int>("output_head_dim", inHeadDim_);
        CV_Check(outputHeadDim_, outputHeadDim_ > 0 && outputHeadDim_ <= headDim_,
                 "LLMAttention: output_head_dim must be in [1, head_dim]");
        // llama.cpp's attn_factor (ggml_rope_ext's mscale): cos and sin are multiplied by it, so
        // the rotated dimensions of q and k come out scaled (GGUF rope.scaling.attn_factor).
        ropeAttnFactor_ = params.get<float>("rope_attn_factor", 1.f);
        CV_Check(ropeAttnFactor_, ropeAttnFactor_ > 0.f && std::isfinite(ropeAttnFactor_),
                 "LLMAttention: rope_attn_factor must be positive");
        // llama.cpp's attention temperature (mistral3's attention.temperature_scale, Llama 4's
        // scaling): each query row times 1 + scale * ln(1 + floor(pos / length)) after rotary.
        temperatureScale_ = params.get<float>("attn_temperature_scale", 0.f);
        temperatureLength_ = params.get<int>("attn_temperature_length", 0);
        CV_Check(temperatureScale_, std::isfinite(temperatureScale_), "LLMAttention: attn_temperature_scale must be finite");
        if (temperatureScale_ != 0.f)
            CV_CheckGT(temperatureLength_, 0, "LLMAttention: attn_temperature_length must be positive");
        const String ropeMode = params.get<String>("rope_mode", "formula");
        if (ropeMode == "none")
        {
            rope_ = llm::RotaryEmbedding::none();
        }
        else if (ropeMode == "table")
        {
            CV_CheckEQ(blobs.size(), (size_t)2, "LLMAttention: rope_mode 'table' needs the cos and sin tables as blobs");
            rope_ = llm::RotaryEmbedding(blobs[0], blobs[1], params.get<bool>("rope_neox", false));
            CV_CheckLE(rope_.ropeDim(), headDim_, "LLMAttention: the rotary tables cover more than head_dim");
            maxContext_ = std::min(maxContext_, rope_.positionLimit());
        }
        else if (ropeMode == "formula")
        {
            const int ropeDim = params.get<int>("rope_dim", headDim_);
            CV_CheckLE(ropeDim, inHeadDim_, "LLMAttention: rope_dim exceeds the head size");
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
        else
        {
            CV_Error(Error::StsBadArg, "LLMAttention: rope_mode must be 'formula', 'table' or 'none', not '" + ropeMode + "'");
        }
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_Check(inputs.size(), kvShared_ ? inputs.size() == 1 : (inputs.size() == 3 || inputs.size() == 1),
                 "LLMAttention: expects q, k and v, or one packed q|k|v input (with kv_shared: q only)");
        for (const MatShape& s : inputs)
            CV_CheckEQ((int)s.size(), 2, "LLMAttention: inputs must be 2-D (tokens x features)");
        const int qWidth = heads_ * inHeadDim_, kvWidth = inKVHeads_ * inHeadDim_;
        if (kvShared_)
        {
            CV_CheckEQ(inputs[0][1], qWidth, "LLMAttention: q width != num_heads * head size");
            outputs.assign(1, MatShape{inputs[0][0], heads_ * outputHeadDim_});
            return false;
        }
        if (inputs.size() == 1)
        {
            CV_Check(inHeadDim_, inHeadDim_ == headDim_ && inKVHeads_ == kvHeads_,
                     "LLMAttention: a packed q|k|v input cannot be padded (input_head_dim, input_kv_heads)");
            CV_CheckEQ(inputs[0][1], qWidth + 2 * kvWidth, "LLMAttention: packed q|k|v width != (num_heads + 2 * num_kv_heads) * head_dim");
            outputs.assign(1, MatShape{inputs[0][0], heads_ * outputHeadDim_});
            return false;
        }
        CV_CheckEQ(inputs[0][1], qWidth, "LLMAttention: q width != num_heads * head_dim");
        CV_CheckEQ(inputs[1][1], kvWidth, "LLMAttention: k width != num_kv_heads * head_dim");
        CV_CheckEQ(inputs[2][1], kvWidth, "LLMAttention: v width != num_kv_heads * head_dim");
        CV_CheckEQ(inputs[1][0], inputs[0][0], "LLMAttention: q and k token counts differ");
        CV_CheckEQ(inputs[2][0], inputs[0][0], "LLMAttention: q and v token counts differ");
        outputs.assign(1, MatShape{inputs[0][0], heads_ * outputHeadDim_});
        return false;
    }

    void attachState(const Ptr<llm::LLMNetState>& state, int layerIndex) CV_OVERRIDE
    {
        CV_Assert(state && layerIndex >= 0 && layerIndex < state->cache().layers());
        CV_CheckEQ(state->cache().kvHeads(), kvHeads_, "LLMAttention: the KV cache has another KV head count");
        CV_CheckEQ(state->cache().headDim(), headDim_, "LLMAttention: the KV cache has another head size");
        CV_CheckEQ(state->cache().layerWindow(layerIndex), window_ < state->cache().getMaxSequenceLength() ? window_ : 0,
                   "LLMAttention: the KV cache layer has another sliding window");
        state_ = state;
        layerIndex_ = layerIndex;
        if (!kvShared_)  // (the layer that stores the keys turns them)
            state_->cache().setKeyPositionShift(layerIndex_, makePtr<RotaryKeyShift>(rope_, headDim_));
    }

    int kvHeads() const CV_OVERRIDE { return kvHeads_; }
    int headDim() const CV_OVERRIDE { return headDim_; }
    int maxContext() const CV_OVERRIDE { return maxContext_; }
    int slidingWindow() const CV_OVERRIDE { return window_; }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        const bool packed = inputs_arr.size().area() == 1 && !kvShared_;
        const Mat q = inputs_arr.getMat(0);
        const Mat k = packed || kvShared_ ? q : inputs_arr.getMat(1), v = packed || kvShared_ ? q : inputs_arr.getMat(2);
        Mat& out = outputs_arr.getMatRef(0);
        CV_CheckTypeEQ(q.type(), CV_32F, "LLMAttention: float32 inputs only");
        CV_CheckTypeEQ(k.type(), CV_32F, "LLMAttention: float32 inputs only");
        CV_CheckTypeEQ(v.type(), CV_32F, "LLMAttention: float32 inputs only");
        const int tokens = q.size[0];
        if (!state_)
            CV_Error(Error::StsError, "LLMAttention: the layer is not part of a language model's Net "
                                      "(readNet a GGUF or ONNX language model, or see net/net_assembly.hpp)");
        llm::PagedKVCache& cache = state_->cache();
        const llm::BatchPlan& plan = state_->plan();
        CV_CheckEQ(plan.tokens, tokens, "LLMAttention: the batch plan has another token count");

        // Rotated queries; rotated keys and the values go to the cache. A packed row is q|k|v.
        const int qWidth = heads_ * headDim_, kvWidth = kvHeads_ * headDim_;
        const size_t qStride = q.step[0] / sizeof(float), kStride = k.step[0] / sizeof(float);
        const size_t vStride = v.step[0] / sizeof(float);
        const float* kData = k.ptr<float>() + (packed ? qWidth : 0);
        const float* vData = v.ptr<float>() + (packed ? qWidth + kvWidth : 0);
        const bool padded = inHeadDim_ != headDim_ || inKVHeads_ != kvHeads_;
        query_.resize((size_t)tokens * qWidth);
        keys_.resize(kvShared_ ? 0 : (size_t)tokens * kvWidth);
        values_.resize(padded && !kvShared_ ? (size_t)tokens * kvWidth : 0);
        for (int t = 0; t < tokens; t++)
        {
            padHeads(q.ptr<float>() + t * qStride, heads_, 1, query_.data() + (size_t)t * qWidth);
            if (kvShared_)
                continue;
            padHeads(kData + t * kStride, inKVHeads_, kvHeads_ / inKVHeads_, keys_.data() + (size_t)t * kvWidth);
            if (padded)
                padHeads(vData + t * vStride, inKVHeads_, kvHeads_ / inKVHeads_, values_.data() + (size_t)t * kvWidth);
        }
        angles_.resize((size_t)tokens * rope_.ropeDim());
        rope_.angles(plan.position.data(), tokens, angles_.data());
        rope_.rotate(query_.data(), tokens, qWidth, heads_, headDim_, angles_.data());
        if (!kvShared_)
            rope_.rotate(keys_.data(), tokens, kvWidth, kvHeads_, headDim_, angles_.data());
        if (ropeAttnFactor_ != 1.f)
        {
            scaleRotated(query_.data(), (size_t)tokens * heads_);
            if (!kvShared_)
                scaleRotated(keys_.data(), (size_t)tokens * kvHeads_);
        }
        if (temperatureScale_ != 0.f)
            scaleByTemperature(query_.data(), tokens, plan.position.data());
        const auto& pageTables = plan.pageTables[cache.layerGroup(layerIndex_)];
        for (int t = 0; !kvShared_ && t < tokens; t++)
            cache.store(layerIndex_, *pageTables[plan.batchSequence[t]], plan.position[t], keys_.data() + (size_t)t * kvWidth,
                        padded ? values_.data() + (size_t)t * kvWidth : vData + t * vStride);

        if (outputHeadDim_ == headDim_)
        {
            attention_.run(cache, layerIndex_, plan, query_.data(), heads_, scale_, softCap_, sinksOrNull(), out.ptr<float>());
            return;
        }
        paddedOut_.resize((size_t)tokens * qWidth);
        attention_.run(cache, layerIndex_, plan, query_.data(), heads_, scale_, softCap_, sinksOrNull(), paddedOut_.data());
        for (int t = 0; t < tokens; t++)
            for (int h = 0; h < heads_; h++)
                std::copy_n(paddedOut_.data() + (size_t)t * qWidth + (size_t)h * headDim_, outputHeadDim_,
                            out.ptr<float>(t) + (size_t)h * outputHeadDim_);
    }

private:
    // `heads` heads of inHeadDim_ from `in` to `out` as heads of headDim_ (zeros after the input's
    // elements), each written `repeat` times in a row.
    void padHeads(const float* in, int heads, int repeat, float* out) const
    {
        if (inHeadDim_ == headDim_ && repeat == 1)
        {
            std::copy_n(in, (size_t)heads * headDim_, out);
            return;
        }
        for (int h = 0; h < heads; h++)
            for (int r = 0; r < repeat; r++, out += headDim_)
            {
                std::copy_n(in + (size_t)h * inHeadDim_, inHeadDim_, out);
                std::fill(out + inHeadDim_, out + headDim_, 0.f);
            }
    }

    // The first ropeDim elements of each of `heads` consecutive heads times ropeAttnFactor_
    // (stored keys are scaled once: a later key shift only turns them).
    void scaleRotated(float* x, size_t heads) const
    {
        const int n = rope_.ropeDim();
        for (size_t h = 0; h < heads; h++)
            for (int d = 0; d < n; d++)
                x[h * headDim_ + d] *= ropeAttnFactor_;
    }

    // Query row t times llama.cpp's llm_graph_input_attn_temp value at its position (computed
    // with the same float / double steps).
    void scaleByTemperature(float* q, int tokens, const int* positions) const
    {
        const int width = heads_ * headDim_;
        for (int t = 0; t < tokens; t++)
        {
            const float pos = (float)positions[t];
            const float s = (float)(std::log(std::floor(pos / (float)temperatureLength_) + 1.0) * temperatureScale_ + 1.0);
            for (int d = 0; d < width; d++)
                q[(size_t)t * width + d] *= s;
        }
    }

    int heads_, kvHeads_, headDim_, maxContext_, window_ = 0, outputHeadDim_ = 0;
    int inHeadDim_ = 0, inKVHeads_ = 0;  // of the inputs' heads (padded to headDim_ / repeated to kvHeads_)
    bool kvShared_ = false;              // reads another layer's keys and values (layerIndex_ is that layer's)
    float scale_, softCap_ = 0.f, ropeAttnFactor_ = 1.f;
    float temperatureScale_ = 0.f;  // 0: none
    int temperatureLength_ = 0;
    llm::RotaryEmbedding rope_;
    Ptr<llm::LLMNetState> state_;
    int layerIndex_ = 0;
    llm::PagedAttention attention_;
    std::vector<float> sinks_;  // gpt-oss's attention sinks: one logit per query head (empty: none)
    const float* sinksOrNull() const { return sinks_.empty() ? nullptr : sinks_.data(); }
    std::vector<float> query_, keys_;  // rotated copies, kept to avoid allocating per step
    std::vector<float> values_;        // padded copies (input_head_dim, input_kv_heads)
    std::vector<float> paddedOut_;     // whole heads when only the first outputHeadDim_ of each are output
    std::vector<float> angles_;        // the rotary angles of the step's positions (queries and keys)
};

Ptr<LLMAttentionLayer> LLMAttentionLayer::create(const LayerParams& params)
{
    return makePtr<LLMAttentionLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
