#! /bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs libFuzzer targets for a bounded time each, as `make fuzz` does:
#
#   run-fuzz.sh --bin DIR --srcdir DIR --out DIR --time SECONDS TARGET...
#
# Each TARGET runs as DIR/fuzz-TARGET for SECONDS seconds over a working
# corpus (OUT/work/TARGET) seeded from the committed corpus and past
# findings (SRCDIR/corpus/TARGET, SRCDIR/regress/TARGET).  A crash, a
# sanitizer report, a leak, a timeout or an out-of-memory is a finding:
# the input is saved in OUT/findings/ and the target fails.  Prints one
# line per target and a summary "fuzz: N passed, N failed"; exits nonzero
# if any failed.
set -u
bin= src= out= time=60
while [ $# -gt 0 ]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --srcdir) src=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --time) time=$2; shift 2 ;;
    *) break ;;
  esac
done
pass=0 fail=0
mkdir -p "$out/findings"
for t in "$@"; do
  work=$out/work/$t
  log=$out/fuzz-$t.log
  mkdir -p "$work"
  for d in "$src/corpus/$t" "$src/regress/$t"; do
    [ -d "$d" ] && cp -f "$d"/* "$work"/ 2>/dev/null
  done
  start=$(date +%s)
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: ASan's
  # shadow and quarantine stay well under it; -error_exitcode: any finding;
  # -print_funcs=0: no symbolizer (and its pipes) for NEW_FUNC lines.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} \
  "$bin/fuzz-$t" -max_total_time="$time" -timeout=10 -rss_limit_mb=4096 \
    -error_exitcode=77 -print_funcs=0 -artifact_prefix="$out/findings/$t-" \
    -print_final_stats=1 "$work" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    pass=$((pass + 1))
    echo "fuzz $t: ok (${runs:-?} runs in ${secs} s, ${cov:-cov: ?})"
  else
    fail=$((fail + 1))
    echo "fuzz $t: FAILED (exit $rc after ${secs} s); findings:"
    grep -E 'ERROR|SUMMARY|invariant|runtime error|^ +#[0-9]+ ' "$log" \
      | head -30 | sed 's/^/  | /'
    # Each finding's bytes, base64, so that a CI log alone reproduces it
    # (base64 -d > FILE; fuzz-TARGET-replay FILE).
    for f in "$out/findings/$t-"*; do
      [ -f "$f" ] || continue
      echo "  | finding $(basename "$f") ($(wc -c <"$f") bytes):"
      head -c 65536 "$f" | base64 -w 76 | sed 's/^/  |   /'
    done
  fi
done
echo "fuzz: $pass passed, $fail failed"
[ $fail -eq 0 ]
