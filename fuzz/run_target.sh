#!/bin/sh
# Runs one fuzz target for a bounded time over a copy of its seed corpus, so that the repo's
# corpus is never written to; exits non-zero on any finding (crash, leak, UB, timeout, memory),
# leaving the input that found it in WORK/ (crash-*, leak-*, timeout-*, oom-*).
# Usage: run_target.sh TARGET CORPUS WORK SECONDS   ($MPLOADER_FUZZ_SECONDS overrides SECONDS)
set -eu
target=$1 corpus=$2 work=$3 seconds=${MPLOADER_FUZZ_SECONDS:-$4}
rm -rf "$work"
mkdir -p "$work/corpus"
cp "$corpus"/* "$work/corpus/"
# -timeout: one input taking over 10 s is a hang; -rss_limit_mb: the parsers must never need
# much memory, whatever the input says; -max_len: seeds are kilobytes, findings come small.
exec "$target" "$work/corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -artifact_prefix="$work/" -print_final_stats=1
