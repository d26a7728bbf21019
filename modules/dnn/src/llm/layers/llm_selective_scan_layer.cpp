// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Mamba-2's selective scan and gated group norm over the Net's per-sequence recurrent state
// (llama.cpp's build_mamba2_layer from the convolved x / B / C to the normed output): each
// sequence's tokens run through recurrent/selective_scan.hpp in order.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../net/llm_net_state.hpp"
#include "recurrent_runs.hpp"
#include "../recurrent/selective_scan.hpp"


namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMSelectiveScanLayerImpl CV_FINAL : public LLMSelectiveScanLayer
{
public:
    explicit LLMSelectiveScanLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        H_ = params.get<int>("heads");
        P_ = params.get<int>("head_dim");
        G_ = params.get<int>("groups", 1);
        N_ = params.get<int>("state_size");
        eps_ = params.get<float>("epsilon", 1e-5f);
        CV_CheckGT(H_, 0, "LLMSelectiveScan: heads must be positive");
        CV_CheckGT(P_, 0, "LLMSelectiveScan: head_dim must be positive");
        CV_CheckGT(N_, 0, "LLMSelectiveScan: state_size must be positive");
        CV_CheckGT(G_, 0, "LLMSelectiveScan: groups must be positive");
        CV_CheckEQ(H_ % G_, 0, "LLMSelectiveScan: heads must be a multiple of groups");
        CV_CheckEQ(blobs.size(), (size_t)4, "LLMSelectiveScan: blobs are dt_bias, A, D and the norm's weight");
        const int sizes[4] = {H_, H_, H_, H_ * P_};
        for (int i = 0; i < 4; i++)
        {
            CV_CheckTypeEQ(blobs[i].type(), CV_32F, "LLMSelectiveScan: blobs must be float32");
            CV_CheckEQ((int)blobs[i].total(), sizes[i], "LLMSelectiveScan: a blob's size does not match the heads");
        }
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    size_t stateFloats() const CV_OVERRIDE { return (size_t)H_ * P_ * N_; }

    void attachState(const Ptr<llm::LLMNetState>& state, int index) CV_OVERRIDE
    {
        state_ = state;
        index_ = index;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)5, "LLMSelectiveScan: inputs are x, B, C, dt and z");
        const int widths[5] = {H_ * P_, G_ * N_, G_ * N_, H_, H_ * P_};
        for (int i = 0; i < 5; i++)
        {
            CV_CheckEQ((int)inputs[i].size(), 2, "LLMSelectiveScan: inputs must be 2-D (tokens x features)");
            CV_CheckEQ(inputs[i][0], inputs[0][0], "LLMSelectiveScan: inputs differ in token count");
            CV_CheckEQ(inputs[i][1], widths[i], "LLMSelectiveScan: an input's width does not match the heads");
        }
        outputs.assign(1, MatShape{inputs[0][0], H_ * P_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        if (!state_)
            CV_Error(Error::StsError, "LLMSelectiveScan: the layer needs a language model's Net state (installLLMState)");
        const Mat x = inputs_arr.getMat(0), B = inputs_arr.getMat(1), C = inputs_arr.getMat(2);
        const Mat dt = inputs_arr.getMat(3), z = inputs_arr.getMat(4);
        Mat& y = outputs_arr.getMatRef(0);
        for (const Mat* m : {&x, &B, &C, &dt, &z})
            CV_CheckTypeEQ(m->type(), CV_32F, "LLMSelectiveScan: float32 inputs only");
        const llm::BatchPlan& plan = state_->plan();
        CV_CheckEQ(plan.tokens, x.rows, "LLMSelectiveScan: the batch plan has another token count");
        CV_CheckEQ(plan.recurrentState.size(), (size_t)plan.sequences(), "LLMSelectiveScan: the plan holds no recurrent states");
        const llm::RecurrentStateStore& store = state_->cache().recurrentStates();
        const size_t offset = store.layerOffset(index_), floats = store.layerFloats(index_);
        llm::forEachRecurrentRun(plan, offset, floats, [&](float* state, int t0, int count) {
            llm::SelectiveScanInputs in;
            in.tokens = count;
            in.heads = H_;
            in.headDim = P_;
            in.groups = G_;
            in.stateSize = N_;
            in.x = x.ptr<float>(t0);
            in.xTokenStride = x.cols;
            in.dt = dt.ptr<float>(t0);
            in.dtTokenStride = dt.cols;
            in.B = B.ptr<float>(t0);
            in.bTokenStride = B.cols;
            in.C = C.ptr<float>(t0);
            in.cTokenStride = C.cols;
            in.dtBias = blobs[0].ptr<float>();
            in.A = blobs[1].ptr<float>();
            in.D = blobs[2].ptr<float>();
            llm::selectiveScan(in, state, y.ptr<float>(t0), y.cols);
        });
        // y * silu(z), RMS-normed per group, in place: the rows' order does not matter here.
        llm::gatedGroupRMSNorm(y.ptr<float>(), y.cols, z.ptr<float>(), z.cols, blobs[3].ptr<float>(), y.rows,
                               H_ * P_, G_, eps_, y.ptr<float>(), y.cols);
    }

private:
    int H_, P_, G_, N_, index_ = -1;
    float eps_;
    Ptr<llm::LLMNetState> state_;
};

Ptr<LLMSelectiveScanLayer> LLMSelectiveScanLayer::create(const LayerParams& params)
{
    return makePtr<LLMSelectiveScanLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
