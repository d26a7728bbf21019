#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer: configures and builds the whole project
# (OpenCV with our code in opencv_dnn, tests, samples) with -DLLM_SANITIZE=ON in build-asan/,
# then runs every test through ctest. See doc/robustness.md, "Sanitizers".
#
#   tools/sanitize/run.sh                    # configure + build + ctest --output-on-failure
#   tools/sanitize/run.sh -R python_tests    # arguments go to ctest
#   SANITIZE_NO_TEST=1 tools/sanitize/run.sh # configure + build only
#
# LLM_ASAN_BUILD_DIR: the build folder (default build-asan). A cold build compiles OpenCV
# again (ccache does not share objects with build/: the flags differ).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/build_env.sh
build_dir="${LLM_ASAN_BUILD_DIR:-$LLM_ROOT/build-asan}"

llm_install_packages
llm_fetch_opencv
args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLLM_SANITIZE=ON)
if [ -n "${OPENCV_SOURCE_DIR:-}" ]; then
  args+=(-DOPENCV_SOURCE_DIR="$OPENCV_SOURCE_DIR")
else
  args+=(-DOPENCV_TARBALL="$LLM_CACHE_DIR/$OPENCV_TARBALL_NAME")
fi
cmake -S "$LLM_ROOT" -B "$build_dir" "${args[@]}"
cmake --build "$build_dir"
[ -n "${SANITIZE_NO_TEST:-}" ] && exit 0

# ctest sets ASAN_OPTIONS / UBSAN_OPTIONS for every test (cmake/tests.cmake) and
# LD_PRELOAD of the runtimes for the Python tests. Any sanitizer report fails its test.
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error "$@"
