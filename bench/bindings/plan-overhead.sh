#!/usr/bin/env bash
# Overhead of the Python Agent.plan and the Go Agent.Plan over the bare mb_agent_plan call, median
# microseconds, on a small bundle of random weights (tools/convert.py random-bundle --preset small).
#   bash bench/bindings/plan-overhead.sh [BUILD_DIR] [PLANS]      (default build/release, 500)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build/release}" && pwd)"
plans="${2:-500}"
lib="$build/src/capi"
work="$build/bench-bindings"
mkdir -p "$work"
py=/usr/bin/python3
[ -d "$work/small" ] || "$py" "$root/tools/convert.py" random-bundle --preset small --seed 1 --out "$work/small" >/dev/null
[ -d "$work/styles" ] || "$py" "$root/tools/convert.py" demo-styles --out "$work/styles" >/dev/null
MOTIONBRICKS_LIBRARY="$lib/libmotionbricks.so" "$py" "$root/bench/bindings/plan_overhead.py" \
    "$work/small" "$work/styles/walk.mbstyle" "$plans"
cd "$root/bindings/go"
GOCACHE="$work/gocache" GOPATH="$work/gopath" GOTOOLCHAIN=local GOPROXY=off GOFLAGS= \
CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib" MB_GO_BUNDLE="$work/small" MB_GO_STYLE="$work/styles/walk.mbstyle" \
MB_BENCH_PLANS="$plans" go test -count=1 -run TestPlanOverhead -v . | grep -E '^\s+bench_test.go|^(ok|FAIL)'
