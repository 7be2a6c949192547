#!/bin/sh
# svdworker as a user meets it: exit codes, messages, outputs (TAP).
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
w=$bld/src/tools/svdworker
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | head -20; }
echo "1..7"

printf 'steps: 4\nstpes: 3\n' > "$tmp/bad.yaml"
"$w" "$tmp/bad.yaml" --set output.dir="$tmp/out" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "bad.yaml:2:1: unknown key 'stpes' (did you mean 'steps'?)" "$tmp/err"; then
    ok "unknown key: exit 2 with file:line:col and a suggestion"; else nok "unknown key (rc=$rc)"; fi
if [ ! -e "$tmp/out" ]; then ok "bad spec starts nothing"; else nok "bad spec created outputs"; fi

"$w" "$tmp/missing.yaml" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "missing.yaml" "$tmp/err"; then ok "missing spec file named, exit 2"; else nok "missing spec (rc=$rc)"; fi

"$w" --set steps=abc >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q "key 'steps': expected an integer" "$tmp/err"; then ok "--set value checked"; else nok "--set (rc=$rc)"; fi

printf 'steps: 6\nsamples: 2\nlatent_shape: [1, 3, 4, 4, 4]\n' > "$tmp/job.yaml"
"$w" "$tmp/job.yaml" --set output.dir="$tmp/out" >"$tmp/log" 2>&1; rc=$?
cp "$tmp/log" "$tmp/err"
if [ $rc -eq 0 ] && [ -f "$tmp/out/sample_000000.safetensors" ] && [ -f "$tmp/out/sample_000001.safetensors" ]; then
    ok "one-process run writes every sample"; else nok "run (rc=$rc)"; fi
if grep -q "r0 info  rank 0 of 1 runs steps \[0, 6)" "$tmp/log" && grep -q "summary: 2 samples" "$tmp/log" && grep -q "eta" "$tmp/log"; then
    ok "log names host:rank, step range, progress with eta, summary"; else nok "log content"; fi
if [ -z "$(find "$tmp/out" -name '*.tmp.*')" ]; then ok "no temporary files left"; else nok "temporaries left"; fi
