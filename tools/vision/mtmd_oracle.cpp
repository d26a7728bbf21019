// This file is part of OpenCV project.
// It is subject to the license terms in the LICENSE file found in the top-level directory
// of this distribution and at http://opencv.org/license.html.

// The llama.cpp side of the vision tests: loads a language model and its mmproj with libmtmd,
// tokenizes a prompt holding <__media__> with one image (a binary PPM, P6), and prints as JSON
// what libmtmd made of it: the chunks (text token ids, image token count), the image's
// embeddings (mtmd_encode_chunk; of every image chunk in order when libmtmd tiles the image),
// the encoder's time (all its chunks), and the greedy ids of the answer
// (mtmd_helper_eval_chunks, then llama_decode one token at a time). With MODE "causal" the
// chunks are decoded by hand instead, the image's embeddings with causal attention (what
// libmtmd does NOT do for gemma3, whose image tokens attend to each other both ways): the
// tests use it to show that they tell the two apart. Built by hand against a llama.cpp build
// (README.md); not part of the project's CMake build.

#include "llama.h"
#include "mtmd.h"
#include "mtmd-helper.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static void fail(const std::string& what)
{
    fprintf(stderr, "mtmd_oracle: %s\n", what.c_str());
    exit(1);
}

// Binary PPM (P6, maxval 255) -> width, height, RGB bytes.
static std::vector<unsigned char> readPPM(const char* path, int& w, int& h)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
        fail(std::string("cannot open ") + path);
    std::string magic;
    int maxval = 0;
    f >> magic >> w >> h >> maxval;
    if (magic != "P6" || w <= 0 || h <= 0 || maxval != 255)
        fail(std::string(path) + ": not a binary PPM with maxval 255");
    f.get();
    std::vector<unsigned char> rgb((size_t)w * h * 3);
    f.read((char*)rgb.data(), (std::streamsize)rgb.size());
    if (!f)
        fail(std::string(path) + ": truncated");
    return rgb;
}

int main(int argc, char** argv)
{
    if (argc < 4)
    {
        fprintf(stderr, "usage: %s MODEL.gguf MMPROJ.gguf IMAGE.ppm [PROMPT] [N_PREDICT] [THREADS] [MODE]\n", argv[0]);
        return 2;
    }
    const char* modelPath = argv[1];
    const char* mmprojPath = argv[2];
    const char* imagePath = argv[3];
    const std::string prompt = argc > 4 ? argv[4] : std::string(mtmd_default_marker()) + "Describe";
    const int nPredict = argc > 5 ? atoi(argv[5]) : 8;
    const int threads = argc > 6 ? atoi(argv[6]) : 1;
    const bool causal = argc > 7 && std::string(argv[7]) == "causal";

    llama_backend_init();
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    mtmd_log_set([](ggml_log_level, const char*, void*) {}, nullptr);

    llama_model_params mp = llama_model_default_params();
    llama_model* model = llama_model_load_from_file(modelPath, mp);
    if (!model)
        fail(std::string("cannot load ") + modelPath);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_ubatch = 256;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.type_k = cp.type_v = GGML_TYPE_F32;  // exact keys and values, as the text oracles
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context* lctx = llama_init_from_model(model, cp);
    if (!lctx)
        fail("cannot create the llama context");

    mtmd_context_params mparams = mtmd_context_params_default();
    mparams.use_gpu = false;
    mparams.print_timings = false;
    mparams.n_threads = threads;
    mparams.warmup = false;
    mparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;  // F32 attention in the encoder
    mtmd_context* mctx = mtmd_init_from_file(mmprojPath, model, mparams);
    if (!mctx)
        fail(std::string("cannot load the mmproj ") + mmprojPath);

    int w = 0, h = 0;
    const std::vector<unsigned char> rgb = readPPM(imagePath, w, h);
    mtmd_bitmap* bitmap = mtmd_bitmap_init((uint32_t)w, (uint32_t)h, rgb.data());

    mtmd_input_text text;
    text.text = prompt.c_str();
    text.text_len = prompt.size();
    text.add_special = true;
    text.parse_special = true;
    mtmd_input_chunks* chunks = mtmd_input_chunks_init();
    const mtmd_bitmap* bitmaps[] = {bitmap};
    if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0)
        fail("mtmd_tokenize failed");

    std::string chunkJson = "[";
    std::vector<float> embd;
    int imageTokens = 0;
    double encodeMs = 0;
    const int nEmbd = llama_model_n_embd(model);
    for (size_t i = 0; i < mtmd_input_chunks_size(chunks); i++)
    {
        const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
        if (i)
            chunkJson += ", ";
        if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT)
        {
            size_t n = 0;
            const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
            chunkJson += "{\"text\": [";
            for (size_t k = 0; k < n; k++)
                chunkJson += (k ? ", " : "") + std::to_string(t[k]);
            chunkJson += "]}";
        }
        else
        {
            // One chunk per image, or per tile and overview (idefics3): their embeddings are
            // concatenated in chunk order, their times (best of 5 each) added up.
            const int n = (int)mtmd_input_chunk_get_n_tokens(c);
            imageTokens += n;
            chunkJson += "{\"image_tokens\": " + std::to_string(n) + ", \"n_pos\": " +
                         std::to_string(mtmd_input_chunk_get_n_pos(c)) + "}";
            double best = 0;
            for (int rep = 0; rep < 5; rep++)
            {
                const auto t0 = std::chrono::steady_clock::now();
                if (mtmd_encode_chunk(mctx, c) != 0)
                    fail("mtmd_encode_chunk failed");
                const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                best = rep == 0 ? ms : std::min(best, ms);
            }
            encodeMs += best;
            const float* e = mtmd_get_output_embd(mctx);
            embd.insert(embd.end(), e, e + (size_t)n * nEmbd);
        }
    }
    chunkJson += "]";

    llama_pos nPast = 0;
    if (!causal)
    {
        if (mtmd_helper_eval_chunks(mctx, lctx, chunks, 0, 0, 256, true, &nPast) != 0)
            fail("mtmd_helper_eval_chunks failed");
    }
    else
    {
        const size_t nChunks = mtmd_input_chunks_size(chunks);
        size_t embdOffset = 0;  // image chunks' embeddings, in chunk order
        for (size_t i = 0; i < nChunks; i++)
        {
            const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
            const bool last = i + 1 == nChunks;
            llama_batch b;
            size_t n = 0;
            if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT)
            {
                const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
                b = llama_batch_init((int)n, 0, 1);
                for (size_t k = 0; k < n; k++)
                    b.token[k] = t[k];
            }
            else
            {
                n = mtmd_input_chunk_get_n_tokens(c);
                b = llama_batch_init((int)n, nEmbd, 1);
                std::copy(embd.begin() + embdOffset, embd.begin() + embdOffset + n * nEmbd, b.embd);
                embdOffset += n * nEmbd;
            }
            b.n_tokens = (int)n;
            for (size_t k = 0; k < n; k++)
            {
                b.pos[k] = nPast + (llama_pos)k;
                b.n_seq_id[k] = 1;
                b.seq_id[k][0] = 0;
                b.logits[k] = last && k + 1 == n;
            }
            llama_set_causal_attn(lctx, true);
            if (llama_decode(lctx, b) != 0)
                fail("llama_decode failed");
            llama_batch_free(b);
            nPast += (llama_pos)n;
        }
    }
    const llama_vocab* vocab = llama_model_get_vocab(model);
    const int nVocab = llama_vocab_n_tokens(vocab);
    std::vector<int> greedy;
    std::vector<float> firstLogits;
    for (int step = 0; step < nPredict; step++)
    {
        const float* logits = llama_get_logits_ith(lctx, -1);
        if (step == 0)
            firstLogits.assign(logits, logits + nVocab);
        int best = 0;
        for (int v = 1; v < nVocab; v++)
            if (logits[v] > logits[best])
                best = v;
        greedy.push_back(best);
        llama_token tok = best;
        llama_batch b = llama_batch_get_one(&tok, 1);
        if (llama_decode(lctx, b) != 0)
            fail("llama_decode failed");
    }

    printf("{\n  \"prompt\": \"%s\",\n  \"n_past\": %d,\n  \"chunks\": %s,\n", prompt.c_str(), (int)nPast,
           chunkJson.c_str());
    printf("  \"image_attention\": \"%s\",\n", causal ? "causal (by hand)" : "as libmtmd decodes it");
    printf("  \"n_embd\": %d,\n  \"image_tokens\": %d,\n  \"encode_ms\": %.3f,\n  \"threads\": %d,\n", nEmbd,
           imageTokens, encodeMs, threads);
    printf("  \"greedy_ids\": [");
    for (size_t i = 0; i < greedy.size(); i++)
        printf("%s%d", i ? ", " : "", greedy[i]);
    printf("],\n  \"first_logits\": [");
    for (size_t i = 0; i < firstLogits.size(); i++)
        printf("%s%.7g", i ? ", " : "", firstLogits[i]);
    printf("],\n  \"embeddings\": [");
    for (size_t i = 0; i < embd.size(); i++)
        printf("%s%.8g", i ? ", " : "", embd[i]);
    printf("]\n}\n");

    mtmd_input_chunks_free(chunks);
    mtmd_bitmap_free(bitmap);
    mtmd_free(mctx);
    llama_free(lctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
