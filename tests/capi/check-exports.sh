#!/usr/bin/env bash
# the shared library exports exactly the functions the public headers declare (mb_* only),
# carries SONAME libmotionbricks.so.0, and the static archive holds the same entry points
# usage: check-exports.sh LIBMOTIONBRICKS.so LIBMOTIONBRICKS.a INCLUDE_DIR
set -euo pipefail
so=$1 archive=$2 include=$3

declared=$(cat "$include"/motionbricks/*.h | tr '\n' ' ' | grep -oE 'MB_API [^;(]*\bmb_[a-z0-9_]+ *\(' |
           grep -oE 'mb_[a-z0-9_]+ *\($' | tr -d ' (' | sort -u)
exported=$(nm -D --defined-only "$so" | awk '{print $3}' | sort -u)

status=0
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$extra" ]; then
    echo "exported but not declared in the public headers:"; echo "$extra" | head -50; status=1
fi
if [ -n "$missing" ]; then
    echo "declared but not exported:"; echo "$missing"; status=1
fi
if echo "$exported" | grep -qv '^mb_'; then
    echo "non-mb_ symbols exported"; status=1
fi
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
if [ "$soname" != "libmotionbricks.so.0" ]; then
    echo "SONAME is '$soname', expected libmotionbricks.so.0"; status=1
fi
in_archive=$(nm --defined-only "$archive" 2>/dev/null | awk '$2 == "T" && $3 ~ /^mb_/ {print $3}' | sort -u)
missing_static=$(comm -23 <(echo "$declared") <(echo "$in_archive"))
if [ -n "$missing_static" ]; then
    echo "declared but not in the static archive:"; echo "$missing_static"; status=1
fi
echo "$(echo "$declared" | wc -l) declared, $(echo "$exported" | wc -l) exported, soname $soname"
exit $status
