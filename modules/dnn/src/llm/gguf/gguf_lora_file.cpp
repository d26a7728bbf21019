// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// GGUF LoRA adapter files, read as llama.cpp's llama-adapter.cpp reads them: `general.type` =
// adapter, `adapter.type` = lora, optional `adapter.lora.alpha`, and pairs of tensors
// `<base tensor>.lora_a` (ne = [inputs, rank]) and `.lora_b` (ne = [rank, outputs]); norm
// vectors (`*_norm.weight`, which converters may add) are skipped as llama.cpp skips them. The
// pairs are decoded to float32 here; attachLoRAAdapter (net/lora_adapters.cpp) checks them
// against the Net's weights.

#include "../../precomp.hpp"
#include <opencv2/dnn/llm.hpp>
#include "../net/lora_adapters.hpp"
#include "gguf_model_file.hpp"
#include "../kv_cache/kv_sequence_file.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

bool endsWith(const std::string& s, const std::string& suffix)
{
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

//! How llama.cpp rounds the input of a matmul with a weight of this type (or a refusal).
AdapterRounding roundingFor(const GGUFTensor& t, const std::string& where)
{
    switch (t.type)
    {
    case GGML_F32: return AdapterRounding::None;
    case GGML_F16: return AdapterRounding::F16;
    case GGML_BF16: return AdapterRounding::BF16;
    case GGML_Q8_0: return AdapterRounding::Q8_0;
    default:
        CV_Error(Error::StsNotImplemented, where + "tensor '" + t.name + "' is " + ggmlTypeName(t.type) +
                                           "; adapter tensors may be F32, F16, BF16 or Q8_0");
    }
}

//! A tensor's rows x columns (ne[1] x ne[0]) as float32, after checking it is 2-D.
Mat decode(const GGUFTensor& t, const std::string& where)
{
    if (t.ne[2] != 1 || t.ne[3] != 1)
        CV_Error(Error::StsBadArg, where + "tensor '" + t.name + "' is not 2-D");
    if (t.ne[0] > INT_MAX || t.ne[1] > INT_MAX)
        CV_Error(Error::StsBadArg, where + "tensor '" + t.name + "' is too large");
    Mat m((int)t.ne[1], (int)t.ne[0], CV_32F);
    const size_t rowBytes = t.rowBytes();
    for (int r = 0; r < m.rows; r++)
        dequantizeRow(t.type, t.data + r * rowBytes, m.ptr<float>(r), t.ne[0]);
    return m;
}

std::unique_ptr<LoRAAdapter> readLoRAAdapter(const std::string& path)
{
    GGUFModelFile file(path);
    const std::string where = "LoRA adapter '" + path + "': ";
    auto text = [&](const char* key) {
        const GGUFValue* v = file.find(key);
        if (!v || v->type != GGUF_STRING)
            CV_Error(Error::StsBadArg, where + format("'%s' is missing or not a string", key));
        return v->str;
    };
    const std::string type = text("general.type");
    if (type != "adapter")
        CV_Error(Error::StsBadArg, where + "general.type is '" + type + "', not 'adapter' (is it a model?)");
    const std::string adapterType = text("adapter.type");
    if (adapterType != "lora")
        CV_Error(Error::StsNotImplemented, where + "adapter.type is '" + adapterType + "'; only 'lora' is supported");
    if (file.find("adapter.alora.invocation_tokens"))
        CV_Error(Error::StsNotImplemented, where + "activated LoRA (adapter.alora.invocation_tokens) is not supported");

    std::unique_ptr<LoRAAdapter> adapter(new LoRAAdapter);
    adapter->path = path;
    adapter->architecture = text("general.architecture");
    if (const GGUFValue* alpha = file.find("adapter.lora.alpha"))
    {
        if (alpha->type == GGUF_STRING || alpha->type == GGUF_ARRAY || alpha->type == GGUF_BOOL)
            CV_Error(Error::StsBadArg, where + "adapter.lora.alpha is not a number");
        adapter->alpha = (float)alpha->f;
        if (!std::isfinite(adapter->alpha))
            CV_Error(Error::StsBadArg, where + "adapter.lora.alpha is not finite");
    }

    // Pair the tensors by the base tensor they name.
    std::map<std::string, std::pair<const GGUFTensor*, const GGUFTensor*>> pairs;
    for (const GGUFTensor& t : file.tensors())
    {
        if (endsWith(t.name, ".lora_a"))
            pairs[t.name.substr(0, t.name.size() - 7)].first = &t;
        else if (endsWith(t.name, ".lora_b"))
            pairs[t.name.substr(0, t.name.size() - 7)].second = &t;
        else if (!endsWith(t.name, "_norm.weight"))  // (llama.cpp does not apply norm vectors either)
            CV_Error(Error::StsBadArg, where + "tensor '" + t.name + "' is neither a .lora_a nor a .lora_b tensor");
    }
    uint64 digest = kvChecksum(&adapter->alpha, sizeof(adapter->alpha), 0x6c6f7261ULL);
    for (const auto& kv : pairs)
    {
        const std::string& name = kv.first;
        const GGUFTensor *a = kv.second.first, *b = kv.second.second;
        if (!a || !b)
            CV_Error(Error::StsBadArg, where + "the pair of '" + name + "' lacks its " + (a ? "lora_b" : "lora_a") + " tensor");
        if (name == "token_embd.weight")
            CV_Error(Error::StsNotImplemented, where + "adapters of the token embedding (token_embd.weight) are not supported");
        if (name.find("_exps.") != std::string::npos)
            CV_Error(Error::StsNotImplemented, where + "adapters of mixture-of-experts weights ('" + name + "') are not supported");
        if (a->ne[1] != b->ne[0])
            CV_Error(Error::StsBadArg, where + format("the rank of '%s' differs between lora_a (%lld) and lora_b (%lld) "
                                                      "(is lora_a not transposed?)", name.c_str(),
                                                      (long long)a->ne[1], (long long)b->ne[0]));
        LowRankWeight w;
        w.a = decode(*a, where);
        const Mat bRows = decode(*b, where);
        w.bt = bRows.t();
        w.rank = w.a.rows;
        w.in = w.a.cols;
        w.out = bRows.rows;
        w.alphaScale = adapter->alpha != 0.f ? adapter->alpha / (float)w.rank : 1.f;
        w.aInput = roundingFor(*a, where);
        w.bInput = roundingFor(*b, where);
        adapter->weights[name] = w;
        digest = kvChecksum(name.data(), name.size(), digest);
        for (const GGUFTensor* t : {a, b})
        {
            const uint64 type = (uint64)t->type;
            digest = kvChecksum(&type, sizeof(type), digest);
            digest = kvChecksum(t->data, t->nbytes, digest);
        }
    }
    adapter->digest = digest;
    if (adapter->weights.empty())
        CV_Error(Error::StsBadArg, where + "it holds no lora_a / lora_b pairs");
    return adapter;
}

} // namespace
} // namespace llm

CV__DNN_INLINE_NS_BEGIN

int loadLLMAdapter(Net& net, const String& path)
{
    return llm::attachLoRAAdapter(net, llm::readLoRAAdapter(path));
}

CV__DNN_INLINE_NS_END
}} // namespace cv::dnn
