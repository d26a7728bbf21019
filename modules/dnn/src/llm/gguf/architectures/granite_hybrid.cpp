// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_graph_builder.hpp"

namespace cv {
namespace dnn {
namespace llm {

// granitehybrid (IBM Granite 4.0 hybrids; llama.cpp's src/models/granite-hybrid.cpp): granite's
// scales (logit_scale optional here) and rope.scaling.finetuned, Mamba-2's sizes (ssm.*: d_inner,
// d_state, heads, groups, the convolution's taps). Layers whose attention.head_count_kv is 0 are
// Mamba-2 layers (readKVHeads). Mixture-of-experts files are refused (expert_count).
void readGraniteHybridHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readGraniteScales(r, h, false);
    readSSMSizes(r, h);
    if (h.ssmInner % h.ssmDtRank != 0 || h.ssmDtRank % h.ssmGroups != 0)
        r.fail(format("ssm.inner_size %d, ssm.time_step_rank %d (heads) and ssm.group_count %d do not divide each "
                      "other", h.ssmInner, h.ssmDtRank, h.ssmGroups));
    if (r.has("expert_shared_feed_forward_length"))
        r.fail("metadata key '" + r.key("expert_shared_feed_forward_length") + "' (shared experts) is not supported");
}

/* Granite 4 hybrid's block is llamaBlock (granite's residual scale on both branches) with
   Mamba-2 in place of attention on the recurrent layers (build_mamba2_layer): ssm_in -> z | x | B | C | dt (rows in that order: d_inner,
   d_inner, groups x d_state twice, heads); x | B | C through the causal convolution ssm_conv1d
   (+ bias) and SiLU; the selective scan with dt's bias, A, the D skip; y * silu(z) RMS-normed
   per group with ssm_norm; ssm_out. */
LayerPin mamba2Mixer(GGUFGraphBuilder& g, const std::string& p, LayerPin h)
{
    const GGUFHyperParameters& hp = g.hp();
    const int d = hp.nEmbd, inner = hp.ssmInner, bc = hp.ssmGroups * hp.ssmState, heads = hp.ssmDtRank;
    const std::vector<LayerPin> zxbcdt =
        g.projections(p + "ssm_in", g.rowParts(p + "ssm_in.weight", d, {inner, inner, bc, bc, heads}), d, h);
    const std::vector<LayerPin> xbc = g.shortConvolution(p + "ssm_conv1d", hp.shortConvKernel, {inner, bc, bc},
                                                         {zxbcdt[1], zxbcdt[2], zxbcdt[3]}, true);
    LayerParams lp = GGUFGraphBuilder::params(p + "ssm_scan", "LLMSelectiveScan");
    lp.set("heads", heads);
    lp.set("head_dim", inner / heads);
    lp.set("groups", hp.ssmGroups);
    lp.set("state_size", hp.ssmState);
    lp.set("epsilon", hp.eps);
    lp.blobs.push_back(g.vectorF32(p + "ssm_dt.bias", heads));
    lp.blobs.push_back(g.matrixF32(p + "ssm_a", 1, heads));
    lp.blobs.push_back(g.matrixF32(p + "ssm_d", 1, heads));
    lp.blobs.push_back(g.matrixF32(p + "ssm_norm.weight", inner / hp.ssmGroups, hp.ssmGroups));
    const LayerPin y = g.add(lp, {xbc[0], xbc[1], xbc[2], zxbcdt[4], zxbcdt[0]});
    return g.matmul(p + "ssm_out", inner, d, y);
}

}}} // namespace cv::dnn::llm
