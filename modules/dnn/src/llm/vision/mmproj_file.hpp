// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// llama.cpp's `mmproj` GGUF files (tools/mtmd/clip.cpp): a vision encoder and the projector that
// maps its features to the language model's embeddings. This reads and checks the clip.*
// metadata and the tensors of the projectors we build; others are refused by name.

#ifndef OPENCV_DNN_SRC_LLM_VISION_MMPROJ_FILE_HPP
#define OPENCV_DNN_SRC_LLM_VISION_MMPROJ_FILE_HPP

#include "../gguf/gguf_model_file.hpp"

#include <memory>
#include <string>
#include <vector>

namespace cv {
namespace dnn {
namespace llm {

enum class VisionProjector
{
    Mlp,     // LLaVA 1.5 / BakLLaVA / ShareGPT4V: mm.0 -> GELU -> mm.2 (clip.projector_type "mlp")
    Gemma3,  // Gemma 3: SigLIP, average pooling, RMS norm (mm.soft_emb_norm), mm.input_projection
    Idefics3 // SmolVLM / SmolVLM2: pixel shuffle -> mm.model.fc (clip.projector_type "idefics3")
};

//! The clip.projector_type values the loader builds (the lists users read are tested against it).
CV_EXPORTS std::vector<std::string> visionProjectorNames();

//! The activation of the ViT's MLP, as clip.use_gelu / clip.use_silu choose it.
enum class VisionActivation
{
    GeluTanh,   // clip.use_gelu
    Silu,       // clip.use_silu
    QuickGelu   // neither (CLIP's x * sigmoid(1.702 x))
};

struct VisionHyperParameters
{
    std::string projectorName;      //!< clip.projector_type as written
    VisionProjector projector = VisionProjector::Mlp;
    int imageSize = 0, patchSize = 0;
    int nEmbd = 0, nHead = 0, nFF = 0, nLayer = 0;
    float eps = 1e-6f;
    VisionActivation activation = VisionActivation::QuickGelu;
    float imageMean[3] = {0.f, 0.f, 0.f}, imageStd[3] = {1.f, 1.f, 1.f};
    std::vector<int> featureLayers; //!< clip.vision.feature_layer (empty: the default)
    int layersRun = 0;              //!< blocks the encoder runs (llava: all but the last by default)
    bool classEmbedding = false;    //!< v.class_embd present (llama.cpp appends it after the patches)
    bool preNorm = false, postNorm = false;  //!< v.pre_ln / v.post_ln present
    bool swappedFFN = false;        //!< old files name ffn_up / ffn_down the other way round
    int projectorHidden = 0;        //!< mm.0's output width
    int outputEmbd = 0;             //!< the projector's output width: the language model's n_embd
    int poolKernel = 1;             //!< gemma3: patches per side averaged into one token (clip.vision.projector.scale_factor, default 4)
    int scaleFactor = 1;            //!< idefics3: clip.vision.projector.scale_factor (pixel shuffle)
    int longestEdge = 0;            //!< idefics3: clip.vision.preproc_image_size (tiling's longest side)
    std::vector<Size> gridPinpoints; //!< llava-1.6: clip.vision.image_grid_pinpoints (width, height pairs)
    int patchesPerSide() const { return imageSize / patchSize; }
    int imageTokens() const { return patchesPerSide() * patchesPerSide(); }
    //! Rows one image_size x image_size input becomes for the language model (gemma3: the
    //! patches after pooling; idefics3: scale^2 patches merged into one row).
    int outputTokens() const
    {
        if (projector == VisionProjector::Gemma3)
            return (patchesPerSide() / poolKernel) * (patchesPerSide() / poolKernel);
        return imageTokens() / (scaleFactor * scaleFactor);
    }
};

/** An opened mmproj file: its metadata read and checked, its tensors mapped. Errors are
    cv::Exceptions naming the file and the key or tensor at fault; a projector type other than
    the supported ones is refused naming it. */
class MMProjFile
{
public:
    explicit MMProjFile(const std::string& path);

    const VisionHyperParameters& hparams() const { return hp_; }
    const GGUFModelFile& file() const { return *file_; }
    const std::string& path() const { return path_; }

    //! A tensor that must exist with these dims (ggml order; trailing 1s may be left out).
    const GGUFTensor& tensor(const std::string& name, const std::vector<int64>& dims) const;
    //! A 1-D tensor of n elements as a float row (a copy).
    Mat vectorF32(const std::string& name, int n) const;
    //! A tensor's elements as floats (a copy), whatever its ggml type.
    Mat toF32(const GGUFTensor& t) const;

    [[noreturn]] void fail(const std::string& what) const;

private:
    void readHyperParameters();
    void checkTensors();
    void checkMlpTensors();
    void readGemma3HyperParameters();
    void checkGemma3Tensors();
    void readIdefics3HyperParameters();
    void checkIdefics3Tensors();
    void readGridPinpoints();

    std::string path_;
    std::shared_ptr<GGUFModelFile> file_;
    VisionHyperParameters hp_;
};

}}} // namespace cv::dnn::llm

#endif
