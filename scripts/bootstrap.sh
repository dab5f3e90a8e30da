#!/usr/bin/env bash
# Installs every Debian package the build and the tests need. Idempotent:
# does nothing when all of them are present. Needs root (or sudo).
set -euo pipefail

packages=(
    build-essential cmake ninja-build pkg-config git
    clang libclang-rt-14-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    libopenblas-dev nlohmann-json3-dev libssl-dev zlib1g-dev
    libboost-dev ca-certificates
    python3 python3-numpy python3-torch python3-pytest golang-go
    libzmq3-dev python3-zmq python3-onnx
    python3-yaml
    libmujoco-dev
    chromium
    assimp-utils
)
# ARM64 cross build and its tests under qemu (scripts/test-aarch64.sh) on x86-64 hosts: the cross
# compiler, the emulator, GoogleTest's sources (built for arm64) and the arm64 libcrypto (multiarch);
# an ARM64 host builds and tests natively and needs none of them
cross=0
if [ "$(dpkg --print-architecture)" = amd64 ]; then
    cross=1
    packages+=(g++-aarch64-linux-gnu qemu-user googletest libssl-dev:arm64)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node and npm for the viewer's tests: Debian's nodejs + npm unless a node with npm is already here
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)

# the viewer's npm packages (three, playwright-core, ws) into web/node_modules, and three's
# browser build into web/vendor (npm ci's postinstall); only when the lock file changed
web_deps() {
    local web
    web="$(cd "$(dirname "$0")/../web" && pwd)"
    if [ ! -f "$web/node_modules/.package-lock.json" ] || [ ! -f "$web/vendor/three.module.js" ] ||
       [ "$web/package-lock.json" -nt "$web/node_modules/.package-lock.json" ]; then
        echo "bootstrap: npm ci in web/"
        (cd "$web" && npm ci --no-audit --no-fund --loglevel=error)
    fi
}
if [ ${#missing[@]} -eq 0 ]; then
    web_deps
    exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "bootstrap: installing ${missing[*]}"
# arm64 packages (libssl-dev:arm64) come from the same archive once dpkg knows the architecture
[ "$cross" -eq 0 ] || dpkg --print-foreign-architectures | grep -qx arm64 || $sudo dpkg --add-architecture arm64
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
web_deps
