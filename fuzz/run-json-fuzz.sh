#!/usr/bin/env bash
# Builds the text-reader fuzz target (WebSocket client messages, infer requests, plan scripts, the
# release MANIFEST.json, download URLs) with
# clang (libFuzzer + ASan + UBSan) and runs it over seeds for a bounded time; any finding fails.
# Usage: run-json-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-json-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
src=("$root/src/tools/serve/protocol.cpp" "$root/src/tools/cli/infer-request.cpp" "$root/src/tools/cli/plan-script.cpp"
     "$root/src/tools/download/download.cpp" "$root/src/format/sha256.cpp" "$root/src/format/json-bounded.cpp")
echo "building $work/json-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/json-fuzz.cpp" "${src[@]}" -lssl -lcrypto -pthread -o "$work/json-fuzz"

# seeds: one valid text per reader (byte 0 picks it), and truncations
fuzz_corpus "$work"
printf '\000{"type":"control","seq":3,"style":"walk","move":[0.5,0.5],"facing":[0,1]}' > "$corpus/control"
printf '\000{"type":"ping"}' > "$corpus/ping"
printf '\000{"type":"physics","seq":9007199254740991,"enabled":true}' > "$corpus/physics"
printf '\003{"format":"motionbricks-gguf-distribution-v1","files":[{"path":"styles/walk.mbstyle","bytes":12,"sha256":"%s"}]}' "$(printf 'a%.0s' {1..64})" > "$corpus/manifest"
printf '\004https://huggingface.co' > "$corpus/url-https"
printf '\004http://127.0.0.1:8080' > "$corpus/url-loopback"
printf '\002[{"frames":30,"style":"walk","movement":[0,1],"facing":[0,1],"speed":1.2,"seed":7},{"frames":5,"style":"idle","target":[1,2],"target_heading":0.5}]' > "$corpus/script"
{
    printf '\001{"format":"motionbricks-inference-request-v1",'
    row() { local n=$1 s="[0" i; for ((i = 1; i < n; ++i)); do s+=",0"; done; printf '%s]' "$s"; }
    mat() { local r=$1 c=$2 i; printf '['; for ((i = 0; i < r; ++i)); do [ $i -gt 0 ] && printf ','; row "$c"; done; printf ']'; }
    printf '"global_root":'; mat 8 5
    printf ',"local_root":'; mat 8 4
    printf ',"poses":'; mat 8 303
    printf ',"global_root_mask":[1,1,1,1,1,1,1,1],"local_root_mask":[1,1,1,0,1,1,1,1],"pose_mask":[1,1,1,1,1,1,1,1]'
    printf ',"num_tokens":null,"allowed_num_tokens":[1,1,1,1,1,1,1,1,1,1,1],"sampling":"argmax","seed":1'
    printf ',"gumbel_uniforms":null,"num_inference_steps":1,"skip_ending_target_cond":false,"allow_out_of_reach":false}'
} > "$corpus/request"
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 2 10 $((size / 2)) $((size - 1))
done

# inputs up to the largest reader bound (plan scripts, 8 MiB) plus the selector byte, and seeds
# at the bounds: 64 MiB of '[' took 5 GB before the readers were bounded (about 80 bytes of
# DOM per byte of text), which a 512 MB limit on an 8 MiB input catches
head -c $((4 << 20)) /dev/zero | tr '\0' '[' | { printf '\001'; cat; } > "$corpus/request-deep"
head -c $((8 << 20)) /dev/zero | tr '\0' '[' | { printf '\002'; cat; } > "$corpus/script-deep"
fuzz_run "$work/json-fuzz" "$work" "$seconds" 10 $(((8 << 20) + 1)) 512
