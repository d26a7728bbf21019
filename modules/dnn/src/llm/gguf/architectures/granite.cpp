// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_hyper_parameters.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

// granite (llama.cpp's src/models/granite.cpp, llama-graph.cpp's build_inp_embd): logit_scale
// required (logits are divided by it); embedding_scale, residual_scale (both branches'
// outputs before their residual add) and attention.scale (instead of 1/sqrt(head size))
// optional, 0 or absent meaning "not applied"; rope.scaling.finetuned (default true) turns
// the rotary of every layer on or off. deepstack_mapping (Granite Vision) is refused.
// Its block is llamaBlock, which applies the scales.
void readGraniteHyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readGraniteScales(r, h, true);
}

// granitehybrid reads logit_scale as optional (llama.cpp's granite-hybrid.cpp).
void readGraniteScales(const GGUFMetadataReader& r, GGUFHyperParameters& h, bool logitScaleRequired)
{
    const GGUFModelFile& f = r.file();
    const std::string logitKey = r.key("logit_scale");
    if (!f.hasMetadata(logitKey) && logitScaleRequired)
        r.fail("metadata key '" + logitKey + "' is missing");
    h.logitScale = f.hasMetadata(logitKey) ? (float)f.getNumber(logitKey) : 0.f;
    if (!std::isfinite(h.logitScale) || (logitScaleRequired && h.logitScale == 0.f))
        r.fail(format("metadata '%s' = %g is out of range", logitKey.c_str(), h.logitScale));
    const float embeddingScale = r.finiteHparam("embedding_scale");
    if (embeddingScale != 0.f)
        h.embeddingScale = embeddingScale;
    h.residualScale = r.finiteHparam("residual_scale");
    h.attentionScale = r.finiteHparam("attention.scale");
    if (h.attentionScale < 0.f)
        r.fail(format("metadata '%s' = %g is out of range", r.key("attention.scale").c_str(), h.attentionScale));
    h.ropeEnabled = !r.has("rope.scaling.finetuned") || f.getBool(r.key("rope.scaling.finetuned"));
    if (r.has("deepstack_mapping"))
        r.fail("metadata key '" + r.key("deepstack_mapping") + "' (Granite Vision's deepstack inputs) is not supported");
}

}}} // namespace cv::dnn::llm
