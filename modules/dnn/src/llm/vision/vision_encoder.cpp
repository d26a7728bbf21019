// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// Idefics3 (SmolVLM) is llama.cpp's SigLIP graph (tools/mtmd/models/siglip.cpp): the same
// patch embedding (with its bias) and position embedding but no class token, no pre-LayerNorm
// in the files, every block, the post-LayerNorm, then the pixel shuffle (VisionPixelShuffle)
// and mm.model.fc.
//
// The encoder as llama.cpp's clip graph for llava builds it (tools/mtmd/models/llava.cpp):
//   patch embedding (a P x P convolution with stride P) -> one token per patch, raster order,
//   then the class embedding as the last token -> + position embedding (row i: position i)
//   -> pre-LayerNorm -> pre-norm ViT blocks (LayerNorm, full attention, residual, LayerNorm,
//   MLP, residual), all but the last block unless clip.vision.feature_layer says otherwise
//   -> post-LayerNorm when present -> tokens 1..N (llama.cpp drops the FIRST patch and keeps
//   the class token, which it placed last) -> the mlp projector (mm.0, GELU, mm.2).
// Gemma 3 (tools/mtmd/models/siglip.cpp): the same ViT without class token, every block, the
// post-LayerNorm, then gemma3Projector() (pooling, RMS norm, projection).
// Where llama.cpp rounds to half precision on the CPU we do the same: the patch embedding's
// pixels and weights (ggml_conv_2d's F16 im2col), the GELUs' inputs and outputs (ggml's F16
// tables) and the inputs of matmuls with F16 weights; everything else is float32.

#include "../../precomp.hpp"
#include "vision_encoder.hpp"
#include "image_preprocess.hpp"
#include "vision_layers.hpp"
#include "../layers/llm_layers.hpp"
#include "../net/net_assembly.hpp"

#include <cstring>
#include <mutex>

namespace cv {
namespace dnn {
namespace llm {

void registerVisionLayers()
{
    static std::once_flag once;
    std::call_once(once, [] {
        LayerFactory::registerLayer("VisionAttention", [](LayerParams& p) -> Ptr<Layer> { return VisionAttentionLayer::create(p); });
        LayerFactory::registerLayer("VisionPatchTokens", [](LayerParams& p) -> Ptr<Layer> { return VisionPatchTokensLayer::create(p); });
        LayerFactory::registerLayer("VisionRows", [](LayerParams& p) -> Ptr<Layer> { return VisionRowsLayer::create(p); });
        LayerFactory::registerLayer("VisionQuickGelu", [](LayerParams& p) -> Ptr<Layer> { return VisionQuickGeluLayer::create(p); });
        LayerFactory::registerLayer("VisionRoundF16", [](LayerParams& p) -> Ptr<Layer> { return VisionRoundF16Layer::create(p); });
        LayerFactory::registerLayer("VisionGeluF16", [](LayerParams& p) -> Ptr<Layer> { return VisionGeluF16Layer::create(p); });
        LayerFactory::registerLayer("VisionPixelShuffle", [](LayerParams& p) -> Ptr<Layer> { return VisionPixelShuffleLayer::create(p); });
        LayerFactory::registerLayer("VisionAvgPool", [](LayerParams& p) -> Ptr<Layer> { return VisionAvgPoolLayer::create(p); });
    });
}

namespace {

void roundToF16(Mat& m)
{
    CV_Assert(m.isContinuous() && m.depth() == CV_32F);
    float* p = m.ptr<float>();
    for (size_t i = 0; i < m.total(); i++)
        p[i] = (float)hfloat(p[i]);
}

class VisionNetBuilder
{
public:
    VisionNetBuilder(const MMProjFile& f, Net& net) : f_(f), hp_(f.hparams()), net_(net) {}

    void build()
    {
        const int D = hp_.nEmbd;
        LayerPin x = patchEmbedding();
        if (hp_.preNorm)
            x = layerNorm("v.pre_ln", D, x);
        for (int il = 0; il < hp_.layersRun; il++)
            x = block(il, x);
        if (hp_.postNorm)
            x = layerNorm("v.post_ln", D, x);
        if (hp_.projector == VisionProjector::Gemma3)
        {
            gemma3Projector(x);
            return;
        }
        if (hp_.projector == VisionProjector::Idefics3)
        {
            idefics3Projector(x);
            return;
        }
        if (hp_.classEmbedding)
        {
            LayerParams lp = params("v.patches", "VisionRows");
            lp.set("begin", 1);
            lp.set("end", hp_.imageTokens() + 1);
            x = addConnectedLayer(net_, lp, {x});
        }
        x = matmul("mm.0", D, hp_.projectorHidden, x);
        x = elementwise("mm.gelu", "gelu_tanh_f16", x);  // ggml_gelu, as llama.cpp computes it
        if (f_.file().findTensor("mm.2.weight"))
            x = matmul("mm.2", hp_.projectorHidden, hp_.outputEmbd, x);
    }

private:
    // Idefics3 (llama.cpp's clip_graph_siglip): the pixel shuffle, then mm.model.fc without bias.
    void idefics3Projector(LayerPin x)
    {
        const int s = hp_.scaleFactor, n = hp_.patchesPerSide();
        LayerParams lp = params("mm.pixel_shuffle", "VisionPixelShuffle");
        lp.set("grid_w", n);
        lp.set("grid_h", n);
        lp.set("scale", s);
        x = addConnectedLayer(net_, lp, {x});
        matmul("mm.model.fc", hp_.nEmbd * s * s, hp_.outputEmbd, x);
    }

    LayerParams params(const std::string& name, const std::string& type) const
    {
        LayerParams lp;
        lp.name = name;
        lp.type = type;
        return lp;
    }

    LayerPin patchEmbedding()
    {
        const int D = hp_.nEmbd, P = hp_.patchSize;
        LayerParams conv = params("v.patch_embd", "Convolution");
        conv.set("kernel_h", P);
        conv.set("kernel_w", P);
        conv.set("stride_h", P);
        conv.set("stride_w", P);
        conv.set("pad_h", 0);
        conv.set("pad_w", 0);
        conv.set("num_output", D);
        const int wshape[] = {D, 3, P, P};  // ggml [P, P, 3, D] is PyTorch's [D, 3, P, P]
        const GGUFTensor& w = f_.tensor("v.patch_embd.weight", {P, P, 3, D});
        Mat weights = f_.toF32(w).reshape(1, 4, wshape);
        // ggml_conv_2d multiplies an F16 im2col of the image (F32 only for a BF16 kernel) by
        // the kernel converted to F16, accumulating in F32: llama.cpp's patch embedding sees
        // pixels and weights rounded to half precision. We round them the same way.
        roundConvToF16_ = w.type != GGML_BF16;
        if (roundConvToF16_)
            roundToF16(weights);
        conv.blobs.push_back(weights);
        const bool bias = f_.file().findTensor("v.patch_embd.bias") != nullptr;
        conv.set("bias_term", bias);
        if (bias)
            conv.blobs.push_back(f_.vectorF32("v.patch_embd.bias", D).reshape(1, D));
        LayerPin x = addConnectedLayer(net_, conv, {LayerPin{0, 0}});

        LayerParams tokens = params("v.tokens", "VisionPatchTokens");
        const int nPos = hp_.imageTokens() + (hp_.classEmbedding ? 1 : 0);
        tokens.blobs.push_back(f_.toF32(f_.tensor("v.position_embd.weight", {D, nPos})).reshape(1, nPos));
        if (hp_.classEmbedding)
            tokens.blobs.push_back(f_.vectorF32("v.class_embd", D));
        return addConnectedLayer(net_, tokens, {x});
    }

    LayerPin layerNorm(const std::string& prefix, int n, LayerPin x)
    {
        LayerParams lp = params(prefix, "LLMLayerNorm");
        lp.set("epsilon", hp_.eps);
        lp.blobs.push_back(f_.vectorF32(prefix + ".weight", n));
        const bool bias = f_.file().findTensor(prefix + ".bias") != nullptr;
        lp.blobs.push_back(bias ? f_.vectorF32(prefix + ".bias", n) : Mat::zeros(1, n, CV_32F));
        return addConnectedLayer(net_, lp, {x});
    }

    LayerPin matmul(const std::string& prefix, int in, int out, LayerPin x)
    {
        const GGUFTensor& w = f_.tensor(prefix + ".weight", {in, out});
        if (w.type == GGML_F16)  // ggml converts the activations to F16 for F16 weights
        {
            LayerParams round = params(prefix + ".input_f16", "VisionRoundF16");
            x = addConnectedLayer(net_, round, {x});
        }
        LayerParams lp = params(prefix, "LLMMatMul");
        lp.set("ggml_type", (int)w.type);
        lp.set("in_features", in);
        lp.set("out_features", out);
        // Float weights: a float dot product (after the F16 rounding above), as ggml's F16 / F32
        // matmuls; quantized ones: 8-bit activations, as ggml's vec_dot types.
        lp.set("integer_dot", w.type != GGML_F16 && w.type != GGML_BF16 && w.type != GGML_F32);
        lp.blobs.push_back(wrapMappedBytes(f_.file().mapping(), w.data, w.rowCount(), (int64)w.rowBytes()));
        if (f_.file().findTensor(prefix + ".bias"))
            lp.blobs.push_back(f_.vectorF32(prefix + ".bias", out));
        return addConnectedLayer(net_, lp, {x});
    }

    LayerPin elementwise(const std::string& name, const char* op, LayerPin a, LayerPin b = LayerPin())
    {
        LayerParams lp = params(name, "LLMElementwise");
        lp.set("operation", op);
        std::vector<LayerPin> inputs{a};
        if (b.layer >= 0)
            inputs.push_back(b);
        return addConnectedLayer(net_, lp, inputs);
    }

    LayerPin block(int il, LayerPin x)
    {
        const int D = hp_.nEmbd, F = hp_.nFF;
        const std::string b = format("v.blk.%d.", il);
        LayerPin h = layerNorm(b + "ln1", D, x);
        LayerPin q = matmul(b + "attn_q", D, D, h);
        LayerPin k = matmul(b + "attn_k", D, D, h);
        LayerPin v = matmul(b + "attn_v", D, D, h);
        LayerParams attn = params(b + "attn", "VisionAttention");
        attn.set("num_heads", hp_.nHead);
        attn.set("head_dim", D / hp_.nHead);
        LayerPin a = addConnectedLayer(net_, attn, {q, k, v});
        a = matmul(b + "attn_out", D, D, a);
        x = elementwise(b + "attn_residual", "add", a, x);
        h = layerNorm(b + "ln2", D, x);
        h = matmul(b + (hp_.swappedFFN ? "ffn_down" : "ffn_up"), D, F, h);
        if (hp_.activation == VisionActivation::QuickGelu)
        {
            LayerParams lp = params(b + "ffn_act", "VisionQuickGelu");
            h = addConnectedLayer(net_, lp, {h});
        }
        else if (hp_.activation == VisionActivation::GeluTanh)
        {
            LayerParams lp = params(b + "ffn_act", "VisionGeluF16");  // ggml_gelu's F16 table
            h = addConnectedLayer(net_, lp, {h});
        }
        else
            h = elementwise(b + "ffn_act", "silu", h);
        h = matmul(b + (hp_.swappedFFN ? "ffn_up" : "ffn_down"), F, D, h);
        return elementwise(b + "ffn_residual", "add", x, h);
    }

    // Gemma 3 (llama.cpp's clip_graph_siglip): the patch grid average-pooled by poolKernel
    // patches per side (ggml_pool_2d), RMS norm (ggml_rms_norm with the file's epsilon, times
    // mm.soft_emb_norm.weight as stored), then mm.input_projection (ggml [n_embd_text, D],
    // which llama.cpp transposes: y = x W with W as stored, D x n_embd_text).
    void gemma3Projector(LayerPin x)
    {
        const int D = hp_.nEmbd, T = hp_.outputEmbd;
        LayerParams pool = params("mm.pool", "VisionAvgPool");
        pool.set("grid", hp_.patchesPerSide());
        pool.set("kernel", hp_.poolKernel);
        x = addConnectedLayer(net_, pool, {x});

        LayerParams norm = params("mm.soft_emb_norm", "RMSNorm");
        norm.set("epsilon", hp_.eps);
        norm.blobs.push_back(f_.vectorF32("mm.soft_emb_norm.weight", D));
        x = addConnectedLayer(net_, norm, {x});

        const GGUFTensor& w = f_.tensor("mm.input_projection.weight", {T, D});
        // ggml_cont(ggml_transpose(w)) keeps w's type: T rows of D elements.
        const size_t es = w.type == GGML_F16 ? 2 : 4;
        Mat rows(T, (int)(D * es), CV_8U);
        for (int d = 0; d < D; d++)
            for (int t = 0; t < T; t++)
                std::memcpy(rows.ptr(t) + d * es, w.data + ((size_t)d * T + t) * es, es);
        if (w.type == GGML_F16)  // ggml converts the activations to F16 for F16 weights
        {
            LayerParams round = params("mm.input_projection.input_f16", "VisionRoundF16");
            x = addConnectedLayer(net_, round, {x});
        }
        LayerParams lp = params("mm.input_projection", "LLMMatMul");
        lp.set("ggml_type", (int)w.type);
        lp.set("in_features", D);
        lp.set("out_features", T);
        lp.set("integer_dot", false);
        lp.blobs.push_back(rows);
        addConnectedLayer(net_, lp, {x});
    }

public:
    bool roundConvToF16_ = false;

private:
    const MMProjFile& f_;
    const VisionHyperParameters& hp_;
    Net& net_;
};

}  // namespace

VisionEncoder::VisionEncoder(const std::string& mmprojPath)
{
    file_ = std::make_shared<MMProjFile>(mmprojPath);
    build();
}

void VisionEncoder::build()
{
    registerVisionLayers();
    net_ = Net();
    net_.setInputsNames({"pixels"});
    VisionNetBuilder builder(*file_, net_);
    builder.build();
    roundPixelsToF16_ = builder.roundConvToF16_;
}

Mat VisionEncoder::encode(const Mat& pixels)
{
    const int S = hparams().imageSize;
    CV_Check(pixels.dims, pixels.dims == 4 && pixels.size[0] == 1 && pixels.size[1] == 3 && pixels.size[2] == S &&
                          pixels.size[3] == S && pixels.type() == CV_32F,
             "VisionEncoder: expects a 1 x 3 x image_size x image_size float blob");
    Mat input = pixels;
    if (roundPixelsToF16_)  // as ggml_conv_2d's F16 im2col (see patchEmbedding())
    {
        input = pixels.clone();
        roundToF16(input);
    }
    net_.setInput(input);
    Mat out = net_.forward();
    CV_CheckEQ(out.size[0], hparams().outputTokens(), "VisionEncoder: unexpected token count");
    return out.reshape(1, out.size[0]).clone();
}

Mat VisionEncoder::encodeImage(const Mat& bgr)
{
    return encode(preprocessImage(bgr, hparams()));
}

}}} // namespace cv::dnn::llm
