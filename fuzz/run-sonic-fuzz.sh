#!/usr/bin/env bash
# Builds the SONIC fuzz target (.mbsonic reader, SONIC GGUF loader) with clang (libFuzzer + ASan +
# UBSan) and runs it over seeds (a 1-sample .mbsonic, the reduced-width SONIC GGUF converted from
# fixtures/sonic/onnx-small when ../shared and python3-onnx are present, and truncations) for a
# bounded time; any finding fails.
# Usage: run-sonic-fuzz.sh WORK_DIR [SECONDS] [PYTHON]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-sonic-fuzz.sh WORK_DIR [SECONDS] [PYTHON]}" "${2:-}"
py="${3:-python3}"
lib=("$root/src/format/mbsonic.cpp" "$root/src/format/gguf.cpp" "$root/src/format/tensor-names.cpp"
     "$root/src/format/sha256.cpp" "$root/src/format/tensor.cpp" "$root/src/format/regular-file.cpp"
     "$root/src/sonic/sonic-model.cpp" "$root/src/model/layers.cpp" "$root/src/backend/backend.cpp"
     "$root/src/backend/backend-select.cpp" "$root/src/backend/cpu/cpu-backend.cpp" "$root/src/backend/cpu/cpu-gemm.cpp"
     "$root/src/backend/cpu/thread-pool.cpp" "$root/src/backend/token-select.cpp")
echo "building $work/sonic-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/sonic-fuzz.cpp" "${lib[@]}" -lcrypto -lpthread -o "$work/sonic-fuzz"
fuzz_corpus "$work"
{ printf '\000MBSONIC1\001\000\000\000'; head -c $((14235 * 4)) /dev/zero; } > "$corpus/mbsonic"
onnx="$root/../shared/fixtures/sonic/onnx-small"
if [ -d "$onnx" ] && "$py" "$root/tools/convert.py" sonic --encoder "$onnx/model_encoder_1762.onnx" \
        --decoder "$onnx/model_decoder.onnx" --out "$work/small.gguf" > /dev/null 2>&1; then
    { printf '\001'; cat "$work/small.gguf"; } > "$corpus/gguf"
fi
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 5 13 64 $((size / 3)) $((size / 2)) $((size - 1))
done
fuzz_run "$work/sonic-fuzz" "$work" "$seconds" 10 $((8 << 20)) 1024
