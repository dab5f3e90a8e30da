#!/usr/bin/env bash
# Builds serve-infer's request-parser fuzz target (Open Inference Protocol v2: JSON and binary
# tensor data) with clang (libFuzzer + ASan + UBSan) and runs it over seeds for a bounded time;
# any finding fails. Usage: run-v2-fuzz.sh WORK_DIR [SECONDS]. Exit 77 (CTest skip) without clang/libFuzzer.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/fuzz-common.sh"
fuzz_begin "${1:?usage: run-v2-fuzz.sh WORK_DIR [SECONDS]}" "${2:-}"
src=("$root/src/tools/infer-service/v2-codec.cpp" "$root/src/format/json-bounded.cpp")
echo "building $work/v2-fuzz"
"$cxx" "${flags[@]}" -fsanitize=fuzzer "$here/v2-fuzz.cpp" "${src[@]}" -o "$work/v2-fuzz"

# seeds: a JSON request of every datatype, nested data, requested outputs; binary requests
# (numeric, BOOL and BYTES data after the header); then truncations
fuzz_corpus "$work"
json='{"id":"a","parameters":{"binary_data_output":false},"inputs":[
{"name":"f","shape":[1,2,2],"datatype":"FP32","data":[[[1.5,-2],[3e3,0]]]},
{"name":"b","shape":[2],"datatype":"BOOL","data":[true,false]},
{"name":"i","shape":[1],"datatype":"INT64","data":[-9007199254740993]},
{"name":"u","shape":[1],"datatype":"UINT64","data":[18446744073709551615]},
{"name":"s","shape":[1],"datatype":"BYTES","data":["argmax"]},
{"name":"h","shape":[0],"datatype":"INT8","data":[]}],
"outputs":[{"name":"global_features","parameters":{"binary_data":true}},{"name":"num_frames"}]}'
printf '\000%s' "$json" > "$corpus/json"
binary() {   # NAME HEADER DATA...: selector 1, header length (u16 LE), header, raw data
    local name="$1" header="$2" len
    shift 2
    len=${#header}
    { printf '\001'; printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"; printf '%s' "$header"; printf "$@"; } > "$corpus/$name"
}
binary bin-f32 '{"inputs":[{"name":"f","shape":[2],"datatype":"FP32","parameters":{"binary_data_size":8}}]}' '\000\000\200\077\000\000\300\177'
binary bin-bool '{"inputs":[{"name":"b","shape":[1,3],"datatype":"BOOL","parameters":{"binary_data_size":3}}],"parameters":{"binary_data_output":true}}' '\001\000\001'
binary bin-bytes '{"inputs":[{"name":"s","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":14}}]}' '\006\000\000\000argmax\000\000\000\000'
binary bin-mixed '{"inputs":[{"name":"a","shape":[1],"datatype":"UINT64","parameters":{"binary_data_size":8}},{"name":"c","shape":[1],"datatype":"INT32","data":[7]},{"name":"d","shape":[1],"datatype":"FP16","parameters":{"binary_data_size":2}}]}' '\001\000\000\000\000\000\000\000\000\074'
for f in "$corpus"/*; do
    size=$(stat -c %s "$f")
    fuzz_cut "$f" 3 12 $((size / 2)) $((size - 1))
done
fuzz_run "$work/v2-fuzz" "$work" "$seconds" 10 $(((1 << 20) + 3)) 1024
