#!/usr/bin/env bash
# A self-contained fuzz_fixture for another Linux machine (the GPU machine, whose clang cannot
# build the ASan judge): the UBSan-only target of fuzz/README.md's counted runs, its ASan build
# as the judge, the shared libraries both load here except glibc's and the C++ runtime's
# (so the other machine fuzzes this machine's libhdf5, the one CI runs), and the seeds.
# scripts/gpu-fuzz runs it with BUNDLE=DIR, without building there.
# usage: fuzz/make-bundle.sh UBSAN_BUILD ASAN_BUILD TOUCHSTONE OUTDIR [CORPUS_DIR]
#   UBSAN_BUILD, ASAN_BUILD: build folders holding fuzz/fuzz_fixture (fuzz/README.md says how);
#   TOUCHSTONE writes the seeds; CORPUS_DIR, a corpus of an earlier run, is added to them.
# Needs glibc >= this machine's where it runs.
set -euo pipefail
ubsan=${1:?usage} asan=${2:?usage} ts=${3:?usage} out=${4:?usage} corpus=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"
mkdir -p "$out/fuzz" "$out/judge" "$out/lib" "$out/seeds"
cp "$ubsan/fuzz/fuzz_fixture" "$out/fuzz/"
cp "$asan/fuzz/fuzz_fixture" "$out/judge/"
for exe in "$out/fuzz/fuzz_fixture" "$out/judge/fuzz_fixture"; do
  ldd "$exe" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so* | libm.so* | libresolv.so* | libpthread.so* | libdl.so* | librt.so* | libstdc++.so* | libgcc_s.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
"$here/make_fixture_seeds.sh" "$ts" "$out/seeds/fixture" > /dev/null
[ -z "$corpus" ] || find "$corpus" -maxdepth 1 -type f -size -1048576c -exec cp {} "$out/seeds/fixture/" \;
echo "fuzz bundle: $(du -sh "$out" | cut -f1) in $out, $(ls "$out/lib" | wc -l) libraries, $(ls "$out/seeds/fixture" | wc -l) seeds"
