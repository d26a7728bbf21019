// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

/* gemma2 / gemma3 (llama.cpp's src/models/gemma2.cpp, gemma3.cpp): token embeddings times
   sqrt(n_embd); queries scaled by 1/sqrt(head size), or 1/sqrt(n_embd / n_head) for the 27B
   models (the block counts 46 and 62, as llama.cpp tells them); gemma2 soft-caps the attention
   scores (attn_logit_softcapping, default 50) and the logits (final_logit_softcapping, default
   30); gemma3 only the logits, when the file says so. Their blocks are llamaBlock with the rows'
   post-norms, GELU and sliding windows. */

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_hyper_parameters.hpp"

#include <cmath>

namespace cv {
namespace dnn {
namespace llm {

namespace {

void readGemmaScales(GGUFHyperParameters& h, int blockCountOf27B)
{
    h.embeddingScale = std::sqrt((float)h.nEmbd);
    const bool is27B = h.nLayer == blockCountOf27B;
    h.attentionScale = 1.f / std::sqrt(is27B ? (float)(h.nEmbd / h.nHead) : (float)h.headDim);
}

void checkSoftCaps(const GGUFMetadataReader& r, const GGUFHyperParameters& h)
{
    if (!(h.attnSoftCap >= 0.f && h.attnSoftCap < 1e6f) || !(h.finalSoftCap >= 0.f && h.finalSoftCap < 1e6f))
        r.fail(format("soft-capping values %g / %g are out of range", h.attnSoftCap, h.finalSoftCap));
}

} // namespace

void readGemma2HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readGemmaScales(h, 46);
    h.attnSoftCap = r.hparamFloat("attn_logit_softcapping", 50.f);
    h.finalSoftCap = r.hparamFloat("final_logit_softcapping", 30.f);
    checkSoftCaps(r, h);
}

void readGemma3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    readGemmaScales(h, 62);
    if (r.has("attn_logit_softcapping"))
        r.fail("metadata key '" + r.key("attn_logit_softcapping") + "' is not supported for gemma3 (llama.cpp does not apply it)");
    h.finalSoftCap = r.hparamFloat("final_logit_softcapping", 0.f);
    checkSoftCaps(r, h);
}

}}} // namespace cv::dnn::llm
