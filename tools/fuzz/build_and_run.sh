#!/usr/bin/env bash
# Builds the fuzz targets with clang (libFuzzer + AddressSanitizer + UBSan) and runs each for
# FUZZ_SECONDS (default 60). Our parser, tokenizer and chat-template sources are compiled into
# the targets (instrumented); the rest of OpenCV comes from build/opencv (tools/fuzz/CMakeLists.txt).
# Usage, from the project root:
#   tools/fuzz/build_and_run.sh [seconds]
# Environment:
#   FUZZ_TARGETS   the targets to build and run (default: all nine, listed in TARGETS below)
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
TARGETS=${FUZZ_TARGETS:-fuzz_gguf fuzz_tokenizer fuzz_chat_template fuzz_kv_cache fuzz_kv_session fuzz_onnx fuzz_onnx_llm fuzz_grammar fuzz_openai_request}
B=${LLM_BUILD_DIR:-build}
SHARED=${LLM_SHARED_TESTDATA:-$ROOT/../shared/testdata}
OUT=$B/fuzz
selected() { [[ " $TARGETS " == *" $1 "* ]]; }
mkdir -p "$OUT/corpus_gguf" "$OUT/corpus_tokenizer" "$OUT/corpus_chat_template" "$OUT/corpus_kv_cache" "$OUT/corpus_kv_session" "$OUT/corpus_onnx" "$OUT/corpus_onnx_llm" "$OUT/corpus_grammar" "$OUT/corpus_openai_request" "$OUT/artifacts"

# The targets are a CMake project of their own (tools/fuzz/CMakeLists.txt) in $OUT/build: Ninja
# rebuilds only what changed since the last run, ccache what another clone compiled already.
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  if [ ! -f "$OUT/build/build.ninja" ]; then
    cmake -S tools/fuzz -B "$OUT/build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DLLM_BUILD_DIR="$(cd "$B" && pwd)" -DFUZZ_OUTPUT_DIR="$(cd "$OUT" && pwd)" > /dev/null
  fi
  cmake --build "$OUT/build" --target $TARGETS
fi
[ "$SECONDS_PER_TARGET" = 0 ] && exit 0

# Seeds: the shared test models (small ones), tokenizer inputs and real chat templates.
cp -n "$SHARED"/stories260K.gguf "$SHARED"/llama.cpp-vocab/ggml-vocab-gpt-2.gguf "$OUT/corpus_gguf/" 2>/dev/null || true
for f in "$SHARED"/llama.cpp-vocab/*.inp; do cp -n "$f" "$OUT/corpus_tokenizer/$(basename "$f")"; done
cp -n tools/fuzz/seeds/chat_template/* "$OUT/corpus_chat_template/"
cp -n tools/fuzz/seeds/grammar/* "$OUT/corpus_grammar/"
cp -n tools/fuzz/seeds/kv_session/* "$OUT/corpus_kv_session/"
cp -n tools/fuzz/seeds/openai_request/* "$OUT/corpus_openai_request/"
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
