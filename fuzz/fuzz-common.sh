# Sourced by the run-*-fuzz.sh scripts: the clang/libFuzzer probe, the sanitizer flags,
# seed truncation and the bounded run that fails on any finding.

# WORK_DIR [SECONDS]: sets root, work and seconds (default MB_FUZZ_SECONDS, else 60), creates
# WORK_DIR and probes the toolchain (fuzz_toolchain); for scripts that build their own target
fuzz_begin() {
    root="$(dirname "$here")"
    work="$1"
    seconds="${2:-${MB_FUZZ_SECONDS:-60}}"
    mkdir -p "$work"
    fuzz_toolchain "$work"
}

# sets cxx and flags for WORK_DIR; exits 77 (CTest SKIP_RETURN_CODE) without clang++ or libFuzzer
fuzz_toolchain() {
    local work="$1"
    cxx="${MB_FUZZ_CXX:-clang++}"
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "skipped: $cxx not found (install clang and libclang-rt-14-dev)"
        exit 77
    fi
    local probe="$work/probe.cpp"
    echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' > "$probe"
    if ! "$cxx" -fsanitize=fuzzer "$probe" -o "$work/probe" >/dev/null 2>&1; then
        echo "skipped: $cxx cannot link -fsanitize=fuzzer (libFuzzer missing: install libclang-rt-14-dev)"
        exit 77
    fi
    flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -I"$root/src"
           -fsanitize=address,undefined -fno-sanitize-recover=undefined)
}

# a fresh, empty WORK_DIR/corpus (set as corpus) and WORK_DIR/artifacts
fuzz_corpus() {
    corpus="$1/corpus"
    rm -rf "$corpus" "$1/artifacts"
    mkdir -p "$corpus" "$1/artifacts"
}

# FILE CUT...: FILE.cutN holding the first N bytes, for each N strictly inside FILE
fuzz_cut() {
    local f="$1" size cut
    shift
    size=$(stat -c %s "$f")
    for cut in "$@"; do
        [ "$cut" -gt 0 ] && [ "$cut" -lt "$size" ] && head -c "$cut" "$f" > "$f.cut$cut"
    done
    return 0
}

# FUZZER WORK_DIR SECONDS TIMEOUT [MAX_LEN [RSS_MB]]: runs over WORK_DIR/corpus; exit 1 on any finding.
# MAX_LEN (bytes, default 64 KiB) is set per target at its reader's own byte bound, so that inputs
# can grow large enough to show an amplification (memory or time) bug; RSS_MB (default 2048) is
# the peak that counts as one. ASan's quarantine is kept small so that RSS reflects the reader.
# libFuzzer's own failure code is 77, CTest's skip code here, so it is replaced: a finding must
# never read as a skip
fuzz_run() {
    local fuzzer="$1" work="$2" seconds="$3" timeout="$4" max_len="${5:-65536}" rss_mb="${6:-2048}" rc=0
    echo "fuzzing for ${seconds}s (inputs up to $max_len bytes, rss limit $rss_mb MB)"
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0:quarantine_size_mb=16 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$fuzzer" "$work/corpus" -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -malloc_limit_mb="$rss_mb" \
        -timeout="$timeout" -max_len="$max_len" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
        -error_exitcode=1 -timeout_exitcode=1 || rc=$?
    # slow-unit-* files only say an input took over 10 s (a loaded machine: one took 10 s under the
    # full suite and 0.9 s alone); hangs are -timeout's, which writes timeout-* and fails
    if [ "$rc" -ne 0 ] || ls "$work/artifacts/"* 2>/dev/null | grep -qv '/slow-unit-'; then
        echo "fuzzer findings in $work/artifacts (exit $rc)"
        exit 1
    fi
    echo "no findings"
}
