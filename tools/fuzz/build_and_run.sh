#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer + UBSan) and runs each for
# FUZZ_SECONDS (default 60). Our parser, tokenizer and chat-template sources are compiled into
# the targets (instrumented); the rest of OpenCV comes from build/opencv. Usage, from the
# project root:
#   tools/fuzz/build_and_run.sh [seconds]
# Environment:
#   FUZZ_TARGETS   the targets to build and run (default: all eight, listed in TARGETS below)
#   FUZZ_NO_BUILD  1: run the targets already built in build/fuzz
#   LLM_BUILD_DIR  the project's build folder (default build)
# Exits non-zero when a target fails (crash, sanitizer report, leak, timeout): ctest's
# sanitized_fuzz_smoke runs it for a few seconds per target (test/tests.cmake).
# A seconds value of 0 builds without running. Each run's full log is build/fuzz/<target>.log;
# crashing inputs land in build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECONDS_PER_TARGET=${1:-${FUZZ_SECONDS:-60}}
TARGETS=${FUZZ_TARGETS:-fuzz_gguf fuzz_tokenizer fuzz_chat_template fuzz_kv_cache fuzz_kv_session fuzz_onnx fuzz_onnx_llm fuzz_grammar}
B=${LLM_BUILD_DIR:-build}
SHARED=${LLM_SHARED_TESTDATA:-$ROOT/../shared/testdata}
OUT=$B/fuzz
SRC=$B/opencv-src/modules/dnn/src
# ccache makes rebuilds in a fresh clone cheap (paths relative to the project root).
CXX=(clang++)
if command -v ccache > /dev/null; then
  export CCACHE_BASEDIR="$ROOT"
  CXX=(ccache clang++)
fi
mkdir -p "$OUT/corpus_gguf" "$OUT/corpus_tokenizer" "$OUT/corpus_chat_template" "$OUT/corpus_kv_cache" "$OUT/corpus_kv_session" "$OUT/corpus_onnx" "$OUT/corpus_onnx_llm" "$OUT/corpus_grammar" "$OUT/artifacts"
# -msse3: OpenCV's baseline on x86-64 (SSE, SSE2, SSE3), which the universal intrinsics of our
# kernels' baseline code may use (v_reduce_sum4).
BASELINE=()
[ "$(uname -m)" = x86_64 ] && BASELINE=(-msse3)
CXXFLAGS=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined "${BASELINE[@]}"
  -D__OPENCV_BUILD=1 -DHAVE_PROTOBUF=1
  -I $B/opencv-src/modules/core/include -I $B/opencv-src/modules/dnn/include
  -I $B/opencv-src/modules/imgproc/include -I $B/opencv -I $B/opencv/modules/dnn -I "$SRC")
LIBS=(-L $B/opencv/lib -lopencv_dnn -lopencv_imgproc -lopencv_core -Wl,-rpath,"$(cd "$B/opencv/lib" && pwd)" -lpcre2-8)

# The KV cache and the Net state that plans each forward (used by both model builders).
KV_CACHE_SOURCES=("$SRC"/llm/kv_cache/*.cpp "$SRC"/llm/net/net_assembly.cpp "$SRC"/llm/net/llm_net_state.cpp
  "$SRC"/llm/net/load_options.cpp)

selected() { [[ " $TARGETS " == *" $1 "* ]]; }

if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  if selected fuzz_gguf; then
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_gguf" tools/fuzz/fuzz_gguf.cpp \
      "$SRC"/llm/gguf/gguf_model_file.cpp "$SRC"/llm/common/mapped_file.cpp "$SRC"/llm/ggml/ggml_types.cpp \
      "$SRC"/llm/gguf/gguf_net_builder.cpp "$SRC"/llm/gguf/gguf_hyper_parameters.cpp "${KV_CACHE_SOURCES[@]}" \
      "$SRC"/llm/attention/rotary_embedding.cpp "${LIBS[@]}"
  fi
  if selected fuzz_tokenizer; then
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_tokenizer" tools/fuzz/fuzz_tokenizer.cpp \
      "$SRC"/llm/tokenizer/*.cpp "$SRC"/llm/gguf/gguf_model_file.cpp "$SRC"/llm/common/*.cpp \
      "$SRC"/llm/ggml/ggml_types.cpp "${LIBS[@]}"
  fi
  if selected fuzz_kv_cache; then
    # The attention kernels are dispatched by CPU features: their AVX2 copy is compiled as
    # OpenCV's build compiles it (the generated build/opencv/.../attention_kernels.avx2.cpp).
    GEN=$B/opencv/modules/dnn/llm/attention
    AVX2=(-mavx2 -mfma -mf16c -mpopcnt -msse4.2 -DCV_CPU_DISPATCH_MODE=AVX2 -DCV_CPU_COMPILE_AVX2=1
      -DCV_CPU_COMPILE_AVX=1 -DCV_CPU_COMPILE_FMA3=1 -DCV_CPU_COMPILE_FP16=1 -DCV_CPU_COMPILE_POPCNT=1
      -DCV_CPU_COMPILE_SSE4_1=1 -DCV_CPU_COMPILE_SSE4_2=1 -DCV_CPU_COMPILE_SSSE3=1)
    AVX512=(-mavx512f -mavx512cd -mavx512vl -mavx512bw -mavx512dq "${AVX2[@]/AVX2/AVX512_SKX}"
      -DCV_CPU_COMPILE_AVX_512F=1 -DCV_CPU_COMPILE_AVX512_COMMON=1 -DCV_CPU_COMPILE_AVX512_SKX=1)
    "${CXX[@]}" "${CXXFLAGS[@]}" "${AVX2[@]}" -c -o "$OUT/attention_kernels.avx2.o" "$GEN/attention_kernels.avx2.cpp"
    "${CXX[@]}" "${CXXFLAGS[@]}" "${AVX512[@]}" -c -o "$OUT/attention_kernels.avx512.o" "$GEN/attention_kernels.avx512_skx.cpp"
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_kv_cache" tools/fuzz/fuzz_kv_cache.cpp \
      "$SRC"/llm/kv_cache/*.cpp "$SRC"/llm/attention/paged_attention.cpp \
      "$SRC"/llm/attention/attention_kernels.dispatch.cpp "$OUT/attention_kernels.avx2.o" \
      "$OUT/attention_kernels.avx512.o" "$SRC"/llm/attention/rotary_embedding.cpp "${LIBS[@]}"
  fi
  if selected fuzz_kv_session; then
    # The sequence file's parser and PagedKVCache's loader (kv_sequence_file.cpp), instrumented.
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_kv_session" tools/fuzz/fuzz_kv_session.cpp \
      "$SRC"/llm/kv_cache/*.cpp "${LIBS[@]}"
  fi
  if selected fuzz_onnx; then
    # Our layers run from build/opencv (not instrumented); the importer and protobuf are OpenCV's.
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_onnx" tools/fuzz/fuzz_onnx.cpp "${LIBS[@]}"
  fi
  if selected fuzz_onnx_llm; then
    # Our ONNX language-model importer, compiled in with its own copy of the ONNX message
    # classes: libopencv_dnn's copy is hidden, and a second registration of opencv-onnx.proto
    # (package opencv_onnx) in libprotobuf's generated pool aborts at start-up. So the target's
    # copy is generated from the same .proto under another file name and package
    # (opencv_onnx_fuzz, which -Dopencv_onnx=... makes our sources use), by the system protoc
    # that matches the libprotobuf OpenCV links.
    PROTO=$OUT/onnx_llm_proto
    mkdir -p "$PROTO"
    sed 's/^package opencv_onnx;/package opencv_onnx_fuzz;/' $B/opencv-src/modules/dnn/src/onnx/opencv-onnx.proto \
      > "$PROTO/fuzz-opencv-onnx.proto"
    protoc --proto_path="$PROTO" --cpp_out="$PROTO" "$PROTO/fuzz-opencv-onnx.proto"
    printf '#include "fuzz-opencv-onnx.pb.h"\n' > "$PROTO/opencv-onnx.pb.h"
    "${CXX[@]}" -I "$PROTO" "${CXXFLAGS[@]}" -Dopencv_onnx=opencv_onnx_fuzz -o "$OUT/fuzz_onnx_llm" \
      tools/fuzz/fuzz_onnx_llm.cpp "$SRC"/llm/onnx/onnx_model_file.cpp "$SRC"/llm/onnx/onnx_llm_importer.cpp "$SRC"/llm/onnx/onnx_import_*.cpp "$SRC"/llm/onnx/onnx_derived_values.cpp "$SRC"/llm/onnx/decoder_graph.cpp \
      "$SRC"/llm/onnx/matmul_nbits.cpp "$SRC"/llm/onnx/genai_config.cpp "$SRC"/llm/common/json_document.cpp "$SRC"/llm/common/mapped_file.cpp \
      "$SRC"/llm/ggml/ggml_types.cpp "${KV_CACHE_SOURCES[@]}" "$SRC"/llm/attention/rotary_embedding.cpp \
      "$PROTO/fuzz-opencv-onnx.pb.cc" "${LIBS[@]}" -lprotobuf
  fi
  if selected fuzz_chat_template; then
    # The family code and the Jinja engine with what it uses (JSON reading, UTF-8, Unicode tables).
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_chat_template" tools/fuzz/fuzz_chat_template.cpp \
      "$SRC"/llm/generation/chat_template.cpp "$SRC"/llm/generation/chat_template_api.cpp "$SRC"/llm/jinja/*.cpp \
      "$SRC"/llm/common/json_document.cpp "$SRC"/llm/common/utf8.cpp "$SRC"/llm/common/unicode_tables.cpp \
      "${LIBS[@]}"
  fi
  if selected fuzz_grammar; then
    # The GBNF parser, the matcher, the token trie and the JSON-schema converter (with JSON reading).
    "${CXX[@]}" "${CXXFLAGS[@]}" -o "$OUT/fuzz_grammar" tools/fuzz/fuzz_grammar.cpp "$SRC"/llm/grammar/*.cpp \
      "$SRC"/llm/common/json_document.cpp "${LIBS[@]}"
  fi
fi
[ "$SECONDS_PER_TARGET" = 0 ] && exit 0

# Seeds: the shared test models (small ones), tokenizer inputs and real chat templates.
cp -n "$SHARED"/stories260K.gguf "$SHARED"/llama.cpp-vocab/ggml-vocab-gpt-2.gguf "$OUT/corpus_gguf/" 2>/dev/null || true
for f in "$SHARED"/llama.cpp-vocab/*.inp; do cp -n "$f" "$OUT/corpus_tokenizer/$(basename "$f")"; done
cp -n tools/fuzz/seeds/chat_template/* "$OUT/corpus_chat_template/"
cp -n tools/fuzz/seeds/grammar/* "$OUT/corpus_grammar/"
cp -n tools/fuzz/seeds/kv_session/* "$OUT/corpus_kv_session/"
# The shared real chat templates, each after an options byte (add_generation_prompt, tools) and
# followed by a short conversation.
for f in "$SHARED"/chat-templates/*.jinja; do
  seed="$OUT/corpus_chat_template/seed_$(basename "$f" .jinja)"
  [ -e "$seed" ] || { printf '\003'; cat "$f"; printf '\fsystem\fBe brief.\fuser\fHello!\fassistant\fHi.\fuser\fBye'; } > "$seed"
done 2>/dev/null || true
cp -n $B/test-models/*.onnx "$OUT/corpus_onnx/" 2>/dev/null || true  # made by the test fixtures
# Tiny builder-style decoders (1 layer, hidden 32, vocab 32, under 60 KB each), made here: each
# as model.onnx alone and framed after its genai_config.json (see fuzz_onnx_llm.cpp).
if selected fuzz_onnx_llm && [ ! -e "$OUT/corpus_onnx_llm/seed_gqa-rotary.onnx" ]; then
  SEEDTMP=$(mktemp -d)
  while read -r name args; do
    /usr/bin/python3 tools/onnx/make_builder_style_model.py --out "$SEEDTMP/$name" --layers 1 --hidden 32 \
      --heads 2 --kv-heads 1 --ffn 32 --vocab 32 --context-length 16 $args > /dev/null
    cp "$SEEDTMP/$name/model.onnx" "$OUT/corpus_onnx_llm/seed_$name.onnx"
    { cat "$SEEDTMP/$name/genai_config.json"; printf '\n--model.onnx--\n'; cat "$SEEDTMP/$name/model.onnx"; } \
      > "$OUT/corpus_onnx_llm/seed_${name}_config"
  done <<'SEEDS'
gqa-rotary --attention gqa-rotary
gqa --attention gqa
mha --attention mha --kv-heads 2
mha-fp16 --attention mha --kv-heads 2 --precision fp16
packed-qkv --attention gqa-rotary --packed-qkv
qkv-bias-gptj --attention gqa --qkv-bias --rotary-interleaved 1 --rotary-dim 8
nbits4-b16 --bits 4 --block-size 16
nbits4-b32-flat --bits 4 --block-size 32 --flat-quant-params
nbits8-b32-zp --bits 8 --block-size 32 --zero-points
SEEDS
  rm -rf "$SEEDTMP"
fi

export FUZZ_VOCAB_DIR="$SHARED/llama.cpp-vocab"
failed=""
for target in $TARGETS; do
  extra=()
  [ -f "tools/fuzz/${target#fuzz_}.dict" ] && extra+=(-dict="tools/fuzz/${target#fuzz_}.dict")
  echo "== $target for ${SECONDS_PER_TARGET}s"
  status=0
  "$OUT/$target" "$OUT/corpus_${target#fuzz_}" -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 \
    -rss_limit_mb=4096 -timeout=20 -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$target-" \
    "${extra[@]}" > "$OUT/$target.log" 2>&1 || status=$?
  grep -E "^(stat::|#[0-9]+[[:space:]]+DONE|Done [0-9]+ runs|==[0-9]+==ERROR|SUMMARY|.*Test unit written)" "$OUT/$target.log" || true
  [ "$status" = 0 ] || failed="$failed $target"
done
# A crash, a sanitizer report, a leak or a timeout makes the fuzzer exit non-zero: so does this.
if [ -n "$failed" ]; then
  echo "fuzz targets that failed:$failed (inputs in $OUT/artifacts, logs in $OUT/<target>.log)"
  exit 1
fi
