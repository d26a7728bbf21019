// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"
#include "../../ggml/ggml_types.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

/* StableLM 2 12B's Q or K norm, <name>.weight of shape [head_dim, heads]: a LayerNorm of each
   head with a weight per head and no bias (llama.cpp: build_norm(Qcur, attn_q_norm, NULL,
   LLM_NORM) on the tokens x heads x head_dim view: ggml_norm over a head, then ggml_mul). */
LayerPin perHeadLayerNorm(GGUFGraphBuilder& g, const std::string& name, int heads, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string w = name + ".weight";
    const GGUFTensor& t = g.tensor(w);
    const Mat rows = g.weight(w, hp.headDim, heads);
    Mat weight(1, heads * hp.headDim, CV_32F);
    for (int r = 0; r < heads; r++)
        dequantizeRow(t.type, rows.ptr(r), weight.ptr<float>() + (size_t)r * hp.headDim, hp.headDim);
    LayerParams lp = GGUFGraphBuilder::params(name, "LLMLayerNorm");
    lp.set("epsilon", hp.eps);
    lp.set("group_size", hp.headDim);
    lp.blobs.push_back(weight);
    lp.blobs.push_back(Mat::zeros(1, heads * hp.headDim, CV_32F));
    return g.add(lp, {x});
}

// A fused attn_qkv as three weights of one matmul layer over its row ranges (no copy), with
// the matching parts of its bias: q, k and v as separate outputs.
std::vector<LayerPin> splitQKV(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const int qWidth = hp.nHead * hp.headDim, kvWidth = hp.nKV * hp.headDim;
    const std::string w = p + "attn_qkv.weight", b = p + "attn_qkv.bias";
    const Mat rows = g.weight(w, hp.nEmbd, qWidth + 2 * kvWidth);
    const Mat bias = g.hasTensor(b) ? g.vectorF32(b, qWidth + 2 * kvWidth) : Mat();
    const int type = (int)g.tensor(w).type;
    const int start[4] = {0, qWidth, qWidth + kvWidth, qWidth + 2 * kvWidth};
    std::vector<LLMMatMulWeight> parts;
    for (int k = 0; k < 3; k++)
        parts.push_back(LLMMatMulWeight{type, rows.rowRange(start[k], start[k + 1]),
                                        bias.empty() ? Mat() : bias.colRange(start[k], start[k + 1]).clone(), w, start[k]});
    return g.projections(p + "attn_qkv", parts, hp.nEmbd, h);
}

} // namespace

// stablelm reads attention.layer_norm_epsilon (required; llama.cpp's
// llama_model_stablelm::load_arch_hparams). use_parallel_residual, which its converter writes,
// is not read there: the tensors decide (no ffn_norm: parallel), and so here.
void readStableLMHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readLayerNormFamilyHyperParameters(r, h);
}

/* stablelm (llama.cpp's src/models/stablelm.cpp): StableLM 2 / StableLM-3B-4E1T / Zephyr,
     h = layer_norm(x)
     a = attn_output(attention(rope(q_norm(q(h))), rope(k_norm(k(h))), v(h)))   (no output bias)
     y = a + x
     x = ffn(ffn_norm present ? layer_norm(y) : h) + y
   q|k|v fused or separate with optional biases (StableLM 2 1.6B has them), per-head Q/K
   LayerNorms where the file has them (12B), the FFN llama's SwiGLU without biases, NEOX rotary
   over rope.dimension_count (25% of each head). */
LayerPin stableLMBlock(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);

    LayerPin h = g.layerNorm(p + "attn_norm", x);
    const bool qNorm = g.hasTensor(p + "attn_q_norm.weight"), kNorm = g.hasTensor(p + "attn_k_norm.weight");
    std::vector<LayerPin> qkv;
    if ((qNorm || kNorm) && g.hasTensor(p + "attn_qkv.weight"))
        qkv = splitQKV(g, p, h);  // the norms need q and k apart
    else
        qkv = layerNormFamilyQKV(g, p, h);
    if (qNorm)
        qkv[0] = perHeadLayerNorm(g, p + "attn_q_norm", hp.nHead, qkv[0]);
    if (kNorm)
        qkv[1] = perHeadLayerNorm(g, p + "attn_k_norm", hp.nKV, qkv[1]);
    LayerPin a = g.attention(p + "attn", i, qkv);
    // no bias (llama.cpp creates none: an attn_output.bias stays unread, and is refused as unused)
    const std::string wo = p + "attn_output.weight";
    a = g.projections(p + "attn_output", {LLMMatMulWeight{(int)g.tensor(wo).type, g.weight(wo, hp.nEmbd, hp.nEmbd), Mat(), wo}},
                      hp.nEmbd, a)[0];
    x = g.residual(p + "attn_residual", a, x);

    const LayerPin ffnIn = g.hasTensor(p + "ffn_norm.weight") ? g.layerNorm(p + "ffn_norm", x) : h;
    return g.residual(p + "ffn_residual", g.gatedFeedForward(p, ffnIn), x);
}

}}} // namespace cv::dnn::llm
