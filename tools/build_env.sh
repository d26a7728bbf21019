# Shared steps of setup.sh and test.sh (sourced, not run).

LLM_ROOT="$(pwd)"
LLM_BUILD_DIR="${LLM_BUILD_DIR:-$LLM_ROOT/build}"
# The OpenCV tarball is kept outside the tree so that fresh clones do not download it again.
LLM_CACHE_DIR="${LLM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/opencv-dnn-llm}"
OPENCV_TARBALL_NAME="opencv_4.10.0+dfsg.orig.tar.xz"
OPENCV_TARBALL_SHA256="4ca619efbad524c550771ab110332fc81293fb720bd03980fe58bc15f9ca3be8"
LLM_APT_PACKAGES="cmake ninja-build g++ ccache patch xz-utils dpkg-dev ca-certificates
  libprotobuf-dev protobuf-compiler zlib1g-dev libgtest-dev libpcre2-dev nlohmann-json3-dev libpng-dev libjpeg-dev
  libeigen3-dev libcpp-httplib-dev libssl-dev pkg-config
  python3 python3-dev python3-numpy python3-pytest python3-onnx"
# test.sh also needs clang with libFuzzer and the sanitizer runtimes (ctest sanitized_fuzz_smoke),
# Python's jinja2, which renders the chat templates' expected strings (make_chat_template_reference),
# Debian's torch, which exports the Hugging Face style test decoders (make_onnx_llm_models: hf_*),
# and jsonschema, the independent validator of the grammar tests' JSON (test/python/test_grammar.py).
# The server tests (test/server) drive llm_server with curl, nginx, chromium and node's openai SDK.
LLM_TEST_APT_PACKAGES="clang libclang-rt-14-dev python3-jinja2 python3-torch python3-jsonschema
  curl iproute2 nginx-light chromium"

# The shared test data lies beside the project (../shared/testdata). A clone made elsewhere (e.g.
# `git clone . "$(mktemp -d)"`) finds it beside the repository it was cloned from; or set
# LLM_SHARED_TESTDATA. The tests read it from LLM_SHARED_TESTDATA.
llm_locate_shared_testdata() {
  local d="${LLM_SHARED_TESTDATA:-$LLM_ROOT/../shared/testdata}" origin
  if [ ! -d "$d" ]; then
    origin="$(git -C "$LLM_ROOT" config --get remote.origin.url 2>/dev/null || true)"
    [ -n "$origin" ] && [ -d "$origin/../shared/testdata" ] && d="$origin/../shared/testdata"
  fi
  if [ ! -d "$d" ]; then
    echo "error: the shared test data is not at $LLM_ROOT/../shared/testdata (nor beside the repository" \
         "this one was cloned from); set LLM_SHARED_TESTDATA to its folder" >&2
    exit 1
  fi
  LLM_SHARED_TESTDATA="$(cd "$d" && pwd)"
  export LLM_SHARED_TESTDATA
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Installs the Debian packages named (default: the build's) that are not installed yet.
llm_install_packages() {
  local missing=""
  for p in ${*:-$LLM_APT_PACKAGES}; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "== installing Debian packages:$missing"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
  fi
}

llm_fetch_opencv() {
  [ -n "${OPENCV_SOURCE_DIR:-}" ] && return 0
  local tarball="$LLM_CACHE_DIR/$OPENCV_TARBALL_NAME"
  if [ -f "$tarball" ] && echo "$OPENCV_TARBALL_SHA256  $tarball" | sha256sum -c --status; then
    return 0
  fi
  echo "== fetching OpenCV 4.10.0 source (Debian trixie's opencv source package)"
  mkdir -p "$LLM_CACHE_DIR"
  local list=/etc/apt/sources.list.d/opencv-dnn-llm-trixie-src.sources
  if [ ! -f "$list" ]; then
    as_root tee "$list" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    as_root apt-get update -q
  fi
  # --tar-only: the .dsc may be missing from the mirror; we need only the upstream tarball.
  (cd "$LLM_CACHE_DIR" && apt-get source --download-only --tar-only opencv/trixie >/dev/null 2>&1) || true
  rm -f "$LLM_CACHE_DIR"/opencv_*contrib*.tar.xz
  if ! echo "$OPENCV_TARBALL_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
    echo "error: could not fetch $OPENCV_TARBALL_NAME with sha256 $OPENCV_TARBALL_SHA256 into $LLM_CACHE_DIR" >&2
    echo "       (or set OPENCV_SOURCE_DIR to your own patched OpenCV 4.10 tree)" >&2
    exit 1
  fi
}

llm_build() {
  local args=(-G Ninja -DCMAKE_BUILD_TYPE=Release)
  if [ -n "${OPENCV_SOURCE_DIR:-}" ]; then
    args+=(-DOPENCV_SOURCE_DIR="$OPENCV_SOURCE_DIR")
  else
    args+=(-DOPENCV_TARBALL="$LLM_CACHE_DIR/$OPENCV_TARBALL_NAME")
  fi
  # build.ninja, not CMakeCache.txt: a configure that failed half-way (e.g. the tarball missing)
  # leaves a cache without a build file, and must run again.
  if [ ! -f "$LLM_BUILD_DIR/build.ninja" ]; then
    echo "== configuring (a cold build of OpenCV takes ~13 minutes on 2 cores; warm: about a minute)"
    cmake -S "$LLM_ROOT" -B "$LLM_BUILD_DIR" "${args[@]}"
  fi
  cmake --build "$LLM_BUILD_DIR"
}

# The project's demo model is committed (made by the project's own tools/demo_model); a checkout
# without it trains it again (about 4 minutes on one core; Debian's torch and OpenBLAS).
LLM_DEMO_MODEL="$LLM_ROOT/models/demo/demo-stories.gguf"
llm_make_demo_model() {
  [ -f "$LLM_DEMO_MODEL" ] && return 0
  llm_install_packages python3-torch libopenblas0-pthread
  echo "== training the demo model (tools/demo_model; a few minutes, once)"
  /usr/bin/python3 "$LLM_ROOT/tools/demo_model/train_demo_model.py" --out "$LLM_DEMO_MODEL" \
    --log "$LLM_BUILD_DIR/demo-stories.train.json"
}

llm_run_demo() {
  local bin="$LLM_BUILD_DIR/bin"
  local model="$LLM_DEMO_MODEL"  # trained by this project: tools/demo_model
  echo "== llm_generate: greedy continuation by the project's demo model ($model)"
  "$bin/llm_generate" --model="$model" --prompt="Once upon a time" --max-new-tokens=64
  echo "== llm_generate: sampled (temperature 0.8, top-p 0.95, seed 7)"
  "$bin/llm_generate" --model="$model" --prompt="One day, Tom the cat" --max-new-tokens=64 \
    --temperature=0.8 --top-p=0.95 --seed=7
  echo "== llm_chatbot, non-interactive (the demo model's chat template, two turns)"
  printf 'Tell me a story about a cat.\nHello!\n' | "$bin/llm_chatbot" --model="$model" --max-new-tokens=120
  echo "== next: build/bin/llm_chatbot --model=<a GGUF of an architecture README.md lists, e.g. tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf>"
}

# The server tests' npm packages (test/server/package.json: the openai SDK, puppeteer-core) into
# test/server/node_modules, from the lock file; again only when the lock file changed. Node and
# npm come from Debian unless a node is already installed (e.g. NodeSource's, which carries npm).
llm_install_server_test_packages() {
  command -v npm >/dev/null 2>&1 || llm_install_packages nodejs npm
  local dir="$LLM_ROOT/test/server"
  if [ ! -f "$dir/node_modules/.package-lock.json" ] || ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.llm-lock"; then
    echo "== installing the server tests' npm packages (test/server/package.json)"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) && cp "$dir/package-lock.json" "$dir/node_modules/.llm-lock"
  fi
}
