#!/usr/bin/env bash
# Sets everything up and runs the main job: installs Debian packages, fetches OpenCV 4.10.0's
# source (Debian's tarball, checksum verified), builds OpenCV with our extension into build/,
# then runs the demo. Safe to run again: a built tree only re-checks and rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")"
source tools/build_env.sh
llm_install_packages
llm_fetch_opencv
llm_build
llm_make_demo_model
llm_run_demo
