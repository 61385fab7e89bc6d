#!/usr/bin/env bash
# The long fuzz campaign: every decoder on its own (FUZZ_ONLY pins it) for RUNS inputs,
# JOBS at a time, under ASan + UBSan, each allocation limited to 64 MiB (the bloom
# select workspace bound at the targets' 2^16 elements is 34 MiB). Every input over 1 s
# is saved (slow-unit-*) and replayed alone afterwards, so a stall of a loaded machine
# is told apart from a slow decode; 10 s is a hang and stops the run. Prints one
# markdown row per decoder; a finding leaves its input in OUT/<name>/ and marks the row.
#
#   bash fuzz/campaign.sh [RUNS=1000000] [JOBS=2] [OUT=build/fuzz-campaign] [NAMES=regex]
#
# NAMES (an extended regex over the decoder names below) runs a subset.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-1000000}"
jobs="${2:-2}"
out="${3:-build/fuzz-campaign}"
names="${4:-.}"
python="${PYTHON:-python3}"

CC=clang cmake -S . -B build/fuzz -DDEEPREDUCE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/fuzz -j"$jobs" --target fuzz_frame fuzz_sections >/dev/null
"$python" fuzz/make_corpus.py "$out/seeds" >/dev/null

# target:selector:name. fuzz_frame selectors are enum dr_kind (topk also carries every
# DeepReduce index/value frame); fuzz_sections selectors are enum dr_index_codec (1..7),
# then DR_INDEX_COUNT_ (8) + enum dr_value_codec (1..8), then 17 for the permutation
# section.
decoders="
fuzz_frame:2:qsgd fuzz_frame:3:terngrad fuzz_frame:4:onebit fuzz_frame:5:signsgd
fuzz_frame:6:signum fuzz_frame:7:efsignsgd fuzz_frame:8:natural fuzz_frame:17:8bit
fuzz_frame:14:adaq fuzz_frame:15:inceptionn fuzz_frame:16:sketch fuzz_frame:20:3lc
fuzz_frame:10:topk+deepreduce
fuzz_frame:11:threshold fuzz_frame:12:dgc fuzz_frame:18:spardl
fuzz_sections:1:index-bloom fuzz_sections:2:index-rle fuzz_sections:3:index-huffman
fuzz_sections:4:index-ef fuzz_sections:5:index-rice fuzz_sections:6:index-varint
fuzz_sections:7:index-skcompress
fuzz_sections:9:value-polyfit fuzz_sections:10:value-dexp fuzz_sections:11:value-deflate
fuzz_sections:12:value-qsgd fuzz_sections:13:value-fp16 fuzz_sections:14:value-bf16
fuzz_sections:15:value-sketch fuzz_sections:16:value-skcompress
fuzz_sections:17:permutation
fuzz_frame:-1:frame-parser+all fuzz_sections:-1:sections-all"

one() {
  local target="${1%%:*}" rest="${1#*:}"
  local selector="${rest%%:*}" name="${rest#*:}"
  local dir="$out/$name" start end status
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  cp "$out/seeds/$target/"* "$dir/corpus/"
  start=$(date +%s)
  status=clean
  FUZZ_ONLY="$selector" "build/fuzz/fuzz/$target" -runs="$runs" -timeout=10 -report_slow_units=1 \
    -rss_limit_mb=1024 -malloc_limit_mb=64 -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" \
    >"$dir/log" 2>&1 || status="FINDING (see $dir)"
  end=$(date +%s)
  local executed slowest=0 unit ms
  executed=$(grep -m1 '^stat::number_of_executed_units' "$dir/log" | awk '{print $2}')
  # Replay each saved slow input three times; its best time is what the decoder costs.
  for unit in "$dir"/slow-unit-*; do
    [ -e "$unit" ] || continue
    ms=$(for _ in 1 2 3; do FUZZ_ONLY="$selector" "build/fuzz/fuzz/$target" "$unit" 2>&1 |
         sed -n 's/.* in \([0-9]*\) ms$/\1/p'; done | sort -n | head -1)
    [ "${ms:-0}" -gt "$slowest" ] && slowest="$ms"
    [ "${ms:-0}" -ge 1000 ] && status="FINDING: $unit takes ${ms} ms"
  done
  echo "| $name | $target | ${executed:-0} | $((end - start)) | $(ls "$dir" | grep -c '^slow-unit-') | ${slowest} | $status |"
}
export -f one
export out runs

echo "| decoder | target | inputs | seconds | inputs > 1 s under load | slowest replayed alone (ms) | result |"
echo "|---|---|---:|---:|---:|---:|---|"
echo "$decoders" | tr ' ' '\n' | grep . | grep -E ":[^:]*($names)" | xargs -P "$jobs" -I{} bash -c 'one {}'
