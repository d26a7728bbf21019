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
            CV_Check(blobs[j].rows, (int64)blobs[j].rows == (int64)nExpert_ * outs[j],
                     "LLMExperts: weight rows != num_experts x output size");
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
        const Expert& first = experts_[0];
        upSharesGateRounding_ = first.gate.integerDot() && first.up.integerDot() &&
                                first.up.llamaActivations() == first.gate.llamaActivations();
        anyFloatPath_ = !first.gate.integerDot() || !first.up.integerDot() || !first.down.integerDot();
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
        CV_Check(inputs[0].size(), !inputs[0].empty() && !inputs[1].empty(), "LLMExperts: inputs need at least one dimension");
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
        // A prompt in blocks of tokens: the grouped rows stay bounded (each token's numbers do not
        // depend on its block), in a scratch shared by all expert layers, which run one after
        // another: as large as one block of the largest layer, not one copy per layer.
        static thread_local Scratch scratch;
        const int blockTokens = std::max(1, kMaxRowsPerBlock / nUsed_);
        for (int t0 = 0; t0 < tokens; t0 += blockTokens)
        {
            const int n = std::min(blockTokens, tokens - t0);
            forwardBlock(scratch, x.ptr<float>() + (size_t)t0 * in_, logits.ptr<float>() + (size_t)t0 * nExpert_, n,
                         y.ptr<float>() + (size_t)t0 * in_);
        }
    }

private:
    // What one block of tokens needs, grown and kept (a steady step allocates nothing).
    struct Scratch
    {
        std::vector<int> selected, rowOf;  // per (token, slot): the expert, its row in the grouped buffers
        std::vector<float> weights;        // per (token, slot)
        llm::QuantizedActivations xq, xqUp, hq;  // inputs for the gate (and the up, where rounded otherwise), hidden
        std::vector<float> xGrouped, gate, up, hidden, down;  // grouped rows
        std::vector<float> stripes;        // per stripe: a decoded weight row of the float path
    };

    static constexpr int kMaxRowsPerBlock = 4096;  // (token, expert) rows of a block: 512 tokens of 8 experts
    static constexpr int kFloatRowsPerUnit = 16;   // output rows per work unit of the float path

    void forwardBlock(Scratch& s, const float* x, const float* logits, int tokens, float* y)
    {
        grow(s, tokens * nUsed_, tokens);
        for (int t = 0; t < tokens; t++)
            route(logits + (size_t)t * nExpert_, &s.selected[(size_t)t * nUsed_], &s.weights[(size_t)t * nUsed_]);
        groupByExpert(s, tokens);
        gatherInputs(s, x, tokens);

        // Gate and up of every active expert in one parallel section.
        jobs_.clear();
        for (int e : active_)
        {
            addJob(&experts_[e].gate, &s.xq, e, s.gate.data() + (size_t)start_[e] * ff_);
            addJob(&experts_[e].up, upSharesGateRounding_ ? &s.xq : &s.xqUp, e, s.up.data() + (size_t)start_[e] * ff_);
        }
        runJobs(s, s.xGrouped.data(), in_);

        activate(s);

        jobs_.clear();
        for (int e : active_)
            addJob(&experts_[e].down, &s.hq, e, s.down.data() + (size_t)start_[e] * in_);
        runJobs(s, s.hidden.data(), ff_);

        combine(s, tokens, y);
    }

    void grow(Scratch& s, int slots, int tokens)
    {
        const size_t n = (size_t)slots;
        if (s.selected.size() < n)
        {
            s.selected.resize(n);
            s.weights.resize(n);
            s.rowOf.resize(n);
        }
        for (std::vector<float>* v : {&s.gate, &s.up, &s.hidden})
            if (v->size() < n * ff_)
                v->resize(n * ff_);
        if (s.down.size() < n * in_)
            s.down.resize(n * in_);
        if (anyFloatPath_)
        {
            if (s.xGrouped.size() < n * in_)
                s.xGrouped.resize(n * in_);
            // runJobs takes up to 16 stripes per thread
            const size_t stripeFloats = (size_t)std::max(1, getNumThreads()) * 16 * std::max(in_, ff_);
            if (s.stripes.size() < stripeFloats)
                s.stripes.resize(stripeFloats);
        }
        // the rows past the grouped ones hold each token's input quantized once (gatherQuantized)
        if (experts_[0].gate.integerDot())
            s.xq.reserveRows(slots + tokens, in_);
        if (experts_[0].up.integerDot() && !upSharesGateRounding_)
            s.xqUp.reserveRows(slots + tokens, in_);
        if (experts_[0].down.integerDot())
            s.hq.reserveRows(slots, ff_);
    }

    /* One token's experts and their weights, as build_moe_ffn: probabilities by the gating, the
       nUsed_ largest chosen, then the weights. Equal values choose the lower expert id first, as
       llama.cpp's std::sort of the ids does for up to 16 experts (beyond, its order is
       unspecified); a NaN logit is never chosen. ggml's soft_max sums in double and scales by
       the float reciprocal; sum_rows sums in double. */
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
        for (int e = 0; e < nExpert_; e++)
            if (std::isnan(p[e]))
                p[e] = -INFINITY;  // the comparison below needs a strict weak order
        int* order = order_.data();
        for (int e = 0; e < nExpert_; e++)
            order[e] = e;
        std::partial_sort(order, order + nUsed_, order + nExpert_,
                          [p](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
        for (int k = 0; k < nUsed_; k++)
        {
            chosen[k] = order[k];
            w[k] = p[order[k]];
        }
        if (gating_ == Gating::SoftmaxWeight)
            softmax(w, nUsed_, w);
        if (normalize_)
        {
            double sum = 0;
            for (int k = 0; k < nUsed_; k++)
                sum += w[k];
            const float clamped = std::max((float)sum, 6.103515625e-5f);  // llama.cpp: F16's smallest normal
            for (int k = 0; k < nUsed_; k++)
                w[k] = w[k] / clamped;
        }
        if (weightsScale_ != 0.f)
            for (int k = 0; k < nUsed_; k++)
                w[k] *= weightsScale_;
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
    // token order; rowOf[t * nUsed_ + k] is slot k of token t.
    void groupByExpert(Scratch& s, int tokens)
    {
        std::fill(count_.begin(), count_.end(), 0);
        for (int i = 0; i < tokens * nUsed_; i++)
            count_[s.selected[i]]++;
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
            s.rowOf[i] = cursor_[s.selected[i]]++;
    }

    // Each token's input, quantized once (as llama.cpp rounds activations for the gate's type,
    // and the up's where that differs), copied to the rows of its experts; and as floats where a
    // projection takes the float path.
    void gatherInputs(Scratch& s, const float* x, int tokens)
    {
        const Expert& e = experts_[0];
        if (e.gate.integerDot())
            gatherQuantized(s, x, tokens, e.gate.llamaActivations(), s.xq);
        if (e.up.integerDot() && !upSharesGateRounding_)
            gatherQuantized(s, x, tokens, e.up.llamaActivations(), s.xqUp);
        if (anyFloatPath_)
            for (int i = 0; i < tokens * nUsed_; i++)
                std::copy_n(x + (size_t)(i / nUsed_) * in_, in_, &s.xGrouped[(size_t)s.rowOf[i] * in_]);
    }

    void gatherQuantized(const Scratch& s, const float* x, int tokens, llm::ActivationQuantization kind,
                         llm::QuantizedActivations& q) const
    {
        const int blocks = in_ / 32, slots = tokens * nUsed_;
        q.quantize(x, slots, tokens, in_, kind);  // past the grouped rows: the copies' source
        for (int i = 0; i < slots; i++)
        {
            const int t = i / nUsed_, r = s.rowOf[i];
            std::copy_n(&q.q[(size_t)(slots + t) * in_], in_, &q.q[(size_t)r * in_]);
            std::copy_n(&q.d[(size_t)(slots + t) * blocks], blocks, &q.d[(size_t)r * blocks]);
            std::copy_n(&q.sums[(size_t)(slots + t) * blocks], blocks, &q.sums[(size_t)r * blocks]);
        }
    }

    void addJob(const llm::WeightProjection* w, llm::QuantizedActivations* act, int e, float* y)
    {
        const int units = w->integerDot() ? w->integerUnits() : (w->out() + kFloatRowsPerUnit - 1) / kFloatRowsPerUnit;
        jobs_.push_back(ProjectionJob{w, act, start_[e], count_[e], units, y, llm::ActivationRows()});
    }

    // The jobs' units in one parallel section; activations: each job's quantized rows (regrouped
    // per expert for the tile kernels) or the floats (n inputs per row).
    void runJobs(Scratch& s, const float* xFloat, int n)
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
        const ProjectionJob* previous = nullptr;
        for (ProjectionJob& j : jobs_)
        {
            if (!j.w->integerDot())
                continue;
            // gate and up of an expert may share their activation rows: regrouped once
            if (regroup && !(previous && previous->act == j.act && previous->firstRow == j.firstRow))
                j.act->regroup(j.firstRow, j.rows, n);
            j.rowsView = j.act->view(0, regroup).subset(j.firstRow, j.rows, n);
            previous = &j;
        }
        const int threads = std::max(1, getNumThreads());
        const int stripes = std::min(totalUnits, threads * (maxRows > 16 ? 16 : 4));
        const size_t scratchPerStripe = (size_t)std::max(in_, ff_);
        if (anyFloatPath_ && s.stripes.size() < stripes * scratchPerStripe)
            s.stripes.resize(stripes * scratchPerStripe);  // the thread count grew since grow()
        Run run{this, xFloat, n, totalUnits, stripes, s.stripes.data(), scratchPerStripe};
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
                                      std::min(j.w->out(), end * kFloatRowsPerUnit), scratch + s * scratchPerStripe);
        }
    };

    // hidden = act(gate, up) for every grouped row, then quantized for the down projections.
    void activate(Scratch& s) const
    {
        for (int e : active_)
        {
            const size_t first = (size_t)start_[e] * ff_, n = (size_t)count_[e] * ff_;
            const float* g = s.gate.data() + first;
            const float* u = s.up.data() + first;
            float* h = s.hidden.data() + first;
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
        const llm::WeightProjection& down = experts_[0].down;
        if (down.integerDot())
            for (int e : active_)
                s.hq.quantize(s.hidden.data() + (size_t)start_[e] * ff_, start_[e], count_[e], ff_, down.llamaActivations());
    }

    // y[t] = sum over slots k, in order, of weight(t, k) * down[row of (t, k)] (build_moe_ffn's
    // ggml_mul by the weights, then ggml_add of the slot views from slot 0 on).
    void combine(const Scratch& s, int tokens, float* y) const
    {
        for (int t = 0; t < tokens; t++)
        {
            float* yt = y + (size_t)t * in_;
            for (int k = 0; k < nUsed_; k++)
            {
                const int i = t * nUsed_ + k;
                const float w = s.weights[i];
                const float* d = s.down.data() + (size_t)s.rowOf[i] * in_;
                if (k == 0)
                    for (int c = 0; c < in_; c++)
                        yt[c] = d[c] * w;
                else
                    for (int c = 0; c < in_; c++)
                        yt[c] += d[c] * w;
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
    bool upSharesGateRounding_ = false;  // the up projections read the gate's quantized inputs
    bool anyFloatPath_ = false;          // a projection takes the float path (F32 / F16 / BF16, or integer_dot off)

    // Per block of a forward, sized by the expert count: routing and grouping.
    std::vector<int> count_, start_, cursor_, active_, order_;
    std::vector<float> probs_;
    std::vector<ProjectionJob> jobs_;
};

Ptr<LLMExpertsLayer> LLMExpertsLayer::create(const LayerParams& params)
{
    return makePtr<LLMExpertsLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
