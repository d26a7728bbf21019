// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"
#include "../gguf_hyper_parameters.hpp"

namespace cv {
namespace dnn {
namespace llm {

// mistral3 (llama.cpp's src/models/mistral3.cpp): yarn_beta_fast / yarn_beta_slow /
// yarn_log_multiplier for YaRN; attention.temperature_scale: each query times
// 1 + scale * ln(1 + floor(pos / original_context_length)) after rotary (Llama 4 scaling,
// applied by the attention layer). Its block is llamaBlock.
void readMistral3HyperParameters(const GGUFMetadataReader& r, GGUFHyperParameters& h)
{
    h.yarn.betaFast = r.hparamFloat("rope.scaling.yarn_beta_fast", h.yarn.betaFast);
    h.yarn.betaSlow = r.hparamFloat("rope.scaling.yarn_beta_slow", h.yarn.betaSlow);
    if (!(h.yarn.betaFast > 0.f && h.yarn.betaFast < 1e6f && h.yarn.betaSlow > 0.f && h.yarn.betaSlow < 1e6f))
        r.fail(format("rope.scaling.yarn_beta_fast %g / yarn_beta_slow %g are out of range", h.yarn.betaFast, h.yarn.betaSlow));
    h.yarnLogMultiplier = r.finiteHparam("rope.scaling.yarn_log_multiplier");
    h.temperatureScale = r.finiteHparam("attention.temperature_scale");
    if (h.temperatureScale != 0.f)
        h.temperatureLength = r.hparam("rope.scaling.original_context_length", h.nCtxTrain);
}

}}} // namespace cv::dnn::llm
