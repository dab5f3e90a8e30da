#!/usr/bin/env bash
# The checked-in .editorconfig, held in CI: every tracked text file of code or docs has LF line
# endings, no trailing whitespace and a final newline, and C/C++/JS files indent with spaces.
# (.clang-format was removed: formatting the tree with it would have changed 146 of 154 files.)
# Usage: check-editorconfig.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: check-editorconfig.sh SOURCE_DIR}"
command -v git >/dev/null && [ -e .git ] || { echo "skipped: not a git checkout"; exit 77; }
mapfile -t files < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.hpp' '*.js' '*.mjs' '*.py' '*.sh' '*.cmake' 'CMakeLists.txt' '*.md' '*.json' '*.in')
bad=0
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    if grep -qP '\r$' "$f"; then echo "$f: CRLF line ending"; bad=1; fi
    if grep -nP '[ \t]+$' "$f" | head -1 | grep -q .; then echo "$f:$(grep -nP '[ \t]+$' "$f" | head -1 | cut -d: -f1): trailing whitespace"; bad=1; fi
    if [ -s "$f" ] && [ "$(tail -c 1 "$f" | od -An -c | tr -d ' ')" != '\n' ]; then echo "$f: no final newline"; bad=1; fi
    case "$f" in
        *.c|*.h|*.cpp|*.hpp|*.js|*.mjs)
            if grep -nP '^\t' "$f" | head -1 | grep -q .; then echo "$f: indented with a tab"; bad=1; fi ;;
    esac
done
[ "$bad" -eq 0 ] && echo "${#files[@]} files follow .editorconfig"
exit "$bad"
