#!/bin/sh
# The layering rule of the programs (issue 10; docs/ARCHITECTURE.md): a program under src/tools/ is a
# client of the public C ABI (include/motionbricks/) and includes no internal header
# (agent/, motion/, model/, backend/, capi/, format/), with these exceptions:
#   - sonic-parity reads its `.mbsonic` fixture through format/mbsonic.h (a file reader, like dump);
#   - inspect and dump read files through src/format (and inspect the networks' hparams through
#     src/model), as llama.cpp's gguf tools use gguf.h;
#   - the bounded readers of the programs' own untrusted text (format/json-bounded.h,
#     format/regular-file.h: scripts, requests, client messages, the release manifest) live in
#     src/format for now and may be included by any program;
#   - the fixture programs (parity, replay-info, serve's replay recorder) read and write the
#     .mbparity / .mbreplay files through their src/format readers, as inspect reads GGUF.
# Any other internal include fails this test, naming the file and the line.
set -eu
src="${1:?usage: check-layering.sh SOURCE_DIR}"
cd "$src"
allowed() {
    case "$2" in format/json-bounded.h | format/regular-file.h) return 0 ;; esac
    case "$1" in
        src/tools/cli/cmd-inspect.cpp) case "$2" in format/* | model/*) return 0 ;; esac ;;
        src/tools/cli/cmd-dump.cpp) case "$2" in format/*) return 0 ;; esac ;;
        src/tools/cli/cmd-sonic-parity.cpp) case "$2" in format/mbsonic.h) return 0 ;; esac ;;
        src/tools/cli/cmd-parity.cpp | src/tools/cli/cmd-compare-reports.cpp | src/tools/cli/cmd-replay-info.cpp | src/tools/serve/replay-*.cpp)
            case "$2" in format/mbparity.h | format/mbreplay.h | format/fixture-io.h | format/sha256.h | format/error.h) return 0 ;; esac ;;
    esac
    return 1
}
bad=0
checked=0
for f in $(find src/tools -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) | sort); do
    checked=$((checked + 1))
    # every quoted include that is not one of the programs' own
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
        inc=$(printf '%s\n' "$line" | sed 's/^[^"]*"\([^"]*\)".*$/\1/')
        case "$inc" in
            tools/*) ;;
            agent/* | motion/* | model/* | backend/* | capi/* | format/* | sonic/*)
                if ! allowed "$f" "$inc"; then
                    echo "$f:${line%%:*}: includes internal header \"$inc\" (programs use <motionbricks/...>)"
                    echo x >> "${TMPDIR:-/tmp}/mb-layering.$$"
                fi ;;
            *)
                echo "$f:${line%%:*}: includes \"$inc\", which is neither the programs' own nor public"
                echo x >> "${TMPDIR:-/tmp}/mb-layering.$$" ;;
        esac
    done
    # the same headers through angle brackets (src/ is on the include path)
    grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(agent|motion|model|backend|capi|format|sonic)/' "$f" | while IFS= read -r line; do
        echo "$f:${line%%:*}: includes an internal header through <...>"
        echo x >> "${TMPDIR:-/tmp}/mb-layering.$$"
    done
done
if [ -f "${TMPDIR:-/tmp}/mb-layering.$$" ]; then
    bad=$(wc -l < "${TMPDIR:-/tmp}/mb-layering.$$")
    rm -f "${TMPDIR:-/tmp}/mb-layering.$$"
fi
echo "layering: $checked program files checked, $bad internal includes outside the exceptions"
[ "$bad" -eq 0 ]
