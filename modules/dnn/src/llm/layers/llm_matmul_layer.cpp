// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// y = x W^T (+ b) on weights kept in their ggml block format.
//
// What a weight type offers on this CPU comes from its row of the weight-type table
// (kernels/ggml_kernels.hpp). Up to `gemv_max_rows` tokens (decoding, also of a batch of
// sequences), each thread takes a range of output rows and dots each weight row with every
// token. With an integer dot for the type, the activations are quantized to 8 bits once and
// each weight block is dotted with them in integers, as llama.cpp does; types with an
// interleaved kernel are first repacked (at load) into groups of 8 interleaved rows
// (kernels/interleaved_weights.hpp), which that kernel takes for any token count, and so do
// types with a multi-row tile. Otherwise the weight row is decoded to floats once for all
// tokens. Either way each token's result is computed on its own, the same whatever the other
// rows are: a sequence gets the same logits alone or in a batch. Beyond (prefill), tiles of
// weight rows are multiplied with all tokens by the type's fused float GEMM (F16, BF16: rows
// converted in registers), or decoded to float once (F32 rows are used in place) for Eigen's
// GEMM (kernels/float_gemm.hpp).
//
// One layer may hold several weights of the same input (a block's q, k and v, or its gate and
// up projections), one output each: they share one quantization of the input and one parallel
// section, whose stripes run over all their rows. A parallel section costs its threads a wake-up
// and a wait at its end, about 20 us on 2 threads (doc/performance.md, issue 18).
//
// LoRA adapters (low_rank_terms.hpp) add their low-rank terms to the rows of the sequences that
// run with them, in the same stripes, after each stripe's own output rows.

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "low_rank_terms.hpp"
#include "weight_projection.hpp"
#include "../net/llm_state_layers.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

class LLMMatMulLayerImpl CV_FINAL : public LLMMatMulLayer, public llm::LoRATarget
{
public:
    explicit LLMMatMulLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        in_ = params.get<int>("in_features");
        gemvMaxRows_ = params.get<int>("gemv_max_rows", 32);
        CV_CheckGT(in_, 0, "LLMMatMul: in_features must be positive");
        const DictValue types = params.get("ggml_type"), outs = params.get("out_features");
        const int n = outs.size();
        CV_Check(n, n >= 1 && types.size() == n, "LLMMatMul: ggml_type and out_features need one value per weight");
        CV_Check(blobs.size(), blobs.size() == (size_t)n || blobs.size() == (size_t)2 * n,
                 "LLMMatMul: expects the weights, then optionally one bias per weight");
        const bool integerDotAllowed = params.get<bool>("integer_dot", true);
        for (int i = 0; i < n; i++)
        {
            CV_CheckGT(outs.get<int>(i), 0, "LLMMatMul: out_features must be positive");
            CV_CheckEQ(blobs[i].rows, outs.get<int>(i), "LLMMatMul: weight rows != out_features");
            const Mat bias = blobs.size() == (size_t)2 * n ? blobs[n + i] : Mat();
            parts_.emplace_back((llm::GGMLType)types.get<int>(i), blobs[i], bias, in_, integerDotAllowed);
        }
        if (params.has("weight_tensors"))
        {
            const DictValue tensors = params.get("weight_tensors"), rows = params.get("weight_tensor_rows");
            CV_Check(tensors.size(), tensors.size() == n && rows.size() == n,
                     "LLMMatMul: weight_tensors and weight_tensor_rows need one value per weight");
            for (int i = 0; i < n; i++)
            {
                tensors_.push_back(tensors.get<String>(i));
                tensorRows_.push_back(rows.get<int>(i));
                CV_CheckGE(tensorRows_.back(), 0, "LLMMatMul: weight_tensor_rows must not be negative");
            }
        }
        // The input is rounded to 8 bits as llama.cpp rounds it for each weight type (Q8_K for
        // the K-quants, Q8_0 for the others): its choice of token can hang on where the rounding
        // falls. Weights of both kinds in one layer (not in llama.cpp's mixes) get one
        // quantization each, so that each weight's result is the one it has alone.
        // `llama_activations` false (ONNX MatMulNBits) keeps ONNX Runtime's float scales.
        const bool llamaActivations = params.get<bool>("llama_activations", true);
        for (const llm::WeightProjection& p : parts_)
        {
            const llm::ActivationQuantization kind =
                llamaActivations ? p.llamaActivations() : llm::ACTIVATIONS_Q8_FLOAT_SCALES;
            int k = 0;
            while (k < (int)activations_.size() && activations_[k] != kind)
                k++;
            if (k == (int)activations_.size() && p.integerDot())
                activations_.push_back(kind);
            activationOf_.push_back(p.integerDot() ? k : 0);  // (read on the integer path only)
        }
        CV_Check((int)activations_.size(), activations_.size() <= 2,
                 "LLMMatMul: at most two activation roundings per layer (Q8_K and Q8_0)");
    }

    bool supportBackend(int backendId) CV_OVERRIDE
    {
        return backendId == DNN_BACKEND_OPENCV;
    }

    bool getMemoryShapes(const std::vector<MatShape>& inputs, const int,
                         std::vector<MatShape>& outputs, std::vector<MatShape>&) const CV_OVERRIDE
    {
        CV_CheckEQ(inputs.size(), (size_t)1, "LLMMatMul: expects one input");
        const MatShape& x = inputs[0];
        CV_CheckGE((int)x.size(), 1, "LLMMatMul: input must have at least one dimension");
        CV_CheckEQ(x.back(), in_, "LLMMatMul: the input's last dimension != in_features");
        const int rows = (int)(total(x) / in_);
        CV_CheckGT(rows, 0, "LLMMatMul: empty input");
        outputs.clear();
        for (const llm::WeightProjection& p : parts_)
            outputs.push_back(MatShape{rows, p.out()});
        return false;
    }

    void forward(InputArrayOfArrays inputs_arr, OutputArrayOfArrays outputs_arr, OutputArrayOfArrays) CV_OVERRIDE
    {
        CV_TRACE_FUNCTION();
        CV_TRACE_ARG_VALUE(name, "name", name.c_str());
        const Mat x = inputs_arr.getMat(0);
        CV_CheckTypeEQ(x.type(), CV_32F, "LLMMatMul: float32 input only");
        Run run;
        run.self = this;
        run.rows = (int)(x.total() / in_);
        run.x = x.ptr<float>();
        run.outputs = &outputs_arr;
        if (state_ && !lowRank_.empty() && lowRank_.prepare(*state_, run.x, run.rows, in_))
            run.lowRank = &lowRank_;
        // Work is split into stripes of output rows (or tiles), each with its own scratch kept
        // by the layer: several stripes per thread balance the threads, and nothing is allocated
        // per call once the scratch has grown. The lambdas capture one reference, small enough
        // for std::function not to allocate either.
        const int threads = std::max(1, getNumThreads());
        // The weights on the integer path (most often all of them) share one quantization of x
        // and one parallel section, whose stripes run over all their units.
        bool tiles = false;
        for (const llm::WeightProjection& p : parts_)
            if (p.integerPathFor(run.rows, gemvMaxRows_))
            {
                run.integerUnits += p.integerUnits();
                tiles = tiles || p.usesTiles();
            }
        if (run.integerUnits > 0)
        {
            // The calling thread's scratch, shared by all matmul layers (they run one after
            // another): as large as the largest input, not one copy per layer. Resizing within
            // its capacity allocates nothing, so a steady step allocates nothing.
            static thread_local llm::QuantizedActivations act[2];
            // The tile kernels read the activations regrouped by block: once here for all stripes.
            const bool regroup = tiles && run.rows > 1;
            for (size_t k = 0; k < activations_.size(); k++)
            {
                act[k].quantize(run.x, 0, run.rows, in_, activations_[k]);
                if (regroup)
                    act[k].regroup(0, run.rows, in_);
                run.act[k] = act[k].view(run.rows, regroup);
            }
            // Decoding (one pass of up to 16 tokens over the weights): 4 stripes per thread, as
            // each stripe starts its weight streams with misses no prefetch covers (2 threads,
            // Q4_K_M, batch of 8: +2.5%; one sequence +2%). Prompts (a pass per 16 tokens): 16,
            // so that a stripe's weights stay in the L2 cache from pass to pass (Q4_0 pp512 with
            // 4: -5%).
            const int stripesPerThread = run.rows > 16 ? 16 : 4;
            run.stripes = std::min(run.integerUnits, threads * stripesPerThread);
            parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.integerGemv(r); }, run.stripes);
        }
        for (run.part = 0; run.part < (int)parts_.size(); run.part++)
        {
            const llm::WeightProjection& p = parts_[run.part];
            if (p.integerPathFor(run.rows, gemvMaxRows_))
                continue;
            if (run.rows <= gemvMaxRows_)
            {
                run.stripes = std::min(p.out(), threads * 16);
                const size_t perStripe = p.type() == llm::GGML_F32 ? 0 : (size_t)in_;
                if (scratch_.size() < run.stripes * perStripe)
                    scratch_.resize(run.stripes * perStripe);
                run.scratch = scratch_.data();
                parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.floatGemv(r); }, run.stripes);
            }
            else
            {
                // Prefill: a GEMM of all tokens against each tile of weight rows (one thread per
                // tile): the type's fused one, or Eigen's over the tile decoded to float once.
                run.tileRows = p.gemmTileRows();
                run.tiles = (p.out() + run.tileRows - 1) / run.tileRows;
                run.stripes = std::min(run.tiles, threads * 4);
                if (p.gemmDecodes() && scratch_.size() < (size_t)run.stripes * run.tileRows * in_)
                    scratch_.resize((size_t)run.stripes * run.tileRows * in_);
                run.scratch = scratch_.data();
                parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.gemm(r); }, run.stripes);
            }
        }
    }

private:
    // One forward's arguments and the three ways to compute it, each over a range of stripes.
    struct Run
    {
        const LLMMatMulLayerImpl* self;
        int rows;
        const float* x;
        const _OutputArray* outputs;  // one Mat per projection
        int integerUnits = 0;   // all units of the projections on the integer path
        int part = 0;           // the float paths: the projection they compute
        int stripes = 1, tileRows = 0, tiles = 0;
        float* scratch = nullptr;
        llm::ActivationRows act[2];  // the integer path's activations, one per format (activations_)
        const llm::LowRankTerms* lowRank = nullptr;  // this forward's LoRA terms, if any

        int stripeBegin(int s, int n) const { return (int)((int64)n * s / stripes); }

        // Stripe s covers units [s n / stripes, (s + 1) n / stripes) of the integer-path
        // projections' units, counted in the projections' order.
        void integerGemv(const Range& r) const
        {
            for (int s = r.start; s < r.end; s++)
            {
                const int begin = stripeBegin(s, integerUnits), end = stripeBegin(s + 1, integerUnits);
                int first = 0;  // the projection's first unit
                for (size_t i = 0; i < self->parts_.size() && first < end; i++)
                {
                    const llm::WeightProjection& p = self->parts_[i];
                    if (!p.integerPathFor(rows, self->gemvMaxRows_))
                        continue;
                    const int units = p.integerUnits();
                    if (begin < first + units)
                    {
                        float* y = outputs->getMatRef((int)i).ptr<float>();
                        const int u0 = std::max(begin - first, 0), u1 = std::min(end - first, units);
                        p.computeIntegerUnits(act[self->activationOf_[i]], y, u0, u1);
                        if (lowRank)
                        {
                            const Range r = p.unitRows(u0, u1);
                            lowRank->addTo((int)i, y, p.out(), r.start, r.end);
                        }
                    }
                    first += units;
                }
            }
        }

        void floatGemv(const Range& r) const
        {
            const llm::WeightProjection& p = self->parts_[part];
            float* y = outputs->getMatRef(part).ptr<float>();
            for (int s = r.start; s < r.end; s++)
            {
                const int begin = stripeBegin(s, p.out()), end = stripeBegin(s + 1, p.out());
                p.computeFloatRows(x, rows, y, begin, end, scratch + (size_t)s * self->in_);
                if (lowRank)
                    lowRank->addTo(part, y, p.out(), begin, end);
            }
        }

        void gemm(const Range& r) const
        {
            const llm::WeightProjection& p = self->parts_[part];
            float* y = outputs->getMatRef(part).ptr<float>();
            for (int s = r.start; s < r.end; s++)
                for (int k = stripeBegin(s, tiles); k < stripeBegin(s + 1, tiles); k++)
                {
                    const int begin = k * tileRows, end = std::min(p.out(), (k + 1) * tileRows);
                    p.gemmTile(x, rows, y, begin, end, scratch + (size_t)s * tileRows * self->in_);
                    if (lowRank)
                        lowRank->addTo(part, y, p.out(), begin, end);
                }
        }
    };

public:
    // llm::LoRATarget
    void attachState(const Ptr<llm::LLMNetState>& state) CV_OVERRIDE { state_ = state; }
    int loraWeightCount() const CV_OVERRIDE { return (int)parts_.size(); }
    std::string loraTensor(int w) const CV_OVERRIDE { return tensors_.empty() ? std::string() : tensors_[w]; }
    int loraTensorRow(int w) const CV_OVERRIDE { return tensors_.empty() ? 0 : tensorRows_[w]; }
    int loraRows(int w) const CV_OVERRIDE { return parts_[w].out(); }
    int loraInputs() const CV_OVERRIDE { return in_; }
    void addLowRank(int id, int w, const llm::LowRankWeight* pair) CV_OVERRIDE
    {
        CV_Assert(0 <= w && w < (int)parts_.size() && pair->in == in_ && pair->out == parts_[w].out());
        lowRank_.add(id, w, pair);
    }
    void removeLowRank(int id) CV_OVERRIDE { lowRank_.remove(id); }

private:
    int in_;
    std::vector<std::string> tensors_;   // per weight: the GGUF tensor it holds rows of (LoRA adapters name it)
    std::vector<int> tensorRows_;        // and its first row there
    Ptr<llm::LLMNetState> state_;        // set once an adapter is attached
    llm::LowRankTerms lowRank_;
    std::vector<llm::ActivationQuantization> activations_;  // the integer path's input formats (1 or 2)
    std::vector<int> activationOf_;                         // per weight: its format's index
    int gemvMaxRows_;   // beyond, a GEMM over decoded weight tiles
    std::vector<llm::WeightProjection> parts_;
    std::vector<float> scratch_;  // per stripe: a decoded weight row (GEMV) or tile (GEMM)
};

Ptr<LLMMatMulLayer> LLMMatMulLayer::create(const LayerParams& params)
{
    return makePtr<LLMMatMulLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
