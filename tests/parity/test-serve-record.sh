#!/usr/bin/env bash
# `serve --record FILE.mbreplay`: serves the agent-small bundle and styles (left by the
# motionbricks-parity-agent-small test) for a few seconds with no viewer, stops it with SIGTERM,
# and reads the recording back: 30 fps, root + 29 bodies, 36 qpos, at least one plan, the frames
# the clock passed. Then `serve --replay` serves it unchanged, and --replay with --comparison, or
# with --model, is refused (exit 2).
# Usage: test-serve-record.sh MOTIONBRICKS_BIN PARITY_RUN_DIR WORK_DIR. Exit 77 without the run.
set -euo pipefail
bin="$1"; run="$2"; work="$3"
[ -f "$run/bundle/manifest.json" ] && [ -d "$run/styles" ] || { echo "skipped: $run (motionbricks-parity-agent-small) not found"; exit 77; }
command -v curl >/dev/null || { echo "skipped: curl not found"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
port_of() {   # LOG: the port of "listening on ...:PORT" or "listening on port PORT"
    for _ in $(seq 1 300); do
        p=$(sed -n 's/.*listening on http:\/\/[^ ]*:\([0-9]*\)\/.*/\1/p; s/.*listening on port \([0-9]*\).*/\1/p' "$1" | head -1)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.1
    done
    return 1
}
"$bin" serve --model "$run/bundle" --styles "$run/styles" --listen 127.0.0.1:0 --threads 1 --record "$work/session.mbreplay" \
    2> "$work/serve.log" &
pid=$!
port=$(port_of "$work/serve.log") || { kill $pid; echo "serve did not start: $(cat "$work/serve.log")"; exit 1; }
sleep 4
kill -TERM $pid
wait $pid || { echo "serve exited $?: $(cat "$work/serve.log")"; exit 1; }
grep 'recorded' "$work/serve.log"
"$bin" replay-info "$work/session.mbreplay" | tee "$work/info.txt"
grep -qx 'fps: 30' "$work/info.txt" && grep -qx 'joints: 30' "$work/info.txt" && grep -qx 'qpos: 36' "$work/info.txt" \
    || { echo "unexpected header"; exit 1; }
frames=$(sed -n 's/^frames: //p' "$work/info.txt"); plans=$(sed -n 's/^plans: //p' "$work/info.txt")
[ "$frames" -ge 60 ] && [ "$frames" -le 200 ] || { echo "recorded $frames frames in about 4 s at 30 fps"; exit 1; }
[ "$plans" -ge 1 ] || { echo "no plan recorded (the demo agent replans at frame 16)"; exit 1; }

"$bin" serve --replay "$work/session.mbreplay" --listen 127.0.0.1:0 2> "$work/replay.log" &
pid=$!
port=$(port_of "$work/replay.log") || { kill $pid; echo "serve --replay did not start: $(cat "$work/replay.log")"; exit 1; }
curl -sf "http://127.0.0.1:$port/api/replay" -o "$work/served.mbreplay"
curl -sf "http://127.0.0.1:$port/api/meta" | grep -q '"mode":"replay"' || { kill $pid; echo "/api/meta"; exit 1; }
kill -TERM $pid
wait $pid
cmp "$work/session.mbreplay" "$work/served.mbreplay" || { echo "/api/replay differs from the file"; exit 1; }
set +e
"$bin" serve --replay "$work/session.mbreplay" --comparison "$run/r1.json" 2>/dev/null; rc1=$?
"$bin" serve --replay "$work/session.mbreplay" --model "$run/bundle" 2>/dev/null; rc2=$?
head -c 100 "$work/session.mbreplay" > "$work/cut.mbreplay"
"$bin" serve --replay "$work/cut.mbreplay" 2> "$work/cut.log"; rc3=$?
set -e
[ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ] && grep -q truncated "$work/cut.log" \
    || { echo "exclusive options / a cut replay: exits $rc1 $rc2 $rc3"; exit 1; }
echo "serve --record and --replay: all checks passed"
