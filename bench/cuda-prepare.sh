#!/usr/bin/env bash
# prepares this checkout for one GPU-machine call of bench/cuda-quick.sh: configures and builds
# build/gpu (CUDA on; no OpenBLAS, ZeroMQ or MuJoCo, which the GPU image lacks), packs its programs
# and the fixtures into .gpu/ (bench/cuda-pack.sh), and, given the git directory of an
# NVlabs/GR00T-WholeBodyControl snapshot (the fetch tool's), puts its motionbricks/ folder at
# .gpu/upstream for the same-run upstream comparison. Needs scripts/bootstrap.sh's packages and nvcc.
# usage: bench/cuda-prepare.sh [UPSTREAM_GIT_DIR] [SHARED_DIR (default ../shared)]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p /tmp/nopc .gpu
PKG_CONFIG_LIBDIR=/tmp/nopc cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMB_CUDA=ON \
    -DMB_SHARED_DIR="$PWD/.gpu/shared" -DMB_MUJOCO=OFF -DMB_ZMQ=OFF -DMB_PYTHON=python3 > /tmp/cuda-prepare-cfg.log
cmake --build build/gpu -j"$(nproc)" --target motionbricks motionbricks_shared cuda-run test-cuda-backend test-backend-ops test-root-planner \
    test-pose-planner test-vq-decoder test-predict test-predict-batch test-agent
PACK_FIXTURES='agent-small reference-small' bash bench/cuda-pack.sh build/gpu "${2:-$PWD/../shared}"
if [ -n "${1:-}" ]; then
    rm -rf .gpu/upstream && mkdir -p .gpu/upstream
    # (a snapshot may lack large files outside motionbricks/: git archive says so and goes on)
    git --git-dir="$1" archive HEAD motionbricks | tar -x -C .gpu/upstream
    [ -d .gpu/upstream/motionbricks/motionbricks ] || { echo "cuda-prepare: no motionbricks/ in $1" >&2; exit 1; }
fi
du -sh .gpu
