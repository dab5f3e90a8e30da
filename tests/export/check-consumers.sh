#!/usr/bin/env bash
# Real consumers read what `motionbricks plan` writes: assimp (Debian assimp-utils) loads every BVH
# with 34 joints (plus end sites), 34 animation channels and the planned frame count; the Khronos
# glTF validator reports 0 errors and 0 warnings on every GLB; convert-motion round trips
# GLB → BVH → GLB → JSON and GLB → NPZ → GLB, CSV → JSON keep the frames. Usage: check-consumers.sh MOTIONBRICKS BUNDLE STYLES_DIR WORK
# Exit 77 (skip) when assimp or node is missing.
set -euo pipefail
mb="$1" bundle="$2" styles="$3" work="$4"
here="$(cd "$(dirname "$0")" && pwd)"
command -v assimp >/dev/null || { echo "skipped: assimp not found (apt-get install assimp-utils)"; exit 77; }
command -v node >/dev/null || { echo "skipped: node not found"; exit 77; }
rm -rf "$work" && mkdir -p "$work"
cat > "$work/script.json" <<'JSON'
[{"frames": 70, "style": "walk", "movement": [0, 1]},
 {"frames": 50, "style": "walk", "movement": [1, 0], "facing": [1, 0]},
 {"frames": 30, "style": "idle"}]
JSON
args=()
for s in "$styles"/*.mbstyle; do args+=(--style "$s"); done
"$mb" plan --model "$bundle" "${args[@]}" --script "$work/script.json" --output "$work/plan.bvh" --threads 1
"$mb" plan --model "$bundle" "${args[@]}" --script "$work/script.json" --output "$work/plan-cm.bvh" --units cm --threads 1
"$mb" plan --model "$bundle" "${args[@]}" --script "$work/script.json" --output "$work/plan.glb" --threads 1
"$mb" plan --model "$bundle" "${args[@]}" --script "$work/script.json" --output "$work/plan.json" --threads 1
"$mb" convert-motion "$work/plan.glb" "$work/conv.bvh"
"$mb" convert-motion "$work/conv.bvh" "$work/conv.glb"
"$mb" convert-motion "$work/plan.json" "$work/from-json.glb"
"$mb" convert-motion "$work/conv.glb" "$work/conv.json"
grep -q '"frames":150' "$work/conv.json" || { echo "FAIL: conv.json does not hold 150 frames"; exit 1; }
# the robot qpos files share the dispatcher: .csv/.npz out of plan and convert-motion, and back in
"$mb" plan --model "$bundle" "${args[@]}" --script "$work/script.json" --output "$work/plan.csv" --threads 1
"$mb" convert-motion "$work/plan.glb" "$work/conv.npz"
"$mb" convert-motion "$work/conv.npz" "$work/from-npz.glb"
"$mb" convert-motion "$work/plan.csv" "$work/from-csv.json"
[ "$(wc -l < "$work/plan.csv")" = 151 ] || { echo "FAIL: plan.csv is not a header and 150 rows"; exit 1; }
grep -q '"frames":150' "$work/from-csv.json" || { echo "FAIL: from-csv.json does not hold 150 frames"; exit 1; }

frames=150
for f in "$work"/plan.bvh "$work"/plan-cm.bvh "$work"/conv.bvh; do
    info="$(assimp info "$f" 2>&1 | grep -v '%')"
    joints=$(printf '%s\n' "$info" | grep -E '[─╴]' | grep -vc 'EndSite_' || true)
    channels=$(printf '%s\n' "$info" | sed -n 's/^Animation Channels: *//p')
    assimp dump "$f" "$work/dump.assxml" >/dev/null 2>&1
    keys=$(grep -o '<RotationKeyList num="[0-9]*"' "$work/dump.assxml" | sort -u)
    echo "assimp $f: $((joints + 1)) joints (tree lines + root), $channels channels, $keys"
    [ "$((joints + 1))" = 34 ] || { echo "FAIL: assimp sees $((joints + 1)) joints in $f"; exit 1; }
    [ "$channels" = 34 ] || { echo "FAIL: assimp sees $channels channels in $f"; exit 1; }
    [ "$keys" = "<RotationKeyList num=\"$frames\"" ] || { echo "FAIL: assimp rotation keys in $f: $keys"; exit 1; }
done
node "$here/validate-glb.mjs" "$work"/plan.glb "$work"/conv.glb "$work"/from-json.glb "$work"/from-npz.glb
echo "ok: assimp and the glTF validator accept every file"
