// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// libmtmd's preprocessors (mtmd_image_preprocessor_llava_uhd for llava-1.6's
// image_grid_pinpoints, mtmd_image_preprocessor_idefics3, and the fixed-size one of llava
// without pinpoints and gemma3; exported by libmtmd) against ours
// (modules/dnn/src/llm/vision/image_preprocess.cpp compiled in), value by value on the
// normalized tiles and overview of each PPM image given. Built by hand (README.md); not part of
// the project's CMake build:
//
//     mtmd_preprocess_check MMPROJ.gguf llava|idefics3|fixed|gemma3 IMAGE.ppm...
//
// llava: llava-1.6's tiles (the file has pinpoints); fixed: llava without pinpoints; gemma3:
// the fixed-size preprocessor with gemma3's settings.
#include "mtmd-image.h"
#include "clip.h"
#include <opencv2/imgproc.hpp>
#include "image_preprocess.hpp"
#include <cstdio>
#include <fstream>
using namespace cv;
using namespace cv::dnn::llm;

static std::vector<unsigned char> readPPM(const char* path, int& w, int& h)
{
    std::ifstream f(path, std::ios::binary);
    std::string magic; int maxval;
    f >> magic >> w >> h >> maxval; f.get();
    std::vector<unsigned char> rgb((size_t)w * h * 3);
    f.read((char*)rgb.data(), rgb.size());
    return rgb;
}

static double maxDiff(const clip_image_f32& a, const Mat& blob)
{
    const int S = blob.size[2];
    if (a.nx() != S || a.ny() != S) { printf("size mismatch %d x %d vs %d\n", a.nx(), a.ny(), S); return 1e9; }
    const auto& buf = a.get_ro_buf();
    double m = 0;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++)
                m = std::max(m, (double)std::abs(buf[(y * S + x) * 3 + c] - blob.ptr<float>(0, c)[y * S + x]));
    return m;
}

int main(int argc, char** argv)
{
    if (argc < 4)
    {
        fprintf(stderr, "usage: %s MMPROJ.gguf llava|idefics3|fixed|gemma3 IMAGE.ppm...\n", argv[0]);
        return 2;
    }
    const char* mmproj = argv[1];
    const std::string mode = argv[2];
    const bool idefics3 = mode == "idefics3", fixed = mode == "fixed" || mode == "gemma3";
    clip_context_params cp{};
    cp.use_gpu = false;
    auto res = clip_init(mmproj, cp);
    clip_ctx* ctx = res.ctx_v;
    const clip_hparams& h = *clip_get_hparams(ctx);
    VisionHyperParameters hp;
    hp.projector = idefics3 ? VisionProjector::Idefics3 : mode == "gemma3" ? VisionProjector::Gemma3 : VisionProjector::Mlp;
    hp.imageSize = h.image_size; hp.patchSize = h.patch_size; hp.longestEdge = h.image_longest_edge;
    for (int c = 0; c < 3; c++) { hp.imageMean[c] = h.image_mean[c]; hp.imageStd[c] = h.image_std[c]; }
    for (auto& r : h.image_res_candidates) hp.gridPinpoints.push_back(Size(r.width, r.height));
    bool bad = false;
    for (int i = 3; i < argc; i++)
    {
        int w, hh; auto rgb = readPPM(argv[i], w, hh);
        clip_image_u8 img; img.set_size({w, hh}, false); img.cpy_buf(rgb);
        if (fixed)
        {
            mtmd_image_preproc_out out = mtmd_image_preprocessor_fixed_size(ctx).preprocess(img);
            Mat rgbm(hh, w, CV_8UC3, rgb.data()), bgr;
            cvtColor(rgbm, bgr, COLOR_RGB2BGR);
            const double m = out.entries.size() == 1 ? maxDiff(out.entries[0], preprocessImage(bgr, hp)) : 1e9;
            printf("%s: max |libmtmd - ours|: %g\n", argv[i], m);
            bad = bad || m != 0;
            continue;
        }
        mtmd_image_preproc_out out;
        if (idefics3) out = mtmd_image_preprocessor_idefics3(ctx).preprocess(img);
        else out = mtmd_image_preprocessor_llava_uhd(ctx).preprocess(img);
        Mat rgbm(hh, w, CV_8UC3, rgb.data()), bgr; cvtColor(rgbm, bgr, COLOR_RGB2BGR);
        ImageTiles ours = idefics3 ? preprocessIdefics3(bgr, hp) : preprocessLlavaTiles(bgr, hp);
        printf("%s: grid %d x %d (ours %d x %d), tiles %zu (ours %zu)\n", argv[i], out.grid_y, out.grid_x, ours.rows, ours.cols, out.entries.size(), ours.tiles.size());
        double m = maxDiff(out.overview, ours.overview);
        for (size_t t = 0; t < std::min(out.entries.size(), ours.tiles.size()); t++) m = std::max(m, maxDiff(out.entries[t], ours.tiles[t]));
        printf("  max |libmtmd - ours| over all tiles and the overview: %g\n", m);
        if (m != 0 || out.entries.size() != ours.tiles.size() || out.grid_x != ours.cols || out.grid_y != ours.rows)
            bad = true;
    }
    printf(bad ? "DIFFERENT\n" : "IDENTICAL\n");
    return bad ? 1 : 0;
}
