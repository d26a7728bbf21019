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

#include "../../precomp.hpp"
#include "llm_layers.hpp"
#include "../ggml/ggml_types.hpp"
#include "../kernels/ggml_kernels.hpp"
#include "../kernels/interleaved_weights.hpp"
#include "../common/mapped_file.hpp"
#include "../kernels/float_gemm.hpp"

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

namespace {
// The integer path's activations: quantized to 8 bits (q, d, sums: quantizeRowQ8) and, for the
// AMX tile kernels, q regrouped by block (activationsByBlockForTiles).
struct QuantizedActivations
{
    std::vector<signed char> q, qByBlock;
    std::vector<float> d;
    std::vector<int> sums;
};

// One weight of the layer and its output: rows in a ggml type, repacked for the integer kernels.
struct Projection
{
    llm::GGMLType type = llm::GGML_F32;
    const llm::WeightTypeTraits* traits = nullptr;  // the type's row of the weight-type table
    int out = 0;
    bool integerDot = false;  // 8-bit activations and integer dot products on the GEMV path
    bool roundTokens = false; // the fused float GEMM may round the tokens (GemmF32Fn)
    Mat weights;              // the raw rows (mapped from the file)
    Mat bias;                 // float32, or empty
    int groups = 0;           // groups of 8 rows in `interleaved` (kernels/interleaved_weights.hpp)
    Mat interleaved;

    // Work units of the integer path: the groups of 8 interleaved rows, in pairs where the type
    // has a two-group kernel (a stripe never splits a pair: a lone group takes the slower
    // one-group kernel), then the remaining rows one by one.
    int groupsPerUnit() const { return traits->dotQ8Interleaved16 ? 2 : 1; }
    int groupUnits() const { return (groups + groupsPerUnit() - 1) / groupsPerUnit(); }
    int integerUnits() const { return groupUnits() + (out - 8 * groups); }
};
} // namespace

class LLMMatMulLayerImpl CV_FINAL : public LLMMatMulLayer
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
        parts_.resize(n);
        const bool integerDotAllowed = params.get<bool>("integer_dot", true);
        for (int i = 0; i < n; i++)
        {
            Projection& p = parts_[i];
            p.type = (llm::GGMLType)types.get<int>(i);
            p.traits = &llm::weightTypeTraits(p.type);
            p.out = outs.get<int>(i);
            p.integerDot = integerDotAllowed && p.traits->integerDot();
            p.roundTokens = integerDotAllowed;
            p.weights = blobs[i];
            CV_CheckGT(p.out, 0, "LLMMatMul: out_features must be positive");
            CV_Check(p.type, p.traits->computable, "LLMMatMul: unsupported ggml type");
            CV_CheckEQ(p.weights.rows, p.out, "LLMMatMul: weight rows != out_features");
            CV_CheckEQ((size_t)p.weights.cols, llm::ggmlRowBytes(p.type, in_), "LLMMatMul: weight row size mismatch");
            CV_Assert(p.weights.isContinuous() || p.weights.rows == 1 || p.weights.step[0] == (size_t)p.weights.cols);
            if (blobs.size() == (size_t)2 * n)
            {
                p.bias = blobs[n + i];
                CV_CheckTypeEQ(p.bias.type(), CV_32F, "LLMMatMul: bias must be float32");
                CV_CheckEQ(p.bias.total(), (size_t)p.out, "LLMMatMul: bias length != out_features");
            }
            // The integer kernel runs fastest on groups of 8 rows interleaved (repacked once,
            // here); the last out_features % 8 rows keep the row kernels.
            if (p.integerDot && p.traits->interleaved)
            {
                p.groups = p.out / 8;
                if (p.groups > 0)
                {
                    p.interleaved = llm::interleaveRows8(*p.traits->interleaved, p.weights.ptr(), p.weights.step[0],
                                                         p.groups, in_);
                    // Only the last rows are read from the file's pages from now on.
                    llm::releaseMappedPages(p.weights, p.weights.ptr(), (size_t)8 * p.groups * p.weights.step[0]);
                }
            }
        }
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
        for (const Projection& p : parts_)
            outputs.push_back(MatShape{rows, p.out});
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
        // Work is split into stripes of output rows (or tiles), each with its own scratch kept
        // by the layer: several stripes per thread balance the threads, and nothing is allocated
        // per call once the scratch has grown. The lambdas capture one reference, small enough
        // for std::function not to allocate either.
        const int threads = std::max(1, getNumThreads());
        // The weights on the integer path (most often all of them) share one quantization of x
        // and one parallel section, whose stripes run over all their units.
        bool tiles = false;
        for (const Projection& p : parts_)
            if (run.onIntegerPath(p))
            {
                run.integerUnits += p.integerUnits();
                tiles = tiles || (p.traits->dotQ8InterleavedAmx && p.groups >= 2);
            }
        if (run.integerUnits > 0)
        {
            const int blocks = in_ / 32;
            // The calling thread's scratch, shared by all matmul layers (they run one after
            // another): as large as the largest input, not one copy per layer. Resizing within
            // its capacity allocates nothing, so a steady step allocates nothing.
            static thread_local QuantizedActivations act;
            act.q.resize((size_t)run.rows * in_);
            act.d.resize((size_t)run.rows * blocks);
            act.sums.resize((size_t)run.rows * blocks);
            for (int t = 0; t < run.rows; t++)
                llm::quantizeRowQ8(run.x + (size_t)t * in_, &act.q[(size_t)t * in_], &act.d[(size_t)t * blocks],
                                   &act.sums[(size_t)t * blocks], in_);
            run.xq = act.q.data();
            run.xd = act.d.data();
            run.xs = act.sums.data();
            // The tile kernels read the activations regrouped by block: once here for all stripes
            // (one row is its own regrouping).
            run.xqByBlock = run.xq;
            if (tiles && run.rows > 1)
            {
                act.qByBlock.resize(act.q.size());
                llm::activationsByBlockForTiles(run.xq, run.rows, blocks, act.qByBlock.data());
                run.xqByBlock = act.qByBlock.data();
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
            const Projection& p = parts_[run.part];
            if (run.onIntegerPath(p))
                continue;
            if (run.rows <= gemvMaxRows_)
            {
                run.stripes = std::min(p.out, threads * 16);
                const size_t perStripe = p.type == llm::GGML_F32 ? 0 : (size_t)in_;
                if (scratch_.size() < run.stripes * perStripe)
                    scratch_.resize(run.stripes * perStripe);
                run.scratch = scratch_.data();
                parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.floatGemv(r); }, run.stripes);
            }
            else
            {
                // Prefill: a GEMM of all tokens against each tile of weight rows (one thread per
                // tile): the type's fused one (64 rows: its register tiles take 4 rows, a
                // remainder of 3 slowed a 23-row tile by 20%), or Eigen's over the tile decoded
                // to float once (up to 512 KB of floats).
                const bool decodes = p.type != llm::GGML_F32 && !p.traits->gemmF32;
                run.tileRows = p.traits->gemmF32 ? 64 : std::max(8, std::min(64, (1 << 17) / in_));
                run.tiles = (p.out + run.tileRows - 1) / run.tileRows;
                run.stripes = std::min(run.tiles, threads * 4);
                if (decodes && scratch_.size() < (size_t)run.stripes * run.tileRows * in_)
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
        // The integer path's activations (QuantizedActivations), and q regrouped for the tiles.
        const signed char* xq = nullptr;
        const float* xd = nullptr;
        const int* xs = nullptr;
        const signed char* xqByBlock = nullptr;

        static constexpr int kRowsPerCall = 8;  // activation rows per weight-row kernel call (inline: std::min binds it)

        int stripeBegin(int s, int n) const { return (int)((int64)n * s / stripes); }

        // Types whose integer kernel shares the weight unpacking between rows take it for any
        // row count: faster than decoding tiles to float for a GEMM, and batch-independent.
        bool onIntegerPath(const Projection& p) const
        {
            return p.integerDot && (rows <= self->gemvMaxRows_ || p.groups > 0 || p.traits->dotQ8Tile);
        }

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
                    const Projection& p = self->parts_[i];
                    if (!onIntegerPath(p))
                        continue;
                    const int units = p.integerUnits();
                    if (begin < first + units)
                        integerUnitsOf(p, outputs->getMatRef((int)i).ptr<float>(), std::max(begin - first, 0),
                                       std::min(end - first, units));
                    first += units;
                }
            }
        }

        // Units [begin, end) of projection p into y.
        void integerUnitsOf(const Projection& p, float* y, int begin, int end) const
        {
            const int blocks = self->in_ / 32;
            const llm::WeightTypeTraits& traits = *p.traits;
            const size_t groupBytes = p.interleaved.step[0];
            const int units = p.groupUnits(), perUnit = p.groupsPerUnit();
            const int groupEnd = std::min(std::min(end, units) * perUnit, p.groups);
            int g = std::min(begin, units) * perUnit;
            // Where the CPU has AMX tiles, one call takes the stripe's pairs of groups.
            if (traits.dotQ8InterleavedAmx && groupEnd - g >= 2)
            {
                const int pairs = (groupEnd - g) / 2;
                traits.dotQ8InterleavedAmx(p.interleaved.ptr<uchar>(g), groupBytes, pairs, xq, xqByBlock, xd, xs, blocks,
                                           rows, y + 8 * g, p.out);
                addBias(p, y, 8 * g, 16 * pairs);
                g += 2 * pairs;
            }
            while (g < groupEnd)
            {
                // Two groups at once where the CPU has a kernel for it (same results).
                const int pair = traits.dotQ8Interleaved16 && g + 1 < groupEnd ? 2 : 1;
                if (pair == 2)
                    traits.dotQ8Interleaved16(p.interleaved.ptr<uchar>(g), groupBytes, xq, xd, xs, blocks, rows, y + 8 * g,
                                              p.out);
                else
                    traits.dotQ8Interleaved8(p.interleaved.ptr<uchar>(g), xq, xd, xs, blocks, rows, y + 8 * g, p.out);
                addBias(p, y, 8 * g, 8 * pair);
                g += pair;
            }
            rowGemv(p, y, 8 * p.groups + std::max(begin - units, 0), 8 * p.groups + std::max(end - units, 0));
        }

        // Output rows [first, first + count) of every token get their bias.
        void addBias(const Projection& p, float* y, int first, int count) const
        {
            if (p.bias.empty())
                return;
            const float* bias = p.bias.ptr<float>();
            for (int t = 0; t < rows; t++)
                for (int j = first; j < first + count; j++)
                    y[(size_t)t * p.out + j] += bias[j];
        }

        // Output rows [begin, end) with the row kernels (two weight rows at a time where the
        // type has a multi-row tile, which shares the activation loads).
        void rowGemv(const Projection& p, float* y, int begin, int end) const
        {
            const int in = self->in_, blocks = in / 32;
            const llm::WeightTypeTraits& traits = *p.traits;
            const float* bias = p.bias.empty() ? nullptr : p.bias.ptr<float>();
            const size_t rowBytes = p.weights.cols;
            const int step = traits.dotQ8Tile ? 2 : 1;
            for (int n = begin; n < end; n += step)
            {
                const int wRows = std::min(step, end - n);
                const uchar* src = p.weights.ptr() + (size_t)n * rowBytes;
                float dots[2][kRowsPerCall];
                for (int t0 = 0; t0 < rows; t0 += kRowsPerCall)
                {
                    const int count = std::min(kRowsPerCall, rows - t0);
                    const signed char* q = xq + (size_t)t0 * in;
                    const float* d = xd + (size_t)t0 * blocks;
                    const int* sums = xs + (size_t)t0 * blocks;
                    if (traits.dotQ8Tile)
                        traits.dotQ8Tile(src, rowBytes, wRows, q, d, sums, blocks, count, dots[0], kRowsPerCall);
                    else
                        for (int k = 0; k < count; k++)
                            dots[0][k] = traits.dotQ8(src, q + (size_t)k * in, d + (size_t)k * blocks,
                                                      sums + (size_t)k * blocks, blocks);
                    for (int i = 0; i < wRows; i++)
                    {
                        const float b = bias ? bias[n + i] : 0.f;
                        for (int t = 0; t < count; t++)
                            y[(size_t)(t0 + t) * p.out + n + i] = dots[i][t] + b;
                    }
                }
            }
        }

        void floatGemv(const Range& r) const
        {
            const Projection& p = self->parts_[part];
            const int in = self->in_, out = p.out;
            const size_t rowBytes = p.weights.cols;
            const float* bias = p.bias.empty() ? nullptr : p.bias.ptr<float>();
            float* y = outputs->getMatRef(part).ptr<float>();
            for (int s = r.start; s < r.end; s++)
            {
                float* rowBuf = scratch + (size_t)s * in;
                for (int n = stripeBegin(s, out); n < stripeBegin(s + 1, out); n++)
                {
                    const uchar* src = p.weights.ptr() + (size_t)n * rowBytes;
                    const float b = bias ? bias[n] : 0.f;
                    if (p.traits->dotF32)  // F16 / BF16: decoded on the fly
                    {
                        for (int t = 0; t < rows; t++)
                            y[(size_t)t * out + n] = p.traits->dotF32(src, x + (size_t)t * in, in) + b;
                        continue;
                    }
                    const float* wr;
                    if (p.type == llm::GGML_F32)
                        wr = reinterpret_cast<const float*>(src);
                    else
                    {
                        p.traits->decodeRow(src, rowBuf, in);
                        wr = rowBuf;
                    }
                    for (int t = 0; t < rows; t++)
                        y[(size_t)t * out + n] = llm::dotF32Fast(wr, x + (size_t)t * in, in) + b;
                }
            }
        }

        void gemm(const Range& r) const
        {
            const Projection& p = self->parts_[part];
            const int in = self->in_, out = p.out;
            const size_t rowBytes = p.weights.cols;
            const float* bias = p.bias.empty() ? nullptr : p.bias.ptr<float>();
            float* y = outputs->getMatRef(part).ptr<float>();
            for (int s = r.start; s < r.end; s++)
            {
                for (int k = stripeBegin(s, tiles); k < stripeBegin(s + 1, tiles); k++)
                {
                    const int n0 = k * tileRows, n1 = std::min(out, n0 + tileRows);
                    const uchar* src = p.weights.ptr() + (size_t)n0 * rowBytes;
                    if (p.traits->gemmF32)
                        p.traits->gemmF32(src, rowBytes, n1 - n0, x, in, rows, in, y + n0, out, p.roundTokens);
                    else
                    {
                        const float* rowsOfTile = reinterpret_cast<const float*>(src);
                        if (p.type != llm::GGML_F32)
                        {
                            float* tile = scratch + (size_t)s * tileRows * in;
                            for (int n = n0; n < n1; n++)
                                p.traits->decodeRow(src + (size_t)(n - n0) * rowBytes, tile + (size_t)(n - n0) * in, in);
                            rowsOfTile = tile;
                        }
                        llm::gemmTokensByWeightRows(x, in, rows, in, rowsOfTile, in, n1 - n0, y + n0, out);
                    }
                    if (bias)
                        for (int t = 0; t < rows; t++)
                            for (int n = n0; n < n1; n++)
                                y[(size_t)t * out + n] += bias[n];
                }
            }
        }
    };

    int in_;
    int gemvMaxRows_;   // beyond, a GEMM over decoded weight tiles
    std::vector<Projection> parts_;
    std::vector<float> scratch_;  // per stripe: a decoded weight row (GEMV) or tile (GEMM)
};

Ptr<LLMMatMulLayer> LLMMatMulLayer::create(const LayerParams& params)
{
    return makePtr<LLMMatMulLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
