#!/usr/bin/env bash
# Capture every replay output of every bundled and shared scenario (issue 34: the redesign keeps them byte-identical).
# Usage: scripts/house_baseline.sh OUTDIR   then   diff -r /work/wt-house-baseline OUTDIR
# Per scenario and per RECOVERY setting (manual, probe):
#   NAME.RECOVERY.json    replay --json --calls (stdout), .err (stderr, with the calls), .rc (exit status),
#   NAME.RECOVERY.alerts  the --alerts-out file,  NAME.RECOVERY.txt  the text report with --timeline.
set -u
out=$(realpath -m "${1:?OUTDIR}")
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/.venv/bin/ecs-guardrail"
mkdir -p "$out"
jobs=()
for d in "$here"/events/scenarios/*/ "$here"/../shared/scenarios/*/; do
  [ -d "$d" ] || continue
  src=$(basename "$(dirname "$d")"); [ "$src" = scenarios ] && src=$(basename "$(dirname "$(dirname "$d")")")
  for rec in manual probe; do jobs+=("$(realpath "$d") $src-$(basename "$d") $rec"); done
done
run_one() {
  d=$1; name=$2; rec=$3; bin=$4; out=$5
  set=(); [ "$rec" != own ] && set=(--set "RECOVERY=$rec")
  cd "$out" || exit 1
  export COLUMNS=160 TZ=UTC
  "$bin" replay "$d" "${set[@]}" --json --calls --alerts-out "$name.$rec.alerts" >"$name.$rec.json" 2>"$name.$rec.err"
  echo $? >"$name.$rec.rc"
  "$bin" replay "$d" "${set[@]}" --timeline >"$name.$rec.txt" 2>"$name.$rec.txt.err"
  echo $? >>"$name.$rec.rc"
}
export -f run_one
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 bash -c 'run_one "$0" "$1" "$2" "'"$bin"'" "'"$out"'"'
cd "$out" && COLUMNS=160 "$bin" replay "$here/events/scenarios/bad-image-dev" --sweep MAX_ACTION_FRACTION=0.1,0.5 --sweep CRASH_THRESHOLD=3,5 >sweep.txt 2>sweep.err; echo $? >sweep.rc
echo "captured $(ls "$out" | wc -l) files in $out"
