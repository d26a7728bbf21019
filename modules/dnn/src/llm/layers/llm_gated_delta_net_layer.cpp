// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Qwen3.5's linear attention core over the Net's per-sequence recurrent state (llama.cpp's
// build_layer_attn_linear from the convolved q / k / v to the delta net's output): q and k
// l2-normalized per head, beta = sigmoid(b), g = softplus(a + dt_bias) * ssm_a, then the gated
// delta rule (recurrent/gated_delta_rule.hpp) of each sequence's tokens in order.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../net/llm_net_state.hpp"
#include "recurrent_runs.hpp"
#include "../recurrent/gated_delta_rule.hpp"

#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMGatedDeltaNetLayerImpl CV_FINAL : public LLMGatedDeltaNetLayer
{
public:
    explicit LLMGatedDeltaNetLayerImpl(const LayerParams& params)
        : rule_(params.get<int>("key_heads"), params.get<int>("value_heads"), params.get<int>("key_dim"),
                params.get<int>("value_dim"))
    {
        setParamsFrom(params);
        kh_ = rule_.keyHeads();
        vh_ = rule_.valueHeads();
        dk_ = rule_.keyDim();
        dv_ = rule_.valueDim();
        CV_CheckGT(kh_, 0, "LLMGatedDeltaNet: key_heads must be positive");
        CV_CheckEQ(vh_ % kh_, 0, "LLMGatedDeltaNet: value_heads must be a multiple of key_heads");
        eps_ = params.get<float>("epsilon", 1e-6f);
        CV_CheckEQ(blobs.size(), (size_t)2, "LLMGatedDeltaNet: blobs are dt_bias and ssm_a");
        for (const Mat& b : blobs)
        {
            CV_CheckTypeEQ(b.type(), CV_32F, "LLMGatedDeltaNet: dt_bias and ssm_a must be float32");
            CV_CheckEQ((int)b.total(), vh_, "LLMGatedDeltaNet: dt_bias and ssm_a hold one value per value head");
        }
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    size_t stateFloats() const CV_OVERRIDE { return rule_.stateFloats(); }

    void attachState(const Ptr<llm::LLMNetState>& state, int index) CV_OVERRIDE
    {
        state_ = state;
        index_ = index;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)5, "LLMGatedDeltaNet: inputs are q, k, v, a (decay) and b (beta)");
        const int widths[5] = {kh_ * dk_, kh_ * dk_, vh_ * dv_, vh_, vh_};
        for (int i = 0; i < 5; i++)
        {
            CV_CheckEQ((int)inputs[i].size(), 2, "LLMGatedDeltaNet: inputs must be 2-D (tokens x features)");
            CV_CheckEQ(inputs[i][0], inputs[0][0], "LLMGatedDeltaNet: inputs differ in token count");
            CV_CheckEQ(inputs[i][1], widths[i], "LLMGatedDeltaNet: an input's width does not match the heads");
        }
        outputs.assign(1, MatShape{inputs[0][0], vh_ * dv_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        if (!state_)
            CV_Error(Error::StsError, "LLMGatedDeltaNet: the layer needs a language model's Net state (installLLMState)");
        const Mat q = inputs_arr.getMat(0), k = inputs_arr.getMat(1), v = inputs_arr.getMat(2);
        const Mat a = inputs_arr.getMat(3), b = inputs_arr.getMat(4);
        Mat& out = outputs_arr.getMatRef(0);
        for (const Mat* m : {&q, &k, &v, &a, &b})
            CV_CheckTypeEQ(m->type(), CV_32F, "LLMGatedDeltaNet: float32 inputs only");
        const int T = q.rows;
        const llm::BatchPlan& plan = state_->plan();
        CV_CheckEQ(plan.tokens, T, "LLMGatedDeltaNet: the batch plan has another token count");
        CV_CheckEQ(plan.recurrentState.size(), (size_t)plan.sequences(), "LLMGatedDeltaNet: the plan holds no recurrent states");
        prepare(q, k, a, b);
        const llm::RecurrentStateStore& store = state_->cache().recurrentStates();
        const size_t offset = store.layerOffset(index_), floats = store.layerFloats(index_);
        llm::forEachRecurrentRun(plan, offset, floats, [&](float* state, int t0, int count) {
            llm::GatedDeltaRuleInputs in;
            in.q = rows(qn_, t0, dk_);
            in.k = rows(kn_, t0, dk_);
            in.v = rows(v, t0, dv_);
            in.g = rows(g_, t0, 1);
            in.beta = rows(beta_, t0, 1);
            in.tokens = count;
            llm::GatedDeltaRuleOutputRows o{out.ptr<float>(t0), (size_t)out.cols, (size_t)dv_};
            rule_.run(in, state, o);
        });
    }

private:
    static llm::GatedDeltaRuleRows rows(const Mat& m, int token, int head)
    {
        return llm::GatedDeltaRuleRows{m.ptr<float>(token), (size_t)m.cols, (size_t)head};
    }

    // q and k normalized per head (ggml_l2_norm: x / max(|x|, eps)); the gates.
    void prepare(const Mat& q, const Mat& k, const Mat& a, const Mat& b)
    {
        const int T = q.rows;
        qn_.create(T, q.cols, CV_32F);
        kn_.create(T, k.cols, CV_32F);
        g_.create(T, vh_, CV_32F);
        beta_.create(T, vh_, CV_32F);
        const float* dtBias = blobs[0].ptr<float>();
        const float* ssmA = blobs[1].ptr<float>();
        for (int t = 0; t < T; t++)
        {
            for (int h = 0; h < kh_; h++)
            {
                l2Normalize(q.ptr<float>(t) + h * dk_, qn_.ptr<float>(t) + h * dk_);
                l2Normalize(k.ptr<float>(t) + h * dk_, kn_.ptr<float>(t) + h * dk_);
            }
            const float* at = a.ptr<float>(t);
            const float* bt = b.ptr<float>(t);
            float* gt = g_.ptr<float>(t);
            float* betat = beta_.ptr<float>(t);
            for (int h = 0; h < vh_; h++)
            {
                const float x = at[h] + dtBias[h];
                const float softplus = x > 20.f ? x : std::log(1.f + std::exp(x));  // ggml's op_softplus
                gt[h] = softplus * ssmA[h];
                betat[h] = 1.f / (1.f + std::exp(-bt[h]));
            }
        }
    }

    void l2Normalize(const float* x, float* y) const
    {
        double sum = 0;
        for (int i = 0; i < dk_; i++)
            sum += (double)x[i] * x[i];
        const float scale = 1.f / std::max(std::sqrt((float)sum), eps_);
        for (int i = 0; i < dk_; i++)
            y[i] = x[i] * scale;
    }

    llm::GatedDeltaRule rule_;
    int kh_, vh_, dk_, dv_, index_ = -1;
    float eps_;
    Ptr<llm::LLMNetState> state_;
    Mat qn_, kn_, g_, beta_;  // grow-only scratch
};

Ptr<LLMGatedDeltaNetLayer> LLMGatedDeltaNetLayer::create(const LayerParams& params)
{
    return makePtr<LLMGatedDeltaNetLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
