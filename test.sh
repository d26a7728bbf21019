#!/usr/bin/env bash
# Runs the whole test suite (GoogleTest and pytest, through ctest), setting up and building
# first when needed.
set -euo pipefail
cd "$(dirname "$0")"
source tools/build_env.sh
llm_install_packages
llm_install_packages $LLM_TEST_APT_PACKAGES
llm_install_server_test_packages
llm_locate_shared_testdata
llm_fetch_opencv
llm_build
llm_make_demo_model
# --no-tests=error: a suite that ran no test (e.g. a filter that matches none) fails.
ctest --test-dir build --output-on-failure --no-tests=error "$@"
