// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// A mixture-of-experts feed-forward block as llama.cpp's build_moe_ffn computes it
// (llama-graph.cpp), as one layer:
//   routing: per token, the router's logits -> gating (softmax over all experts, softmax over the
//     chosen ones, or sigmoid) -> the experts_used largest -> their weights, optionally
//     normalised to sum 1 and scaled;
//   experts: down_e(act(gate_e(x), up_e(x))) for each chosen expert e;
//   output: sum over the chosen slots, in slot order, of weight * expert output.
// The tokens of a forward (a prompt, a batch of sequences) are grouped by expert first, so each
// active expert's weights are read once per forward for all tokens routed to it, and all active
// experts' gate and up projections run in one parallel section, their down projections in a
// second (llama.cpp's mul_mat_id). Each token's numbers depend on that token only: the weight
// kernels compute each activation row on its own (weight_projection.hpp) and the sums run in slot
// order, so a sequence gets the same results alone or in a batch. Buffers grow and are kept, so a
// steady step allocates nothing.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "weight_projection.hpp"
#include "../kernels/elementwise_kernels.hpp"

#include <cmath>

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {

enum class Gating
{
    Softmax,        // softmax over all experts, then the top k (Mixtral, Qwen3-MoE)
    SoftmaxWeight,  // top k of the logits, then softmax over those k (gpt-oss)
    Sigmoid         // sigmoid of each logit
};

enum class Activation
{
    SwiGLU,    // silu(gate) * up
    SwiGLUOAI  // gpt-oss: min(gate, limit) * sigmoid(alpha min(gate, limit)) * (clamp(up, -limit, limit) + 1)
};

Gating parseGating(const std::string& s)
{
    if (s == "softmax")
        return Gating::Softmax;
    if (s == "softmax_weight")
        return Gating::SoftmaxWeight;
    if (s == "sigmoid")
        return Gating::Sigmoid;
    CV_Error(Error::StsBadArg, "LLMExperts: unknown gating '" + s + "' (softmax, softmax_weight, sigmoid)");
}

Activation parseActivation(const std::string& s)
{
    if (s == "swiglu")
        return Activation::SwiGLU;
    if (s == "swiglu_oai")
        return Activation::SwiGLUOAI;
    CV_Error(Error::StsBadArg, "LLMExperts: unknown activation '" + s + "' (swiglu, swiglu_oai)");
}

// The projections of one expert.
struct Expert
{
    llm::WeightProjection gate, up, down;
};

// One projection of one expert over the rows routed to it, as a range of units of a parallel section.
struct ProjectionJob
{
    const llm::WeightProjection* w;
    llm::QuantizedActivations* act;  // the integer path's activations (rows of all experts)
    int firstRow, rows;  // the expert's rows in the grouped buffers
    int units;
    float* y;            // output (rows x out)
    llm::ActivationRows rowsView;  // act's rows of this expert (set by runJobs)
};

constexpr int kFloatRowsPerUnit = 16;  // output rows per work unit of the float path

} // namespace

class LLMExpertsLayerImpl CV_FINAL : public LLMExpertsLayer
{
public:
    explicit LLMExpertsLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        in_ = params.get<int>("in_features");
        ff_ = params.get<int>("expert_ff");
        nExpert_ = params.get<int>("num_experts");
        nUsed_ = params.get<int>("experts_used");
        gating_ = parseGating(params.get<String>("gating", "softmax"));
        normalize_ = params.get<bool>("normalize_weights", false);
        weightsScale_ = params.get<float>("weights_scale", 0.f);
        activation_ = parseActivation(params.get<String>("activation", "swiglu"));
        alpha_ = params.get<float>("alpha", 1.702f);
        limit_ = params.get<float>("limit", 7.f);
        CV_CheckGT(in_, 0, "LLMExperts: in_features must be positive");
        CV_CheckGT(ff_, 0, "LLMExperts: expert_ff must be positive");
        CV_Check(nExpert_, nExpert_ >= 1 && nExpert_ <= 4096, "LLMExperts: num_experts out of range");
        CV_Check(nUsed_, nUsed_ >= 1 && nUsed_ <= nExpert_, "LLMExperts: experts_used must be in [1, num_experts]");
        const DictValue types = params.get("ggml_type");
        CV_CheckEQ(types.size(), 3, "LLMExperts: ggml_type needs the gate, up and down types");
        CV_Check(blobs.size(), blobs.size() == 3 || blobs.size() == 6,
                 "LLMExperts: expects the gate, up and down weights, then optionally their biases");
        const bool withBias = blobs.size() == 6;
        const int outs[3] = {ff_, ff_, in_}, ins[3] = {in_, in_, ff_};
        for (int j = 0; j < 3; j++)
        {
            CV_CheckEQ(blobs[j].rows, nExpert_ * outs[j], "LLMExperts: weight rows != num_experts x output size");
            if (withBias)
            {
                CV_CheckTypeEQ(blobs[3 + j].type(), CV_32F, "LLMExperts: biases must be float32");
                CV_CheckEQ(blobs[3 + j].total(), (size_t)nExpert_ * outs[j], "LLMExperts: bias size != num_experts x output size");
            }
        }
        const bool integerDotAllowed = params.get<bool>("integer_dot", true);
        experts_.reserve(nExpert_);
        for (int e = 0; e < nExpert_; e++)
        {
            auto projection = [&](int j) {
                const Mat rows = blobs[j].rowRange(e * outs[j], (e + 1) * outs[j]);
                const Mat bias = withBias ? blobs[3 + j].reshape(1, 1).colRange(e * outs[j], (e + 1) * outs[j]).clone() : Mat();
                return llm::WeightProjection((llm::GGMLType)types.get<int>(j), rows, bias, ins[j], integerDotAllowed);
            };
            experts_.push_back(Expert{projection(0), projection(1), projection(2)});
        }
        // Buffers that depend on the expert count only; those of the token count grow in forward().
        count_.resize(nExpert_);
        start_.resize(nExpert_);
        cursor_.resize(nExpert_);
        active_.reserve(nExpert_);
        jobs_.reserve(2 * nExpert_);
        probs_.resize(nExpert_);
        order_.resize(nExpert_);
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)2, "LLMExperts: expects the hidden states and the router's logits");
        CV_CheckEQ(inputs[0].back(), in_, "LLMExperts: the input's last dimension != in_features");
        CV_CheckEQ(inputs[1].back(), nExpert_, "LLMExperts: the router's logits need one value per expert");
        const int rows = (int)(total(inputs[0]) / in_);
        CV_CheckEQ((int)(total(inputs[1]) / nExpert_), rows, "LLMExperts: one row of router logits per token");
        outputs.assign(1, MatShape{rows, in_});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        const Mat x = inputs_arr.getMat(0), logits = inputs_arr.getMat(1);
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMExperts: float32 input only");
        CV_CheckTypeEQ(logits.type(), CV_32F, "LLMExperts: float32 router logits only");
        Mat y = outputs_arr.getMatRef(0);
        const int tokens = (int)(x.total() / in_);
        const int slots = tokens * nUsed_;
        grow(slots);
        for (int t = 0; t < tokens; t++)
            route(logits.ptr<float>() + (size_t)t * nExpert_, &selected_[(size_t)t * nUsed_], &weights_[(size_t)t * nUsed_]);
        groupByExpert(tokens);
        gatherInputs(x.ptr<float>(), tokens);

        // Gate and up of every active expert in one parallel section.
        jobs_.clear();
        const Expert& first = experts_[0];
        llm::QuantizedActivations* upActivations =
            first.gate.integerDot() && first.up.llamaActivations() == first.gate.llamaActivations() ? &xq_ : &xqUp_;
        for (int e : active_)
        {
            addJob(&experts_[e].gate, &xq_, e, gate_.data() + (size_t)start_[e] * ff_);
            addJob(&experts_[e].up, upActivations, e, up_.data() + (size_t)start_[e] * ff_);
        }
        runJobs(xGrouped_.data(), in_);

        activate();

        jobs_.clear();
        for (int e : active_)
            addJob(&experts_[e].down, &hq_, e, down_.data() + (size_t)start_[e] * in_);
        runJobs(hidden_.data(), ff_);

        combine(tokens, y.ptr<float>());
    }

private:
    void grow(int slots)
    {
        const size_t n = (size_t)slots;
        if (selected_.size() < n)
        {
            selected_.resize(n);
            weights_.resize(n);
            rowOf_.resize(n);
        }
        if (gate_.size() < n * ff_)
        {
            gate_.resize(n * ff_);
            up_.resize(n * ff_);
            hidden_.resize(n * ff_);
        }
        if (down_.size() < n * in_)
            down_.resize(n * in_);
        if (anyFloatPath() && xGrouped_.size() < n * in_)
            xGrouped_.resize(n * in_);
        xq_.reserveRows(slots, in_);
        xqUp_.reserveRows(slots, in_);
        hq_.reserveRows(slots, ff_);
    }

    bool anyFloatPath() const
    {
        const Expert& e = experts_[0];
        return !e.gate.integerDot() || !e.up.integerDot() || !e.down.integerDot();
    }

    /* One token's experts and their weights, as build_moe_ffn: probabilities by the gating, the
       nUsed_ largest chosen (equal values: the lower expert id first), then the weights. ggml's
       soft_max sums in double and scales by the float reciprocal; sum_rows sums in double. */
    void route(const float* logit, int* chosen, float* w)
    {
        float* p = probs_.data();
        if (gating_ == Gating::Softmax)
            softmax(logit, nExpert_, p);
        else if (gating_ == Gating::Sigmoid)
            for (int e = 0; e < nExpert_; e++)
                p[e] = 1.f / (1.f + std::exp(-logit[e]));
        else
            std::copy(logit, logit + nExpert_, p);
        int* order = order_.data();
        for (int e = 0; e < nExpert_; e++)
            order[e] = e;
        std::partial_sort(order, order + nUsed_, order + nExpert_,
                          [p](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        for (int s = 0; s < nUsed_; s++)
        {
            chosen[s] = order[s];
            w[s] = p[order[s]];
        }
        if (gating_ == Gating::SoftmaxWeight)
            softmax(w, nUsed_, w);
        if (normalize_)
        {
            double sum = 0;
            for (int s = 0; s < nUsed_; s++)
                sum += w[s];
            const float clamped = std::max((float)sum, 6.103515625e-5f);  // llama.cpp: F16's smallest normal
            for (int s = 0; s < nUsed_; s++)
                w[s] = w[s] / clamped;
        }
        if (weightsScale_ != 0.f)
            for (int s = 0; s < nUsed_; s++)
                w[s] *= weightsScale_;
    }

    static void softmax(const float* x, int n, float* y)
    {
        float maxValue = -INFINITY;
        for (int i = 0; i < n; i++)
            maxValue = std::max(maxValue, x[i]);
        double sum = 0;
        for (int i = 0; i < n; i++)
        {
            y[i] = std::exp(x[i] - maxValue);
            sum += y[i];
        }
        const float inv = (float)(1.0 / sum);
        for (int i = 0; i < n; i++)
            y[i] *= inv;
    }

    // Rows of the grouped buffers: expert by expert (active_ in id order), each expert's tokens in
    // token order; rowOf_[t * nUsed_ + s] is slot s of token t.
    void groupByExpert(int tokens)
    {
        std::fill(count_.begin(), count_.end(), 0);
        for (int i = 0; i < tokens * nUsed_; i++)
            count_[selected_[i]]++;
        active_.clear();
        int row = 0;
        for (int e = 0; e < nExpert_; e++)
        {
            start_[e] = cursor_[e] = row;
            row += count_[e];
            if (count_[e] > 0)
                active_.push_back(e);
        }
        for (int i = 0; i < tokens * nUsed_; i++)
            rowOf_[i] = cursor_[selected_[i]]++;
    }

    // Each token's input, quantized once (as llama.cpp rounds activations for the gate's type,
    // and the up's where that differs), copied to the rows of its experts; and as floats where a
    // projection takes the float path.
    void gatherInputs(const float* x, int tokens)
    {
        const Expert& e = experts_[0];
        if (e.gate.integerDot())
            gatherQuantized(x, tokens, e.gate.llamaActivations(), xq_);
        if (e.up.integerDot() && !(e.gate.integerDot() && e.up.llamaActivations() == e.gate.llamaActivations()))
            gatherQuantized(x, tokens, e.up.llamaActivations(), xqUp_);
        if (anyFloatPath())
            for (int i = 0; i < tokens * nUsed_; i++)
                std::copy_n(x + (size_t)(i / nUsed_) * in_, in_, &xGrouped_[(size_t)rowOf_[i] * in_]);
    }

    void gatherQuantized(const float* x, int tokens, llm::ActivationQuantization kind, llm::QuantizedActivations& q)
    {
        const int blocks = in_ / 32, slots = tokens * nUsed_;
        q.quantize(x, slots, tokens, in_, kind);  // past the grouped rows: scratch for the copies
        for (int i = 0; i < slots; i++)
        {
            const int t = i / nUsed_, r = rowOf_[i];
            std::copy_n(&q.q[(size_t)(slots + t) * in_], in_, &q.q[(size_t)r * in_]);
            std::copy_n(&q.d[(size_t)(slots + t) * blocks], blocks, &q.d[(size_t)r * blocks]);
            std::copy_n(&q.sums[(size_t)(slots + t) * blocks], blocks, &q.sums[(size_t)r * blocks]);
        }
    }

    void addJob(const llm::WeightProjection* w, llm::QuantizedActivations* act, int e, float* y)
    {
        const int units = w->integerDot() ? w->integerUnits() : (w->out() + kFloatRowsPerUnit - 1) / kFloatRowsPerUnit;
        jobs_.push_back(ProjectionJob{w, act, start_[e], count_[e], units, y});
    }

    // The jobs' units in one parallel section; activations: each job's quantized rows (regrouped
    // per expert for the tile kernels) or the floats (n inputs per row).
    void runJobs(const float* xFloat, int n)
    {
        int totalUnits = 0, maxRows = 0;
        bool regroup = false;
        for (const ProjectionJob& j : jobs_)
        {
            totalUnits += j.units;
            maxRows = std::max(maxRows, j.rows);
            regroup = regroup || j.w->usesTiles();
        }
        if (totalUnits == 0)
            return;
        for (ProjectionJob& j : jobs_)
        {
            if (regroup && j.w->integerDot())
                j.act->regroup(j.firstRow, j.rows, n);
            j.rowsView = j.w->integerDot() ? j.act->view(0, regroup).subset(j.firstRow, j.rows, n) : llm::ActivationRows();
        }
        const int threads = std::max(1, getNumThreads());
        const int stripes = std::min(totalUnits, threads * (maxRows > 16 ? 16 : 4));
        const size_t scratchPerStripe = (size_t)std::max(in_, ff_);
        if (anyFloatPath() && stripeScratch_.size() < stripes * scratchPerStripe)
            stripeScratch_.resize(stripes * scratchPerStripe);
        Run run{this, xFloat, n, totalUnits, stripes, stripeScratch_.data(), scratchPerStripe};
        parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.stripe(r); }, run.stripes);
    }

    struct Run
    {
        const LLMExpertsLayerImpl* self;
        const float* xFloat;
        int n;  // inputs per activation row
        int totalUnits;
        int stripes;
        float* scratch;  // per stripe: a decoded weight row of the float path
        size_t scratchPerStripe;

        int stripeBegin(int s) const { return (int)((int64)totalUnits * s / stripes); }

        void stripe(const Range& r) const
        {
            for (int s = r.start; s < r.end; s++)
            {
                const int begin = stripeBegin(s), end = stripeBegin(s + 1);
                int first = 0;
                for (const ProjectionJob& j : self->jobs_)
                {
                    if (first >= end)
                        break;
                    if (begin < first + j.units)
                        compute(j, std::max(begin - first, 0), std::min(end - first, j.units), s);
                    first += j.units;
                }
            }
        }

        void compute(const ProjectionJob& j, int begin, int end, int s) const
        {
            if (j.w->integerDot())
                j.w->computeIntegerUnits(j.rowsView, j.y, begin, end);
            else
                j.w->computeFloatRows(xFloat + (size_t)j.firstRow * n, j.rows, j.y, begin * kFloatRowsPerUnit,
                                      std::min(j.w->out(), end * kFloatRowsPerUnit),
                                      scratch + s * scratchPerStripe);
        }
    };

    // hidden = act(gate, up) for every grouped row, then quantized for the down projections.
    void activate()
    {
        for (int e : active_)
        {
            const size_t first = (size_t)start_[e] * ff_, n = (size_t)count_[e] * ff_;
            float* g = gate_.data() + first;
            float* u = up_.data() + first;
            float* h = hidden_.data() + first;
            if (activation_ == Activation::SwiGLU)
                llm::siluRange(g, u, h, 0, (int)n);
            else
                for (size_t i = 0; i < n; i++)
                {
                    // ggml_swiglu_oai: x = min(gate, limit), y = clamp(up, -limit, limit),
                    // out = x / (1 + exp(-alpha x)) * (y + 1)
                    const float xg = std::min(g[i], limit_);
                    const float yu = std::min(std::max(u[i], -limit_), limit_);
                    h[i] = xg / (1.f + std::exp(alpha_ * (-xg))) * (yu + 1.f);
                }
        }
        if (experts_[0].down.integerDot())
            for (int e : active_)
                hq_.quantize(hidden_.data() + (size_t)start_[e] * ff_, start_[e], count_[e], ff_, experts_[0].down.llamaActivations());
    }

    // y[t] = sum over slots s, in order, of weight(t, s) * down[row of (t, s)] (build_moe_ffn's
    // ggml_mul by the weights, then ggml_add of the slot views from slot 0 on).
    void combine(int tokens, float* y) const
    {
        for (int t = 0; t < tokens; t++)
        {
            float* yt = y + (size_t)t * in_;
            for (int s = 0; s < nUsed_; s++)
            {
                const int i = t * nUsed_ + s;
                const float w = weights_[i];
                const float* d = down_.data() + (size_t)rowOf_[i] * in_;
                if (s == 0)
                    for (int k = 0; k < in_; k++)
                        yt[k] = d[k] * w;
                else
                    for (int k = 0; k < in_; k++)
                        yt[k] += d[k] * w;
            }
        }
    }

    int in_, ff_, nExpert_, nUsed_;
    Gating gating_;
    bool normalize_;
    float weightsScale_;
    Activation activation_;
    float alpha_, limit_;
    std::vector<Expert> experts_;

    // Per forward (grown, never shrunk): routing, grouping and the grouped rows.
    std::vector<int> selected_, rowOf_;
    std::vector<float> weights_;
    std::vector<int> count_, start_, cursor_, active_, order_;
    std::vector<float> probs_;
    std::vector<ProjectionJob> jobs_;
    llm::QuantizedActivations xq_, xqUp_, hq_;  // inputs for the gate (and the up, where rounded otherwise), hidden
    std::vector<float> xGrouped_, gate_, up_, hidden_, down_;
    std::vector<float> stripeScratch_;
};

Ptr<LLMExpertsLayer> LLMExpertsLayer::create(const LayerParams& params)
{
    return makePtr<LLMExpertsLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
