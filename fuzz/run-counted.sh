#!/usr/bin/env bash
# Long fuzz runs with their execution counts: WORKERS independent libFuzzer processes per
# target (different seeds, one shared corpus folder), SECONDS each, one target after another,
# then one line per target with the summed executions and crashes, and a JSON summary.
# The counts that fuzz/README.md records come from this script.
# usage: fuzz/run-counted.sh BUILD_DIR SECONDS WORKERS OUT_DIR [TARGET ...]
#   (BUILD_DIR configured with -DTOUCHSTONE_FUZZ=ON; default targets: all four)
#   env: TOUCHSTONE, the CLI that writes fuzz_fixture's seeds (default BUILD_DIR/touchstone);
#        SEEDS_DIR, a folder of seed folders named by target (default fuzz/corpus; the
#        fixture's are written by TOUCHSTONE when SEEDS_DIR has none)
# exit: 0 no crash; 1 a target crashed or failed to run (its log's tail is printed).
set -uo pipefail
build=${1:?usage: run-counted.sh BUILD_DIR SECONDS WORKERS OUT_DIR [TARGET ...]}
seconds=${2:?seconds} workers=${3:?workers} out=${4:?out dir}
shift 4
targets=("$@")
((${#targets[@]})) || targets=(gate_file measurements import_report fixture)
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
rc=0
summary="["
for t in "${targets[@]}"; do
  exe="$build/fuzz/fuzz_$t"
  [ -x "$exe" ] || { echo "fuzz_$t: not built ($exe)"; rc=1; continue; }
  work="$out/corpus_$t"
  mkdir -p "$work"
  seeds="${SEEDS_DIR:-$here/corpus}/$t"
  if [ ! -d "$seeds" ]; then
    seeds="$out/seeds_$t"
    "$here/make_fixture_seeds.sh" "${TOUCHSTONE:-$build/touchstone}" "$seeds" > /dev/null || { echo "fuzz_$t: no seeds"; rc=1; continue; }
  fi
  # HDF5 keeps process-lifetime allocations (free lists), so libFuzzer's leak
  # check would re-run most fixture inputs; the JSON targets keep it.
  # A build without ASan uses glibc's malloc: keeping freed memory mapped spares
  # the page faults of libhdf5's large per-file blocks (half a block read's time).
  extra=()
  [ "$t" = fixture ] && extra=(-detect_leaks=0)
  export GLIBC_TUNABLES=${GLIBC_TUNABLES:-glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295}
  rm -f "$out/$t".*.crashed
  for ((w = 0; w < workers; ++w)); do
    (
      "$exe" "${extra[@]}" -seed=$((w + 1)) -max_total_time="$seconds" -print_final_stats=1 -timeout=30 \
        -rss_limit_mb=4096 -artifact_prefix="$out/crash_${t}_" "$work" "$seeds" > "$out/$t.$w.log" 2>&1 ||
        touch "$out/$t.$w.crashed"
    ) &
  done
  wait
  crashes=$(find "$out" -maxdepth 1 -name "$t.*.crashed" | wc -l)
  execs=$(cat "$out/$t".*.log | awk '/^stat::number_of_executed_units/ {s += $2} END {print s + 0}')
  printf 'fuzz_%s: %d executions in %d workers x %d s, %d crashed\n' "$t" "$execs" "$workers" "$seconds" "$crashes"
  if ((crashes)); then rc=1; grep -h -m5 -E "ERROR|SUMMARY|deadly" "$out/$t".*.log; fi
  summary+="{\"target\": \"fuzz_$t\", \"executions\": $execs, \"workers\": $workers, \"seconds\": $seconds, \"crashes\": $crashes},"
done
summary="${summary%,}]"
echo "$summary" > "$out/fuzz_counts.json"
exit $rc
