#!/bin/sh
# svdlaunch plan's words (TAP): the array it proposes keeps the pairs, a tie
# is called a tie, and its JSON keeps the spec's array apart from the
# proposal's.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
l=$bld/src/tools/svdlaunch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -n 20; }
echo "1..3"
hw=$top/etc/hardware/h100.yaml

"$l" plan "$top/etc/svd_2x4gpu.yaml" --hardware "$hw" --set samples=80 \
    --set pipeline.guidance_parallel=2 --set pipeline.objective=latency >"$tmp/pairs.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "as an array: cluster: {nodes: 1, array: \"0-1\"}, pipeline: {stages: [0-9]*, guidance_parallel: 2}" "$tmp/pairs.log"; then
    ok "objective latency with pairs: the array proposed keeps guidance_parallel: 2"
else
    nok "array proposal with pairs (rc=$rc)" "$tmp/pairs.log"
fi

"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$hw" --set samples=1000000 \
    >"$tmp/tie.log" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "recommended: pipeline.stages: 1 .*: a tie: 7 stages is priced 0\.[0-9]* s shorter" "$tmp/tie.log" &&
   ! grep -q "replicas have no fill or drain" "$tmp/tie.log"; then
    ok "1,000,000 samples: the layout priced 0.15 s shorter of 3.7e6 s is called a tie, not a loss of the recommended one"
else
    nok "tie wording (rc=$rc)" "$tmp/tie.log"
fi

"$l" plan "$top/etc/svd_2x4gpu.yaml" --hardware "$hw" --json >"$tmp/plan.json" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] && jq -e 'has("spec_array_tasks") and (has("array_tasks") | not)' "$tmp/plan.json" >/dev/null; then
    ok "plan --json: the spec's array is spec_array_tasks, apart from the proposal's array.tasks"
else
    nok "plan json keys (rc=$rc)" "$tmp/err"
fi
