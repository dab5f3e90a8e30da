#!/usr/bin/env bash
# installs the build into a temporary prefix and builds consumers against the installed tree only:
# a CMake project (find_package → motionbricks::motionbricks and ::motionbricks_static, plus the
# C++17 wrapper) and plain `cc -std=c11 $(pkg-config --cflags --libs motionbricks)` builds of a
# consumer, of examples/inference.c and examples/agent.c and of consumer/reference-abi.c (the issue-5
# acceptance program, written from the reference runtime's documented ABI only); with a bundle
# directory every program also runs (the agent programs need STYLES_DIR/walk.mbstyle as well)
# usage: test-install.sh BUILD_DIR SOURCE_DIR [BUNDLE_DIR [STYLES_DIR]]
# MB_SANITIZE_FLAGS (e.g. "-fsanitize=address,undefined"): the build is sanitized, so consumers are
# built with clang and those flags, and C programs are linked by clang++ (the C++ UBSan runtime)
set -euo pipefail
build=$1 src=$2 bundle=${3:-} styles=${4:-}
san=${MB_SANITIZE_FLAGS:-}
work=$(mktemp -d /tmp/mb-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
if [ -n "$bundle" ] && [ ! -d "$bundle" ]; then
    echo "note: no bundle at $bundle; consumers run without inference"
    bundle=""
fi

# 1. install and check the layout
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(dirname "$(find "$prefix" -name libmotionbricks.so -print -quit)")
for f in "$prefix/include/motionbricks/motionbricks.h" "$prefix/include/motionbricks/inference.h" \
         "$prefix/include/motionbricks/motionbricks.hpp" "$libdir/libmotionbricks.so.0.1.0" \
         "$libdir/libmotionbricks.so.0" "$libdir/libmotionbricks.a" \
         "$libdir/cmake/motionbricks/motionbricksConfig.cmake" \
         "$libdir/cmake/motionbricks/motionbricksConfigVersion.cmake" "$libdir/pkgconfig/motionbricks.pc"; do
    [ -e "$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
if ls "$prefix/include" | grep -qv '^motionbricks$'; then
    echo "FAIL: installed headers outside include/motionbricks: $(ls "$prefix/include")"; exit 1
fi
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$libdir/pkgconfig"

# 2. CMake package: shared, static and C++ wrapper consumers
consumer_args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix")
if [ -n "$san" ]; then
    consumer_args+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "-DCMAKE_C_FLAGS=$san" "-DCMAKE_CXX_FLAGS=$san"
                    "-DCMAKE_EXE_LINKER_FLAGS=$san" -DCONSUMER_LINK_WITH_CXX=ON)
fi
cmake -S "$src/tests/capi/consumer" -B "$work/consumer" -G Ninja "${consumer_args[@]}" \
      >"$work/consumer-configure.log" || { cat "$work/consumer-configure.log"; exit 1; }
cmake --build "$work/consumer" >"$work/consumer-build.log" || { cat "$work/consumer-build.log"; exit 1; }
# the C++ consumer also drives an agent when a style is there
style_arg=()
if [ -n "$bundle" ] && [ -n "$styles" ] && [ -f "$styles/walk.mbstyle" ]; then
    style_arg=("$styles/walk.mbstyle")
fi
for exe in consumer-shared consumer-static; do
    echo "== $exe (find_package)"
    "$work/consumer/$exe" $bundle
done
echo "== consumer-cpp (find_package)"
"$work/consumer/consumer-cpp" $bundle "${style_arg[@]}"
if nm -D "$work/consumer/consumer-static" 2>/dev/null | grep -q ' U mb_'; then
    echo "FAIL: consumer-static resolves mb_* dynamically"; exit 1
fi

# 3. pkg-config: C11 consumer, the example, the C++17 wrapper
pc=$(pkg-config --cflags --libs motionbricks)
echo "pkg-config: $pc"
# one C file → program, exactly `cc -std=c11 FILE $(pkg-config --cflags --libs motionbricks)` unless sanitized
build_c() {
    if [ -z "$san" ]; then
        cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$1" $pc -o "$2"
    else
        clang -std=c11 -Wall -Wextra -Wpedantic -Werror $san -c "$1" $(pkg-config --cflags motionbricks) -o "$2.o"
        clang++ $san "$2.o" $(pkg-config --libs motionbricks) -o "$2"
    fi
}
build_c "$src/tests/capi/consumer/consumer.c" "$work/pc-consumer"
build_c "$src/examples/inference.c" "$work/pc-example"
build_c "$src/examples/agent.c" "$work/pc-example-agent"
build_c "$src/tests/capi/consumer/reference-abi.c" "$work/pc-reference-abi"
cxx=(c++)
[ -z "$san" ] || cxx=(clang++ $san)
"${cxx[@]}" -std=c++17 -Wall -Wextra -Wpedantic -Werror "$src/tests/capi/consumer/consumer.cpp" $pc -o "$work/pc-consumer-cpp"
# the quick start of docs/API.md, as printed there
awk '/^```c$/ {f = 1; next} /^```$/ {f = 0} f' "$src/docs/API.md" >"$work/quickstart.c"
build_c "$work/quickstart.c" "$work/pc-quickstart"
echo "== consumer (pkg-config)"
"$work/pc-consumer" $bundle
echo "== consumer-cpp (pkg-config)"
"$work/pc-consumer-cpp" $bundle "${style_arg[@]}"
if [ -n "$bundle" ]; then
    echo "== examples/inference.c (pkg-config)"
    "$work/pc-example" "$bundle" 1
    echo "== docs/API.md quick start (pkg-config)"
    "$work/pc-quickstart" "$bundle"
    if [ -n "$styles" ] && [ -f "$styles/walk.mbstyle" ]; then
        echo "== examples/agent.c (pkg-config)"
        "$work/pc-example-agent" "$bundle" "$styles/walk.mbstyle" 1
        echo "== reference-abi.c (pkg-config)"
        "$work/pc-reference-abi" "$bundle" "$styles/walk.mbstyle"
    else
        echo "note: no style at ${styles:-(none)}/walk.mbstyle; agent programs built, not run"
    fi
fi
echo "install test passed"
