#!/usr/bin/env bash
# Builds the physics fuzz target (.mbphysics reader; the C ABI's step inputs on the G1 scene) with
# clang (libFuzzer + ASan + UBSan) and runs it over seeds (the release's table, its truncations, and
# step inputs) for a bounded time; any finding fails. The step half needs MuJoCo and ../shared's scene.
# Usage: run-physics-fuzz.sh WORK_DIR [SECONDS] [SCENE_XML]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-physics-fuzz.sh WORK_DIR [SECONDS] [SCENE_XML]}" "${2:-}"
scene="${3:-$root/../shared/data/upstream/mjcf/scene_43dof.xml}"
if [ ! -f /usr/include/mujoco/mujoco.h ]; then
    echo "skipped: MuJoCo headers absent (apt-get install libmujoco-dev)"
    exit 77
fi
lib=("$root/src/physics/mujoco/mbphysics.cpp" "$root/src/physics/mujoco/session.cpp" "$root/src/physics/mujoco/batch.cpp"
     "$root/src/physics/mujoco/sim-mujoco.cpp" "$root/src/physics/mujoco/collision-prefilter.cpp"
     "$root/src/physics/mujoco/scene-patch.cpp" "$root/src/capi/capi-physics.cpp" "$root/src/capi/capi-error.cpp"
     "$root/src/format/regular-file.cpp" "$root/src/motion/g1.cpp" "$root/src/motion/mjcf.cpp" "$root/src/motion/qpos.cpp"
     "$root/src/motion/motion-rep.cpp")
lib+=("$root"/src/physics/*.cpp)   # the controller's timeline, observations and targets (mb_physics_core)
echo "building $work/physics-fuzz"
clang -O1 -g -fsanitize=address,undefined -fsanitize=fuzzer-no-link -I"$root/src" -c "$root/src/physics/mujoco/mj-guard.c" -o "$work/mj-guard.o"
"$cxx" "${flags[@]}" -I"$root/include" -DMOTIONBRICKS_BUILD -fsanitize=fuzzer "$here/physics-fuzz.cpp" "${lib[@]}" "$work/mj-guard.o" \
    -lmujoco -lcrypto -lpthread -o "$work/physics-fuzz"
fuzz_corpus "$work"
python3 - "$corpus" <<'PY'
import struct, sys, math
out = sys.argv[1]
# .mbphysics: a valid-shaped table (identity rest, axis y, in-range values) and truncations
recs = b''
skel = [1,2,3,4,5,6,8,9,10,11,12,13,15,16,17,18,19,20,21,22,23,24,26,27,28,29,30,31,32]
for j in skel:
    recs += struct.pack('<I', j) + struct.pack('<17d', 0,1,0, 1,0,0,0,1,0,0,0,1, 0.1, 0.25, 40.0, 2.5, 50.0)
open(f'{out}/table', 'wb').write(b'\x00MBSPHY01' + recs)
# step inputs: op, counts, time, then floats (a standing-ish qpos clip of 2 frames)
q = [0, 0, 0.75, 1, 0, 0, 0] + [0.0] * 29
for op, counts in [(1 | 2 | 4, 0), (1 | 2 | 4 | 8, 0), (1, 1), (2 | 4, 2), (1 | 2 | 4, 5)]:
    data = bytes([1, op, counts]) + struct.pack('<d', 0.5) + struct.pack('<72f', *(q + q))
    open(f'{out}/step{op}_{counts}', 'wb').write(data)
PY
fuzz_cut "$corpus/table" 5 9 150 2000 4067
MB_PHYSICS_SCENE="$scene" fuzz_run "$work/physics-fuzz" "$work" "$seconds" 20 8192 2048
