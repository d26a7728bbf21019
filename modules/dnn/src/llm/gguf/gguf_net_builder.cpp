// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Builds a cv::dnn::Net for a GGUF language model out of ordinary dnn layers, as llama.cpp's
// src/models/<arch>.cpp builds the graph: the token embedding (scaled where the architecture's
// metadata says so: gemma, granite; gpt2 adds learned positions), then the architecture's block
// function for every layer (architectures/: llamaBlock, phi3Block, gpt2Block), then the final
// norm and the output projection (tied to the embedding when output.weight is absent, or always
// where the row says so: gemma2) and the logits' soft-cap. What the architecture changes is its
// row of the architecture table (gguf_architecture.hpp); what the metadata says is read in
// gguf_hyper_parameters.cpp. Weights are wrapped from the mapping, not copied, except small
// norm vectors.

#include "../../precomp.hpp"
#include "gguf_net_builder.hpp"
#include "gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

using Pin = LayerPin;

// The token embeddings of input_ids (rows of `embd`), their positions and scale.
Pin embeddings(GGUFGraphBuilder& g, const Mat& embd)
{
    const GGUFHyperParameters& hp = g.hp();
    LayerParams lp = g.params("token_embd", "LLMTokenEmbedding");
    lp.set("ggml_type", (int)g.tensor("token_embd.weight").type);
    lp.set("embedding_length", hp.nEmbd);
    lp.set("vocab_size", embd.rows);
    lp.blobs.push_back(embd);
    // gemma3 scales token rows only: embeddings fed in place of tokens (images) are not
    // (llama.cpp's gemma3 graph: ubatch.token ? sqrtf(n_embd) : 1).
    const bool tokenRowScale = g.arch().embeddingScaleOnTokensOnly && hp.embeddingScale != 1.f;
    if (tokenRowScale)
        lp.set("token_scale", hp.embeddingScale);
    Pin x = g.add(lp, {Pin{0, 0}});
    if (g.arch().learnedPositions)
        x = g.positionEmbedding(x);
    if (hp.embeddingScale != 1.f && !tokenRowScale)
        x = g.scaleBy("token_embd_scale", hp.embeddingScale, x);
    return x;
}

// The final norm, the output projection onto the vocabulary and the logits' soft-cap.
void output(GGUFGraphBuilder& g, Pin x, const Mat& embd)
{
    const GGUFHyperParameters& hp = g.hp();
    // (granite's logits / logit_scale: folded into the final norm's weights; the output
    // projection is linear, and on 8-bit activations their rounding scales with them)
    x = g.arch().norm == NormKind::LayerNorm
        ? g.layerNorm(g.arch().outputNorm, x)
        : g.rmsNorm(g.arch().outputNorm, x, -1, hp.logitScale != 0.f ? 1.f / hp.logitScale : 1.f);
    // (a row's alwaysTiedOutput refuses an output.weight as unused)
    const bool tied = !g.hasTensor("output.weight") || g.arch().alwaysTiedOutput;
    LayerParams lp = g.params("output", "LLMMatMul");
    const std::string outName = tied ? "token_embd.weight" : "output.weight";
    lp.set("ggml_type", (int)g.tensor(outName).type);
    lp.set("in_features", hp.nEmbd);
    lp.set("out_features", embd.rows);
    lp.set("integer_dot", g.integerDot());
    // (a tied output is not adapted: llama.cpp's token_embd adapters have the embedding's shape)
    if (!tied)
    {
        lp.set("weight_tensors", DictValue::arrayString(&outName, 1));
        lp.set("weight_tensor_rows", 0);
    }
    lp.blobs.push_back(tied ? embd : g.weight(outName, hp.nEmbd, embd.rows));
    if (g.arch().outputBias)  // phi2 (llama.cpp's src/models/phi2.cpp: ggml_add of output.bias)
        lp.blobs.push_back(g.vectorF32("output.bias", embd.rows));
    x = g.add(lp, {x});
    if (hp.finalSoftCap > 0.f)
    {
        lp = g.params("output_softcap", "LLMElementwise");
        lp.set("operation", "softcap");
        lp.set("cap", hp.finalSoftCap);
        g.add(lp, {x});
    }
}

} // namespace

Net buildNetFromGGUF(const GGUFModelFile& file, const LoadOptions& options)
{
    GGUFGraphBuilder g(file, options);
    const Mat embd = g.weight("token_embd.weight", g.hp().nEmbd, -1);
    Pin x = embeddings(g, embd);
    g.loadRopeFactors();
    for (int i = 0; i < g.hp().nLayer; i++)
        x = g.arch().block(g, i, x);

    LayerParams lp = g.params("logit_rows", "LLMLogitRows");
    lp.set("all_logits", options.allLogits);
    const int logitRows = g.add(lp, {x}).layer;
    output(g, Pin{logitRows, 0}, embd);
    return g.finish(logitRows);
}

}}} // namespace cv::dnn::llm

namespace cv {
namespace dnn {
CV__DNN_INLINE_NS_BEGIN

Net readNetFromGGUF(const String& path, bool allLogits, int contextLength)
{
    CV_TRACE_FUNCTION();
    llm::GGUFModelFile file(path);
    return llm::buildNetFromGGUF(file, llm::LoadOptions::fromEnvironment(allLogits, contextLength));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
