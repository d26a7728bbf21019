// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Attaching a LoRA adapter to a Net's matmul layers (LoRATarget): each pair goes to the weights
// that hold rows of the tensor it names, after the checks llama.cpp's llama-adapter.cpp makes.
// All checks come first, so a refused adapter leaves the Net as it was.

#include "../../precomp.hpp"
#include "lora_adapters.hpp"
#include "llm_state_layers.hpp"

namespace cv {
namespace dnn {
namespace llm {

void roundAdapterInput(const float* x, float* out, int n, AdapterRounding kind)
{
    switch (kind)
    {
    case AdapterRounding::None:
        std::copy(x, x + n, out);
        break;
    case AdapterRounding::F16:
        for (int i = 0; i < n; i++)
            out[i] = (float)hfloat(x[i]);
        break;
    case AdapterRounding::BF16:
        for (int i = 0; i < n; i++)
        {
            // ggml's fp32 -> bf16: round to nearest even; NaN stays NaN
            Cv32suf u;
            u.f = x[i];
            uint32_t bits = (u.u & 0x7fffffffu) > 0x7f800000u ? (u.u | 0x00400000u)
                                                              : u.u + 0x7fffu + ((u.u >> 16) & 1u);
            u.u = bits & 0xffff0000u;
            out[i] = u.f;
        }
        break;
    case AdapterRounding::Q8_0:
        CV_Assert(n % 32 == 0);
        for (int b = 0; b < n; b += 32)
        {
            // ggml's quantize_row_q8_0: q = round(x / d) with d = amax / 127, stored as fp16
            float amax = 0.f;
            for (int i = b; i < b + 32; i++)
                amax = std::max(amax, std::abs(x[i]));
            const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
            const float dStored = (float)hfloat(d);
            for (int i = b; i < b + 32; i++)
                out[i] = (float)cvRound(x[i] * id) * dStored;
        }
        break;
    }
}

AdapterSet normalizeAdapterSet(const std::vector<int>& ids, const std::vector<float>& scales, const char* caller)
{
    if (!scales.empty() && scales.size() != ids.size())
        CV_Error(Error::StsBadArg, format("%s: %zu adapter scales for %zu adapter ids (give one scale per id, "
                                          "or none for scale 1)", caller, scales.size(), ids.size()));
    AdapterSet set;
    for (size_t i = 0; i < ids.size(); i++)
    {
        const float scale = scales.empty() ? 1.f : scales[i];
        if (!std::isfinite(scale))
            CV_Error(Error::StsBadArg, format("%s: the scale of LoRA adapter %d is not finite", caller, ids[i]));
        for (size_t j = 0; j < i; j++)
            if (ids[j] == ids[i])
                CV_Error(Error::StsBadArg, format("%s: LoRA adapter %d is named twice", caller, ids[i]));
        if (scale != 0.f)
            set.push_back(AdapterUse{ids[i], scale});
    }
    std::sort(set.begin(), set.end(), [](const AdapterUse& a, const AdapterUse& b) { return a.id < b.id; });
    return set;
}

namespace {

struct TargetWeight
{
    LoRATarget* layer;
    int weight;
};

std::vector<LoRATarget*> loraTargets(Net& net)
{
    std::vector<LoRATarget*> targets;
    for (const String& name : net.getLayerNames())
        if (LoRATarget* t = dynamic_cast<LoRATarget*>(net.getLayer(name).get()))
            targets.push_back(t);
    return targets;
}

} // namespace

int attachLoRAAdapter(Net& net, std::unique_ptr<LoRAAdapter> adapter)
{
    CV_Assert(adapter);
    const Ptr<LLMNetState> state = LLMNetState::of(net);
    if (!state)
        CV_Error(Error::StsBadArg, "loadLLMAdapter: the Net is not a language model");
    const std::string where = "LoRA adapter '" + adapter->path + "': ";
    if (state->architecture().empty())
        CV_Error(Error::StsBadArg, where + "adapters apply to models read from GGUF files; this Net's model is not one");
    if (adapter->architecture != state->architecture())
        CV_Error(Error::StsBadArg, where + "its architecture '" + adapter->architecture +
                                   "' is not the model's ('" + state->architecture() + "')");

    // The weights holding rows of each tensor, and the tensor's row count (its parts together).
    const std::vector<LoRATarget*> targets = loraTargets(net);
    std::map<std::string, std::vector<TargetWeight>> byTensor;
    std::map<std::string, int> tensorRows;
    for (LoRATarget* t : targets)
        for (int w = 0; w < t->loraWeightCount(); w++)
        {
            const std::string tensor = t->loraTensor(w);
            if (tensor.empty())
                continue;
            byTensor[tensor].push_back(TargetWeight{t, w});
            tensorRows[tensor] = std::max(tensorRows[tensor], t->loraTensorRow(w) + t->loraRows(w));
        }

    // llama.cpp's checks: the tensor exists; A's rows are the weight's inputs, B's columns its
    // outputs, and A's rank is B's.
    for (const auto& kv : adapter->weights)
    {
        const std::string& name = kv.first;
        const LowRankWeight& pair = kv.second;
        const auto it = byTensor.find(name);
        if (it == byTensor.end())
            CV_Error(Error::StsBadArg, where + "tensor '" + name + ".lora_a' adapts '" + name +
                                       "', which the base model has no projection of (wrong base model?)");
        const int in = it->second[0].layer->loraInputs(), out = tensorRows[name];
        if (pair.in != in || pair.out != out)
            CV_Error(Error::StsBadArg, where + format("tensor '%s' has an incorrect shape: lora_a has %d inputs and lora_b "
                                                      "%d outputs, the base weight %d and %d (wrong base model?)",
                                                      name.c_str(), pair.in, pair.out, in, out));
    }

    // Each weight's part of B (a weight may hold some of its tensor's rows: phi3's fused ffn_up).
    std::vector<std::pair<TargetWeight, const LowRankWeight*>> attach;
    for (const auto& kv : adapter->weights)
        for (const TargetWeight& tw : byTensor[kv.first])
        {
            const int first = tw.layer->loraTensorRow(tw.weight), rows = tw.layer->loraRows(tw.weight);
            const LowRankWeight& whole = kv.second;
            if (first == 0 && rows == whole.out)
            {
                attach.emplace_back(tw, &whole);
                continue;
            }
            adapter->slices.push_back(whole);
            LowRankWeight& part = adapter->slices.back();
            part.out = rows;
            part.bt = whole.bt.colRange(first, first + rows).clone();
            attach.emplace_back(tw, &part);
        }

    const int id = state->addAdapter(std::move(adapter));
    for (LoRATarget* t : targets)
        t->attachState(state);
    for (const auto& a : attach)
        a.first.layer->addLowRank(id, a.first.weight, a.second);
    return id;
}

void detachLoRAAdapter(Net& net, int id)
{
    const Ptr<LLMNetState> state = LLMNetState::of(net);
    if (!state)
        CV_Error(Error::StsBadArg, "unloadLLMAdapter: the Net is not a language model");
    if (!state->adapter(id))
        CV_Error(Error::StsBadArg, format("unloadLLMAdapter: LoRA adapter %d is not loaded", id));
    for (LoRATarget* t : loraTargets(net))
        t->removeLowRank(id);
    state->removeAdapter(id);
}

}}} // namespace cv::dnn::llm
