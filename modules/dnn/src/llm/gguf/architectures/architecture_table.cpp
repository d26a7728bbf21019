// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../../precomp.hpp"
#include "architectures.hpp"

namespace cv {
namespace dnn {
namespace llm {

namespace {

/* The GGUF architectures, as llama.cpp names them (general.architecture). Each row is llama's
   graph with what its architecture changes (gguf_architecture.hpp); README.md and gguf.hpp list
   the same names (test_architecture_table.cpp checks). The order is that of the "supported:"
   list in the error for an unknown architecture. */
constexpr GGUFArchitecture kArchitectures[] = {
    // Llama 1/2/3, Mistral, TinyLlama, SmolLM (Q/K rows permuted by the converter); Mixtral:
    // experts of feed_forward_length rows where expert_count > 0
    GGUFArchitecture("llama").withExperts(Experts::Optional),
    GGUFArchitecture("qwen2").neoxRope(),  // Q/K/V biases (used wherever a file has them)
    // head size from attention.key_length (Qwen3-0.6B: 16 x 128 > n_embd 1024)
    GGUFArchitecture("qwen3").neoxRope().withQKNorm(QKNorm::PerHead),
    // Qwen3-MoE (Qwen3-30B-A3B, 235B-A22B): qwen3's attention, experts in every block
    GGUFArchitecture("qwen3moe").neoxRope().withQKNorm(QKNorm::PerHead).withExperts(Experts::Required),
    // gpt-oss (llama.cpp's openai-moe): attention sinks, a window on every second layer, biases,
    // experts in every block with gpt-oss's routing and clamped SwiGLU
    GGUFArchitecture("gpt-oss").neoxRope().requiringFullRope().withExperts(Experts::Required)
        .withSlidingWindow({2, 0, 0.f, true}).withAttentionSinks()
        .readingKeys(readGptOssHyperParameters).withBlock(gptOssBlock),
    // no rotary, LayerNorm with bias, plain GELU FFN
    GGUFArchitecture("gpt2").withoutRope().withLayerNorm().withLearnedPositions()
        .readingKeys(readGPT2HyperParameters).withBlock(gpt2Block),
    // Phi-3 / 3.5 / 4-mini: fused q|k|v and gate|up
    GGUFArchitecture("phi3").neoxRope().withRopeFactors(RopeFactors::LongRoPE)
        .readingKeys(readPhi3HyperParameters).withBlock(phi3Block),
    // sliding window 4096 unless the file says otherwise, every second layer global
    GGUFArchitecture("gemma2").neoxRope().withPostNorms().withGeluFFN().withTiedOutput()
        .withSlidingWindow({2, 4096, 0.f, true}).readingKeys(readGemma2HyperParameters),
    GGUFArchitecture("gemma3").neoxRope().withQKNorm(QKNorm::PerHead).withPostNorms().withGeluFFN()
        .withSlidingWindow({6, 0, 10000.f, false}).scalingTokenRowsOnly().readingKeys(readGemma3HyperParameters),
    // Gemma 4 (dense): local / global layers of their own shapes, KV sharing, per-layer embeddings
    // (architectures/gemma4.cpp); the hook reads the windows and the per-layer arrays
    GGUFArchitecture("gemma4").neoxRope().withPerLayerShapes().scalingTokenRowsOnly()
        .readingKeys(readGemma4HyperParameters).withBlock(gemma4Block),
    // OLMo 2 (OLMo 3 adds sliding windows)
    GGUFArchitecture("olmo2").neoxRope().withQKNorm(QKNorm::Whole).withoutPreNorms().withPostNorms()
        .withSlidingWindow({4}),
    // Granite 3.x: embedding, residual, attention and logit scales
    GGUFArchitecture("granite").requiringFullRope().readingKeys(readGraniteHyperParameters),
    // no rotary on layers 3, 7, ... (llama.cpp's n_no_rope_layer_step = 4, no key)
    GGUFArchitecture("smollm3").withoutRopeEvery(4).withRopeFactors(RopeFactors::None).requiringFullRope(),
    // Ministral 3 / Mistral Small 3.x: attention temperature, its YaRN keys
    GGUFArchitecture("mistral3").requiringFullRope().readingKeys(readMistral3HyperParameters),
    // The partial-rotary LayerNorm family: NEOX rotary over rope.dimension_count < head size,
    // LayerNorm with bias, no rotary frequency factors (llama.cpp passes none to their ropes).
    // GPT-NeoX / Pythia: fused q|k|v with bias, parallel residual with two LayerNorms, GELU
    GGUFArchitecture("gptneox").neoxRope().withRopeFactors(RopeFactors::None).withLayerNorm()
        .readingKeys(readGPTNeoXHyperParameters).withBlock(gptNeoXBlock),
    // Phi-2: one LayerNorm feeding attention and GELU FFN in parallel, biases, output.bias
    GGUFArchitecture("phi2").neoxRope().withRopeFactors(RopeFactors::None).withLayerNorm().withOutputBias()
        .readingKeys(readPhi2HyperParameters).withBlock(phi2Block),
    // StableLM 2 / 3B-4E1T: SwiGLU FFN, optional per-head Q/K LayerNorms, parallel without ffn_norm
    GGUFArchitecture("stablelm").neoxRope().withRopeFactors(RopeFactors::None).withLayerNorm()
        .readingKeys(readStableLMHyperParameters).withBlock(stableLMBlock),
    // Hybrid models: recurrent layers beside attention layers, their state in the Net's KV cache.
    // LFM2: short convolutions where attention.head_count_kv is 0, per-head Q/K norms
    GGUFArchitecture("lfm2").neoxRope().withQKNorm(QKNorm::PerHead).withRecurrentMixer(lfm2ShortConvolution)
        .withOutputNorm("token_embd_norm").readingKeys(readLFM2HyperParameters),
    // Qwen3.5: gated delta nets (linear attention) and gated full attention with per-head Q/K
    // norms, every full_attention_interval-th layer
    GGUFArchitecture("qwen35").neoxRope().withQKNorm(QKNorm::PerHead).withRecurrentLayers()
        .readingKeys(readQwen35HyperParameters).withBlock(qwen35Block),
    // Qwen3.5 MoE: qwen35's layers, experts in every block beside a sigmoid-gated shared expert
    GGUFArchitecture("qwen35moe").neoxRope().withQKNorm(QKNorm::PerHead).withRecurrentLayers()
        .withExperts(Experts::Required).readingKeys(readQwen35HyperParameters).withBlock(qwen35Block),
    // Granite 4 hybrids: Mamba-2 where attention.head_count_kv is 0, granite's scales
    GGUFArchitecture("granitehybrid").requiringFullRope().withRecurrentMixer(mamba2Mixer)
        .readingKeys(readGraniteHybridHyperParameters),
};

} // namespace

const GGUFArchitecture* findGGUFArchitecture(const std::string& name)
{
    for (const GGUFArchitecture& a : kArchitectures)
        if (name == a.name)
            return &a;
    return nullptr;
}

std::vector<std::string> ggufArchitectureNames()
{
    std::vector<std::string> names;
    for (const GGUFArchitecture& a : kArchitectures)
        names.push_back(a.name);
    return names;
}

}}} // namespace cv::dnn::llm
