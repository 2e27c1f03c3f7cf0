#!/usr/bin/env bash
# Seeds for fuzz_fixture: small valid fixtures written by touchstone itself
# (HDF5 files are binary and change with the writer, so they are generated,
# not committed). Usage: fuzz/make_fixture_seeds.sh TOUCHSTONE OUTDIR
set -euo pipefail
ts="$1" out="$2"
mkdir -p "$out"
"$ts" fixture synth --preset tiny -o "$out/tiny.h5" >/dev/null
"$ts" fixture synth --preset tiny --compress --seed 1 -o "$out/tiny_compressed.h5" >/dev/null
"$ts" fixture synth --preset tiny --with-block --seed 2 -o "$out/tiny_block.h5" >/dev/null
echo "fixture seeds: $(ls "$out" | wc -l) files in $out"
