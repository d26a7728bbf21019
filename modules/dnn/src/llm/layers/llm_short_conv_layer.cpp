// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The short convolution of hybrid models over the Net's per-sequence recurrent state: each
// sequence's tokens run in order against the K - 1 inputs before them, which the state holds
// between forwards (a layout of K - 1 rows of all channels, oldest first).

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../net/llm_net_state.hpp"
#include "../recurrent/short_convolution.hpp"

#include <cstring>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMShortConvLayerImpl CV_FINAL : public LLMShortConvLayer
{
public:
    explicit LLMShortConvLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        K_ = params.get<int>("kernel_size");
        CV_CheckGE(K_, 2, "LLMShortConv: kernel_size must be at least 2");
        CV_Assert(params.has("input_channels"));
        const DictValue& channels = params.get("input_channels");
        channels_ = 0;
        for (int i = 0; i < channels.size(); i++)
        {
            CV_CheckGT(channels.get<int>(i), 0, "LLMShortConv: input_channels must be positive");
            inputOffset_.push_back(channels_);
            inputChannels_.push_back(channels.get<int>(i));
            channels_ += channels.get<int>(i);
        }
        CV_CheckGE((int)blobs.size(), 1, "LLMShortConv: the kernel is blobs[0]");
        const Mat& w = blobs[0];
        CV_CheckTypeEQ(w.type(), CV_32F, "LLMShortConv: the kernel must be float32");
        CV_CheckEQ((int)w.total(), channels_ * K_, "LLMShortConv: the kernel must hold kernel_size taps per channel");
        // Taps transposed to K rows of channels: the loops run over channels.
        taps_.create(K_, channels_, CV_32F);
        const float* src = w.ptr<float>();
        for (int c = 0; c < channels_; c++)
            for (int j = 0; j < K_; j++)
                taps_.at<float>(j, c) = src[(size_t)c * K_ + j];
        if (blobs.size() > 1)
        {
            CV_CheckTypeEQ(blobs[1].type(), CV_32F, "LLMShortConv: the bias must be float32");
            CV_CheckEQ((int)blobs[1].total(), channels_, "LLMShortConv: the bias must hold one value per channel");
            bias_ = blobs[1].reshape(1, 1);
        }
        silu_ = params.get<bool>("silu", false);
        // Channel blocks, each within one input: the parallel jobs of a sequence.
        for (size_t i = 0; i < inputChannels_.size(); i++)
            for (int c = 0; c < inputChannels_[i]; c += kBlock)
                blocks_.push_back(Block{(int)i, c, std::min(inputChannels_[i], c + kBlock)});
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    size_t stateFloats() const CV_OVERRIDE { return (size_t)(K_ - 1) * channels_; }

    void attachState(const Ptr<llm::LLMNetState>& state, int index) CV_OVERRIDE
    {
        state_ = state;
        index_ = index;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), inputChannels_.size(), "LLMShortConv: one input per entry of input_channels");
        for (size_t i = 0; i < inputs.size(); i++)
        {
            CV_CheckEQ((int)inputs[i].size(), 2, "LLMShortConv: inputs must be 2-D (tokens x channels)");
            CV_CheckEQ(inputs[i][1], inputChannels_[i], "LLMShortConv: an input's width differs from input_channels");
            CV_CheckEQ(inputs[i][0], inputs[0][0], "LLMShortConv: inputs differ in token count");
        }
        outputs = inputs;
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        if (!state_)
            CV_Error(Error::StsError, "LLMShortConv: the layer needs a language model's Net state (installLLMState)");
        inputs_.resize(inputChannels_.size());
        outputs_.resize(inputChannels_.size());
        for (size_t i = 0; i < inputChannels_.size(); i++)
        {
            inputs_[i] = inputs_arr.getMat((int)i);
            outputs_[i] = outputs_arr.getMatRef((int)i);
            CV_CheckTypeEQ(inputs_[i].type(), CV_32F, "LLMShortConv: float32 inputs only");
        }
        const llm::BatchPlan& plan = state_->plan();
        CV_CheckEQ(plan.tokens, inputs_[0].rows, "LLMShortConv: the batch plan has another token count");
        CV_CheckEQ(plan.recurrentState.size(), (size_t)plan.sequences(), "LLMShortConv: the plan holds no recurrent states");
        const size_t offset = state_->cache().recurrentStates().layerOffset(index_);
        const int jobs = plan.sequences() * (int)blocks_.size();
        auto run = [&](const Range& r) {
            for (int job = r.start; job < r.end; job++)
                runBlock(plan, job / (int)blocks_.size(), blocks_[job % blocks_.size()], offset);
        };
        // Each token costs a few operations per channel: threads only pay for many tokens.
        if ((size_t)plan.tokens * channels_ * K_ < ((size_t)1 << 16) || jobs == 1)
            run(Range(0, jobs));
        else
            parallel_for_(Range(0, jobs), run);
    }

private:
    struct Block
    {
        int input, first, last;  // channels [first, last) of one input
    };
    static const int kBlock = 512;

    void runBlock(const llm::BatchPlan& plan, int b, const Block& block, size_t offset) const
    {
        const int global = inputOffset_[block.input] + block.first;
        const int n = block.last - block.first;
        float* state = plan.recurrentState[b] + offset + global;
        const float* taps = taps_.ptr<float>() + global;
        const float* bias = bias_.empty() ? nullptr : bias_.ptr<float>() + global;
        const Mat& x = inputs_[block.input];
        const Mat& y = outputs_[block.input];
        size_t snap = 0;
        while (snap < plan.snapshots.size() && plan.snapshots[snap].sequence < b)
            snap++;
        for (int i = plan.sequenceTokenStart[b]; i < plan.sequenceTokenStart[b + 1]; i++)
        {
            const int t = plan.sequenceTokens[i];
            llm::shortConvolutionToken(x.ptr<float>(t) + block.first, taps, channels_, K_, bias, state, channels_, n,
                                       silu_, (float*)y.ptr<float>(t) + block.first);
            for (; snap < plan.snapshots.size() && plan.snapshots[snap].sequence == b && plan.snapshots[snap].token == t;
                 snap++)
                for (int j = 0; j < K_ - 1; j++)
                    std::memcpy(plan.snapshots[snap].state + offset + (size_t)j * channels_ + global,
                                state + (size_t)j * channels_, n * sizeof(float));
        }
    }

    int K_ = 0, channels_ = 0, index_ = -1;
    std::vector<int> inputChannels_, inputOffset_;
    std::vector<Block> blocks_;
    Mat taps_, bias_;
    bool silu_ = false;
    Ptr<llm::LLMNetState> state_;
    std::vector<Mat> inputs_, outputs_;  // headers of the forward's Mats
};

Ptr<LLMShortConvLayer> LLMShortConvLayer::create(const LayerParams& params)
{
    return makePtr<LLMShortConvLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
