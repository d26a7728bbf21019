// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

#include "../../precomp.hpp"
#include "mmproj_file.hpp"

#include <algorithm>

namespace cv {
namespace dnn {
namespace llm {

namespace {
// clip.projector_type values and the projector each one builds.
struct ProjectorRow
{
    const char* name;
    VisionProjector projector;
};
const ProjectorRow kProjectors[] = {
    {"mlp", VisionProjector::Mlp},
    {"gemma3", VisionProjector::Gemma3},
    {"idefics3", VisionProjector::Idefics3},
};
} // namespace

std::vector<std::string> visionProjectorNames()
{
    std::vector<std::string> names;
    for (const ProjectorRow& r : kProjectors)
        names.push_back(r.name);
    return names;
}

MMProjFile::MMProjFile(const std::string& path) : path_(path)
{
    try
    {
        file_ = std::make_shared<GGUFModelFile>(path);
    }
    catch (const cv::Exception& e)
    {
        CV_Error(Error::StsParseError, "mmproj '" + path + "': " + e.err);
    }
    readHyperParameters();
    checkTensors();
}

void MMProjFile::fail(const std::string& what) const
{
    CV_Error(Error::StsParseError, "mmproj '" + path_ + "': " + what);
}

void MMProjFile::readHyperParameters()
{
    const GGUFModelFile& f = *file_;
    auto u32 = [&](const std::string& key, int lo, int hi) {
        const GGUFValue* v = f.find(key);
        if (!v)
            fail("missing key " + key);
        if (v->numbers.size() || v->type == GGUF_STRING || v->type == GGUF_ARRAY || v->i < lo || v->i > hi)
            fail(format("key %s must be an integer in [%d, %d]", key.c_str(), lo, hi));
        return (int)v->i;
    };
    auto flag = [&](const std::string& key) {
        const GGUFValue* v = f.find(key);
        return v && v->type == GGUF_BOOL && v->i != 0;
    };
    if (!flag("clip.has_vision_encoder"))
        fail("clip.has_vision_encoder is not true: not a vision mmproj (an audio-only projector?)");

    const GGUFValue* type = f.find("clip.projector_type");
    if (!type || type->type != GGUF_STRING || type->str.empty())
        type = f.find("clip.vision.projector_type");
    if (!type || type->type != GGUF_STRING)
        fail("missing key clip.projector_type");
    hp_.projectorName = type->str;
    const ProjectorRow* row = std::find_if(std::begin(kProjectors), std::end(kProjectors),
                                           [&](const ProjectorRow& r) { return hp_.projectorName == r.name; });
    if (row == std::end(kProjectors))
    {
        std::string supported;
        for (const std::string& name : visionProjectorNames())
            supported += (supported.empty() ? "" : ", ") + name;
        CV_Error(Error::StsNotImplemented, "mmproj '" + path_ + "': projector type '" + hp_.projectorName +
                                           "' is not supported (supported: " + supported + ")");
    }
    hp_.projector = row->projector;

    hp_.imageSize = u32("clip.vision.image_size", 1, 8192);
    hp_.patchSize = u32("clip.vision.patch_size", 1, 1024);
    if (hp_.imageSize % hp_.patchSize != 0)
        fail(format("clip.vision.image_size %d is not a multiple of clip.vision.patch_size %d", hp_.imageSize,
                    hp_.patchSize));
    hp_.nEmbd = u32("clip.vision.embedding_length", 1, 1 << 16);
    hp_.nHead = u32("clip.vision.attention.head_count", 1, 1024);
    hp_.nFF = u32("clip.vision.feed_forward_length", 1, 1 << 18);
    hp_.nLayer = u32("clip.vision.block_count", 1, 1024);
    if (hp_.nEmbd % hp_.nHead != 0)
        fail(format("clip.vision.embedding_length %d is not a multiple of the head count %d", hp_.nEmbd, hp_.nHead));
    const GGUFValue* eps = f.find("clip.vision.attention.layer_norm_epsilon");
    if (!eps)
        fail("missing key clip.vision.attention.layer_norm_epsilon");
    hp_.eps = (float)eps->f;

    const bool gelu = flag("clip.use_gelu"), silu = flag("clip.use_silu");
    if (gelu && silu)
        fail("both clip.use_gelu and clip.use_silu are true");
    hp_.activation = gelu ? VisionActivation::GeluTanh : silu ? VisionActivation::Silu : VisionActivation::QuickGelu;

    const GGUFValue* mean = f.find("clip.vision.image_mean");
    const GGUFValue* stdv = f.find("clip.vision.image_std");
    if (!mean || !stdv || mean->numbers.size() < 3 || stdv->numbers.size() < 3)
        fail("clip.vision.image_mean and clip.vision.image_std must hold 3 numbers each");
    for (int c = 0; c < 3; c++)
    {
        hp_.imageMean[c] = (float)mean->numbers[c];
        hp_.imageStd[c] = (float)stdv->numbers[c];
        if (!(hp_.imageStd[c] > 0.f))
            fail("clip.vision.image_std must be positive");
    }
    if (const GGUFValue* fl = f.find("clip.vision.feature_layer"))
        for (double v : fl->numbers)
            hp_.featureLayers.push_back((int)v);
    if (hp_.projector == VisionProjector::Idefics3)
    {
        readIdefics3HyperParameters();
        return;
    }
    if (hp_.projector == VisionProjector::Gemma3)
    {
        if (f.find("clip.vision.image_grid_pinpoints"))
            CV_Error(Error::StsNotImplemented, "mmproj '" + path_ + "': image_grid_pinpoints with the gemma3 projector "
                                               "is not supported");
        readGemma3HyperParameters();
        return;
    }
    readGridPinpoints();
    // The deepest layer whose output is used (llama.cpp's clip_graph_llava): by default the
    // second to last block; a single clip.vision.feature_layer names it.
    if (hp_.featureLayers.empty())
        hp_.layersRun = hp_.nLayer - 1;
    else if (hp_.featureLayers.size() == 1)
        hp_.layersRun = hp_.featureLayers[0];
    else
        CV_Error(Error::StsNotImplemented, "mmproj '" + path_ + "': several clip.vision.feature_layer values "
                                           "(stacked features, granite-vision) are not supported yet");
    if (hp_.layersRun < 0 || hp_.layersRun > hp_.nLayer)
        fail(format("clip.vision.feature_layer %d is outside [0, %d]", hp_.layersRun, hp_.nLayer));
}

// llava-1.6's tiling (clip.cpp: pairs of width, height into image_res_candidates). libmtmd cuts
// the chosen resolution into image_size tiles, the last ones narrower when it is not a
// multiple: the llava graph cannot take those, so such candidates are refused.
void MMProjFile::readGridPinpoints()
{
    const GGUFValue* v = file_->find("clip.vision.image_grid_pinpoints");
    if (!v)
        return;
    if (v->type != GGUF_ARRAY || !v->strings.empty() || !v->arrays.empty() || v->numbers.size() % 2 != 0)
        fail("clip.vision.image_grid_pinpoints must hold an even number of integers (width, height pairs)");
    for (size_t i = 0; i < v->numbers.size(); i += 2)
    {
        const int w = (int)v->numbers[i], h = (int)v->numbers[i + 1];
        if (w <= 0 || h <= 0 || w > 65536 || h > 65536 || w % hp_.imageSize != 0 || h % hp_.imageSize != 0)
            fail(format("clip.vision.image_grid_pinpoints %d x %d is not a positive multiple of clip.vision.image_size "
                        "%d in both sides", w, h, hp_.imageSize));
        hp_.gridPinpoints.push_back(Size(w, h));
    }
}

const GGUFTensor& MMProjFile::tensor(const std::string& name, const std::vector<int64>& dims) const
{
    const GGUFTensor* t = file_->findTensor(name);
    if (!t)
        fail("missing tensor '" + name + "'");
    bool ok = true;
    for (int i = 0; i < 4; i++)
        ok = ok && t->ne[i] == (i < (int)dims.size() ? dims[i] : 1);
    if (!ok)
    {
        std::string want, got;
        for (size_t i = 0; i < dims.size(); i++)
            want += (i ? ", " : "") + std::to_string(dims[i]);
        for (int i = 0; i < t->nDims; i++)
            got += (i ? ", " : "") + std::to_string(t->ne[i]);
        fail("tensor '" + name + "' has shape [" + got + "], expected [" + want + "]");
    }
    if (!ggmlTypeTraits(t->type).dequantizable)
        fail("tensor '" + name + "' has type " + ggmlTypeName(t->type) + ", which is not supported");
    return *t;
}

Mat MMProjFile::toF32(const GGUFTensor& t) const
{
    const int64 n = t.ne[0] * t.rowCount();
    Mat m(1, (int)n, CV_32F);
    const size_t rowBytes = t.rowBytes();
    for (int64 r = 0; r < t.rowCount(); r++)
        dequantizeRow(t.type, t.data + r * rowBytes, m.ptr<float>() + r * t.ne[0], t.ne[0]);
    return m;
}

Mat MMProjFile::vectorF32(const std::string& name, int n) const
{
    return toF32(tensor(name, {n}));
}

// llama.cpp's clip_graph_siglip for idefics3 runs every block (clip.vision.feature_layer is not
// read), and its pixel shuffle needs clip.vision.projector.scale_factor > 1 (clip.cpp's
// build_patch_merge_permute asserts it; without the key the factor is 1). libmtmd's idefics3
// tiling needs clip.vision.preproc_image_size, the longest side the image is resized to
// (older files without it are sliced another way, which we do not implement).
void MMProjFile::readIdefics3HyperParameters()
{
    const GGUFModelFile& f = *file_;
    hp_.layersRun = hp_.nLayer;
    const GGUFValue* sf = f.find("clip.vision.projector.scale_factor");
    if (!sf || sf->numbers.size() || sf->type == GGUF_STRING || sf->type == GGUF_ARRAY || sf->i < 2 || sf->i > 64)
        fail("the idefics3 projector needs clip.vision.projector.scale_factor, an integer in [2, 64]");
    hp_.scaleFactor = (int)sf->i;
    if (hp_.patchesPerSide() % hp_.scaleFactor != 0)
        fail(format("clip.vision.projector.scale_factor %d does not divide the %d x %d patch grid "
                    "(clip.vision.image_size %d / clip.vision.patch_size %d)", hp_.scaleFactor, hp_.patchesPerSide(),
                    hp_.patchesPerSide(), hp_.imageSize, hp_.patchSize));
    const GGUFValue* edge = f.find("clip.vision.preproc_image_size");
    if (!edge)
        CV_Error(Error::StsNotImplemented, "mmproj '" + path_ + "': an idefics3 mmproj without "
                                           "clip.vision.preproc_image_size (older files) is not supported");
    if (edge->numbers.size() || edge->type == GGUF_STRING || edge->type == GGUF_ARRAY || edge->i < 1 || edge->i > 65536)
        fail("key clip.vision.preproc_image_size must be an integer in [1, 65536]");
    hp_.longestEdge = (int)edge->i;
    if (f.find("clip.vision.image_grid_pinpoints"))
        fail("clip.vision.image_grid_pinpoints is for llava-1.6, not the idefics3 projector");
}

void MMProjFile::checkIdefics3Tensors()
{
    const int in = hp_.nEmbd * hp_.scaleFactor * hp_.scaleFactor;
    const GGUFTensor* fc = file_->findTensor("mm.model.fc.weight");
    if (!fc)
        fail("missing tensor 'mm.model.fc.weight' (the idefics3 projector)");
    hp_.outputEmbd = (int)fc->ne[1];
    tensor("mm.model.fc.weight", {in, hp_.outputEmbd});  // no bias: llama.cpp's graph has none
}

void MMProjFile::checkTensors()
{
    const int D = hp_.nEmbd, P = hp_.patchSize;
    tensor("v.patch_embd.weight", {P, P, 3, D});
    // (llama.cpp's SigLIP graph, gemma3's and idefics3's, has no class token: a v.class_embd is not used)
    hp_.classEmbedding = hp_.projector == VisionProjector::Mlp && file_->findTensor("v.class_embd") != nullptr;
    if (hp_.classEmbedding)
        tensor("v.class_embd", {D});
    tensor("v.position_embd.weight", {D, hp_.imageTokens() + (hp_.classEmbedding ? 1 : 0)});
    hp_.preNorm = file_->findTensor("v.pre_ln.weight") != nullptr;
    hp_.postNorm = file_->findTensor("v.post_ln.weight") != nullptr;
    for (int il = 0; il < hp_.layersRun; il++)
    {
        const std::string b = format("v.blk.%d.", il);
        for (const char* n : {"ln1", "ln2"})
            tensor(b + n + ".weight", {D});
        for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_out"})
            tensor(b + n + ".weight", {D, D});
        const GGUFTensor* up = file_->findTensor(b + "ffn_up.weight");
        const GGUFTensor* down = file_->findTensor(b + "ffn_down.weight");
        if (!up || !down)
            fail("missing tensor '" + b + (up ? "ffn_down" : "ffn_up") + ".weight'");
        if (file_->findTensor(b + "ffn_gate.weight"))
            CV_Error(Error::StsNotImplemented, "mmproj '" + path_ + "': a gated ViT MLP (" + b +
                                               "ffn_gate.weight) is not supported yet");
        // llama.cpp swaps up and down when down's input width is n_embd (files converted with
        // the old names).
        hp_.swappedFFN = down->ne[0] == D && hp_.nFF != D;
        tensor(b + (hp_.swappedFFN ? "ffn_down" : "ffn_up") + ".weight", {D, hp_.nFF});
        tensor(b + (hp_.swappedFFN ? "ffn_up" : "ffn_down") + ".weight", {hp_.nFF, D});
    }
    if (hp_.projector == VisionProjector::Gemma3)
        checkGemma3Tensors();
    else if (hp_.projector == VisionProjector::Idefics3)
        checkIdefics3Tensors();
    else
        checkMlpTensors();
}

void MMProjFile::checkMlpTensors()
{
    const int D = hp_.nEmbd;
    const GGUFTensor* mm0 = file_->findTensor("mm.0.weight");
    if (!mm0)
        fail("missing tensor 'mm.0.weight' (the mlp projector's first layer)");
    hp_.projectorHidden = (int)mm0->ne[1];
    tensor("mm.0.weight", {D, hp_.projectorHidden});
    tensor("mm.0.bias", {hp_.projectorHidden});
    if (const GGUFTensor* mm2 = file_->findTensor("mm.2.weight"))
    {
        hp_.outputEmbd = (int)mm2->ne[1];
        tensor("mm.2.weight", {hp_.projectorHidden, hp_.outputEmbd});
        tensor("mm.2.bias", {hp_.outputEmbd});
    }
    else
        hp_.outputEmbd = hp_.projectorHidden;  // Yi-type llava: mm.0 and GELU only
}

// Gemma 3 (llama.cpp's clip_graph_siglip, PROJECTOR_TYPE_GEMMA3): every block runs, and the
// patch grid is average-pooled by clip.vision.projector.scale_factor (n_merge, default 4)
// patches per side.
void MMProjFile::readGemma3HyperParameters()
{
    hp_.layersRun = hp_.nLayer;
    hp_.poolKernel = 4;
    if (file_->find("clip.vision.projector.scale_factor"))
    {
        const GGUFValue* v = file_->find("clip.vision.projector.scale_factor");
        if (v->numbers.size() || v->type == GGUF_STRING || v->type == GGUF_ARRAY || v->i < 1 || v->i > 1024)
            fail("key clip.vision.projector.scale_factor must be an integer in [1, 1024]");
        hp_.poolKernel = (int)v->i;
    }
    // ggml_pool_2d keeps floor(n / k) windows per side (the remainder is not used) and
    // clip_n_output_tokens counts n^2 / k^2: llama.cpp works when both agree.
    const int n = hp_.patchesPerSide(), k = hp_.poolKernel;
    if ((n / k) * (n / k) != n * n / (k * k) || n < k)
        fail(format("gemma3: %d patches per side (clip.vision.image_size / patch_size) do not pool into whole "
                    "windows of %d (clip.vision.projector.scale_factor)", n, k));
}

// mm.soft_emb_norm.weight (D) and mm.input_projection.weight, ggml dims [n_embd_text, D]:
// llama.cpp multiplies by its transpose, so it is stored as PyTorch's [D, n_embd_text].
void MMProjFile::checkGemma3Tensors()
{
    const int D = hp_.nEmbd;
    tensor("mm.soft_emb_norm.weight", {D});
    const GGUFTensor* proj = file_->findTensor("mm.input_projection.weight");
    if (!proj)
        fail("missing tensor 'mm.input_projection.weight' (the gemma3 projector)");
    hp_.outputEmbd = (int)proj->ne[0];
    hp_.projectorHidden = hp_.outputEmbd;
    tensor("mm.input_projection.weight", {hp_.outputEmbd, D});
    if (proj->type != GGML_F32 && proj->type != GGML_F16)
        fail("tensor 'mm.input_projection.weight' has type " + ggmlTypeName(proj->type) +
             "; the gemma3 projection is supported in F32 and F16");
}

}}} // namespace cv::dnn::llm
