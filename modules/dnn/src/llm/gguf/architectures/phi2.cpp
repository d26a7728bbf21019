// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// phi2 reads attention.layer_norm_epsilon (required) and no key of its own (llama.cpp's
// llama_model_phi2::load_arch_hparams).
void readPhi2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readLayerNormFamilyHyperParameters(r, h);
}

/* phi2 (llama.cpp's src/models/phi2.cpp): one LayerNorm feeding attention and FFN in parallel,
     h = layer_norm(x)
     x = (attn_output(attention(rope(q|k|v(h)))) + ffn_down(gelu(ffn_up(h)))) + x
   with the biases of attn_output, ffn_up and ffn_down (required there) and of q|k|v where the
   file has them; NEOX rotary over rope.dimension_count (Phi-2: 32 of 80) dimensions. llama.cpp
   scales Q by 1/sqrt(head size) before the scores ("to avoid precision issues" in half
   precision) and the scores by 1: the same product as our scores times 1/sqrt(head size), up to
   float rounding (no half-precision scores here). The output projection's bias is the row's
   (withOutputBias). */
LayerPin phi2Block(GGUFGraphBuilder& g, int i, LayerPin x)
{
    const GGUFHyperParameters& hp = g.hp();
    const std::string p = format("blk.%d.", i);
    for (const char* b : {"attn_output.bias", "ffn_up.bias", "ffn_down.bias"})
        g.tensor(p + b);  // present (matmul reads it)

    LayerPin h = g.layerNorm(p + "attn_norm", x);
    LayerPin a = g.attention(p + "attn", i, layerNormFamilyQKV(g, p, h));
    a = g.matmul(p + "attn_output", hp.nEmbd, hp.nEmbd, a);
    LayerPin f = geluFeedForward(g, p, h);
    return g.residual(p + "ffn_residual", g.residual(p + "attn_residual", a, f), x);
}

}}} // namespace cv::dnn::llm
