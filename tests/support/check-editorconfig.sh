#!/usr/bin/env bash
# The checked-in .editorconfig, held in CI: every tracked text file of code or docs has LF line
# endings, no trailing whitespace and a final newline, and C/C++/JS files indent with spaces.
# (.clang-format was removed: formatting the tree with it would have changed 146 of 154 files.)
# Each check is one grep over all files (a few processes, not several per file: the per-file
# loop ran past the test's 120 s on a loaded 2-core machine).
# Usage: check-editorconfig.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: check-editorconfig.sh SOURCE_DIR}"
command -v git >/dev/null && [ -e .git ] || { echo "skipped: not a git checkout"; exit 77; }
files=()
while IFS= read -r f; do [ -f "$f" ] && files+=("$f"); done < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.hpp' '*.js' '*.mjs' '*.py' '*.sh' '*.cmake' 'CMakeLists.txt' '*.md' '*.json' '*.in')
code=()
for f in "${files[@]}"; do case "$f" in *.c|*.h|*.cpp|*.hpp|*.js|*.mjs) code+=("$f") ;; esac; done
# grep -n prints FILE:LINE:TEXT; the first hit per file is enough
report() { awk -F: -v what="$1" '!seen[$1]++ { print $1 ":" $2 ": " what }'; }
full=()
for f in "${files[@]}"; do [ -s "$f" ] && full+=("$f"); done
out=$(
    grep -nP '\r$' -- "${files[@]}" | report "CRLF line ending"
    grep -nP '[ \t]+$' -- "${files[@]}" | report "trailing whitespace"
    [ ${#code[@]} -eq 0 ] || grep -nP '^\t' -- "${code[@]}" | report "indented with a tab"
    # a non-empty file whose last byte is not a newline: tail prints each one's last byte, in order
    tail -qc 1 -- "${full[@]}" | od -An -v -tx1 | tr -s ' \n' '\n\n' | grep -v '^$' |
        paste -d' ' <(printf '%s\n' "${full[@]}") - | awk '$2 != "0a" { print $1 ": no final newline" }'
) || true
[ -z "$out" ] || { echo "$out"; exit 1; }
echo "${#files[@]} files follow .editorconfig"
