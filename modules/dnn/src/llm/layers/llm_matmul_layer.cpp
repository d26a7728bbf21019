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
// weight rows are decoded to float once (F32 rows are used in place) and multiplied with all
// tokens by Eigen's GEMM (kernels/float_gemm.hpp).

#include "../../precomp.hpp"
#include "../llm_layers.hpp"
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
} // namespace

class LLMMatMulLayerImpl CV_FINAL : public LLMMatMulLayer
{
public:
    explicit LLMMatMulLayerImpl(const LayerParams& params)
    {
        setParamsFrom(params);
        type_ = (llm::GGMLType)params.get<int>("ggml_type");
        in_ = params.get<int>("in_features");
        out_ = params.get<int>("out_features");
        gemvMaxRows_ = params.get<int>("gemv_max_rows", 32);
        traits_ = &llm::weightTypeTraits(type_);
        integerDot_ = params.get<bool>("integer_dot", true) && traits_->integerDot();
        CV_CheckGT(in_, 0, "LLMMatMul: in_features must be positive");
        CV_CheckGT(out_, 0, "LLMMatMul: out_features must be positive");
        CV_Check(type_, traits_->computable, "LLMMatMul: unsupported ggml type");
        CV_Check(blobs.size(), blobs.size() == 1 || blobs.size() == 2, "LLMMatMul: expects weights and an optional bias");
        CV_CheckEQ(blobs[0].rows, out_, "LLMMatMul: weight rows != out_features");
        CV_CheckEQ((size_t)blobs[0].cols, llm::ggmlRowBytes(type_, in_), "LLMMatMul: weight row size mismatch");
        CV_Assert(blobs[0].isContinuous() || blobs[0].rows == 1 || blobs[0].step[0] == (size_t)blobs[0].cols);
        if (blobs.size() == 2)
        {
            CV_CheckTypeEQ(blobs[1].type(), CV_32F, "LLMMatMul: bias must be float32");
            CV_CheckEQ(blobs[1].total(), (size_t)out_, "LLMMatMul: bias length != out_features");
        }
        // The integer kernel runs fastest on groups of 8 rows interleaved (repacked once, here);
        // the last out_features % 8 rows keep the row kernels.
        if (integerDot_ && traits_->interleaved)
        {
            groups_ = out_ / 8;
            if (groups_ > 0)
            {
                interleaved_ = llm::interleaveRows8(*traits_->interleaved, blobs[0].ptr(), blobs[0].step[0],
                                                    groups_, in_);
                // Only the last rows are read from the file's pages from now on.
                llm::releaseMappedPages(blobs[0], blobs[0].ptr(), (size_t)8 * groups_ * blobs[0].step[0]);
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
        outputs.assign(1, MatShape{rows, out_});
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
        run.y = outputs_arr.getMatRef(0).ptr<float>();
        run.bias = blobs.size() > 1 ? blobs[1].ptr<float>() : nullptr;
        run.w = blobs[0].ptr();
        run.rowBytes = blobs[0].cols;
        // Work is split into stripes of output rows (or tiles), each with its own scratch kept
        // by the layer: several stripes per thread balance the threads, and nothing is allocated
        // per call once the scratch has grown. The lambdas capture one reference, small enough
        // for std::function not to allocate either.
        const int threads = std::max(1, getNumThreads());
        // Types whose integer kernel shares the weight unpacking between rows take it for any
        // row count: faster than decoding tiles to float for a GEMM, and batch-independent.
        if (integerDot_ && (run.rows <= gemvMaxRows_ || groups_ > 0 || traits_->dotQ8Tile))
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
            if (traits_->dotQ8InterleavedAmx && groups_ >= 2 && run.rows > 1)
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
            run.stripes = std::min(run.integerUnits(), threads * stripesPerThread);
            parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.integerGemv(r); }, run.stripes);
        }
        else if (run.rows <= gemvMaxRows_)
        {
            run.stripes = std::min(out_, threads * 16);
            const size_t perStripe = type_ == llm::GGML_F32 ? 0 : (size_t)in_;
            if (scratch_.size() < run.stripes * perStripe)
                scratch_.resize(run.stripes * perStripe);
            run.scratch = scratch_.data();
            parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.floatGemv(r); }, run.stripes);
        }
        else
        {
            // Prefill: decode a tile of weight rows to float once, then a GEMM of all tokens
            // against it (one thread per tile).
            run.tileRows = std::max(8, std::min(64, (1 << 17) / in_));
            run.tiles = (out_ + run.tileRows - 1) / run.tileRows;
            run.stripes = std::min(run.tiles, threads * 4);
            if (scratch_.size() < (size_t)run.stripes * run.tileRows * in_)
                scratch_.resize((size_t)run.stripes * run.tileRows * in_);
            run.scratch = scratch_.data();
            parallel_for_(Range(0, run.stripes), [&run](const Range& r) { run.gemm(r); }, run.stripes);
        }
    }

private:
    // One forward's arguments and the three ways to compute it, each over a range of stripes.
    struct Run
    {
        const LLMMatMulLayerImpl* self;
        int rows;
        const float* x;
        float* y;
        const float* bias;
        const uchar* w;
        size_t rowBytes;
        int stripes = 1, tileRows = 0, tiles = 0;
        float* scratch = nullptr;
        // The integer path's activations (QuantizedActivations), and q regrouped for the tiles.
        const signed char* xq = nullptr;
        const float* xd = nullptr;
        const int* xs = nullptr;
        const signed char* xqByBlock = nullptr;

        static constexpr int kRowsPerCall = 8;  // activation rows per weight-row kernel call (inline: std::min binds it)

        int stripeBegin(int s, int n) const { return (int)((int64)n * s / stripes); }

        // Work units: the groups of 8 interleaved rows, in pairs where the type has a two-group
        // kernel (a stripe never splits a pair: a lone group takes the slower one-group kernel),
        // then the remaining rows one by one.
        int groupsPerUnit() const { return self->traits_->dotQ8Interleaved16 ? 2 : 1; }
        int groupUnits() const { return (self->groups_ + groupsPerUnit() - 1) / groupsPerUnit(); }
        int integerUnits() const { return groupUnits() + (self->out_ - 8 * self->groups_); }

        void integerGemv(const Range& r) const
        {
            const int blocks = self->in_ / 32, out = self->out_, groups = self->groups_;
            const llm::WeightTypeTraits& traits = *self->traits_;
            const size_t groupBytes = self->interleaved_.step[0];
            // Where the CPU has AMX tiles, one call takes the stripe's pairs of groups.
            const bool tiles = traits.dotQ8InterleavedAmx != nullptr;
            for (int s = r.start; s < r.end; s++)
            {
                const int begin = stripeBegin(s, integerUnits()), end = stripeBegin(s + 1, integerUnits());
                const int units = groupUnits(), perUnit = groupsPerUnit();
                const int groupEnd = std::min(std::min(end, units) * perUnit, groups);
                int g = std::min(begin, units) * perUnit;
                if (tiles && groupEnd - g >= 2)
                {
                    const int pairs = (groupEnd - g) / 2;
                    traits.dotQ8InterleavedAmx(self->interleaved_.ptr<uchar>(g), groupBytes, pairs, xq, xqByBlock, xd,
                                               xs, blocks, rows, y + 8 * g, out);
                    addBias(8 * g, 16 * pairs);
                    g += 2 * pairs;
                }
                while (g < groupEnd)
                {
                    // Two groups at once where the CPU has a kernel for it (same results).
                    const int pair = traits.dotQ8Interleaved16 && g + 1 < groupEnd ? 2 : 1;
                    if (pair == 2)
                        traits.dotQ8Interleaved16(self->interleaved_.ptr<uchar>(g), groupBytes, xq, xd, xs, blocks, rows,
                                                  y + 8 * g, out);
                    else
                        traits.dotQ8Interleaved8(self->interleaved_.ptr<uchar>(g), xq, xd, xs, blocks, rows, y + 8 * g, out);
                    addBias(8 * g, 8 * pair);
                    g += pair;
                }
                rowGemv(8 * groups + std::max(begin - units, 0), 8 * groups + std::max(end - units, 0));
            }
        }

        // Output rows [first, first + count) of every token get their bias.
        void addBias(int first, int count) const
        {
            if (!bias)
                return;
            for (int t = 0; t < rows; t++)
                for (int j = first; j < first + count; j++)
                    y[(size_t)t * self->out_ + j] += bias[j];
        }

        // Output rows [begin, end) with the row kernels (two weight rows at a time where the
        // type has a multi-row tile, which shares the activation loads).
        void rowGemv(int begin, int end) const
        {
            const int in = self->in_, out = self->out_, blocks = in / 32;
            const llm::WeightTypeTraits& traits = *self->traits_;
            const int step = traits.dotQ8Tile ? 2 : 1;
            for (int n = begin; n < end; n += step)
            {
                const int wRows = std::min(step, end - n);
                const uchar* src = w + (size_t)n * rowBytes;
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
                            y[(size_t)(t0 + t) * out + n + i] = dots[i][t] + b;
                    }
                }
            }
        }

        void floatGemv(const Range& r) const
        {
            const int in = self->in_, out = self->out_;
            for (int s = r.start; s < r.end; s++)
            {
                float* rowBuf = scratch + (size_t)s * in;
                for (int n = stripeBegin(s, out); n < stripeBegin(s + 1, out); n++)
                {
                    const uchar* src = w + (size_t)n * rowBytes;
                    const float b = bias ? bias[n] : 0.f;
                    if (self->traits_->dotF32)  // F16 / BF16: decoded on the fly
                    {
                        for (int t = 0; t < rows; t++)
                            y[(size_t)t * out + n] = self->traits_->dotF32(src, x + (size_t)t * in, in) + b;
                        continue;
                    }
                    const float* wr;
                    if (self->type_ == llm::GGML_F32)
                        wr = reinterpret_cast<const float*>(src);
                    else
                    {
                        self->traits_->decodeRow(src, rowBuf, in);
                        wr = rowBuf;
                    }
                    for (int t = 0; t < rows; t++)
                        y[(size_t)t * out + n] = llm::dotF32Fast(wr, x + (size_t)t * in, in) + b;
                }
            }
        }

        void gemm(const Range& r) const
        {
            const int in = self->in_, out = self->out_;
            for (int s = r.start; s < r.end; s++)
            {
                float* tile = scratch + (size_t)s * tileRows * in;
                for (int k = stripeBegin(s, tiles); k < stripeBegin(s + 1, tiles); k++)
                {
                    const int n0 = k * tileRows, n1 = std::min(out, n0 + tileRows);
                    const float* rowsOfTile = tile;
                    if (self->type_ == llm::GGML_F32)
                        rowsOfTile = reinterpret_cast<const float*>(w + (size_t)n0 * rowBytes);
                    else
                        for (int n = n0; n < n1; n++)
                            self->traits_->decodeRow(w + (size_t)n * rowBytes, tile + (size_t)(n - n0) * in, in);
                    llm::gemmTokensByWeightRows(x, in, rows, in, rowsOfTile, in, n1 - n0, y + n0, out);
                    if (bias)
                        for (int t = 0; t < rows; t++)
                            for (int n = n0; n < n1; n++)
                                y[(size_t)t * out + n] += bias[n];
                }
            }
        }
    };

    llm::GGMLType type_;
    const llm::WeightTypeTraits* traits_;  // the type's row of the weight-type table
    int in_, out_;
    int gemvMaxRows_;   // beyond, a GEMM over decoded weight tiles
    bool integerDot_;   // 8-bit activations and integer dot products on the GEMV path
    std::vector<float> scratch_;  // per stripe: a decoded weight row (GEMV) or tile (GEMM)
    int groups_ = 0;              // groups of 8 rows in interleaved_ (kernels/interleaved_weights.hpp)
    Mat interleaved_;
};

Ptr<LLMMatMulLayer> LLMMatMulLayer::create(const LayerParams& params)
{
    return makePtr<LLMMatMulLayerImpl>(params);
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
