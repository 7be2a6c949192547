#!/bin/bash
# A job sharded over a Slurm array, on a real (local, throwaway) cluster: a
# 3-task array of a 2-rank job over 20 manifest samples with mixed
# parameters makes each sample once, each with its own line's parameters,
# bit-identical to one process making them all; one task killed halfway is
# reported by svdlaunch status, and run again it completes the set with
# nothing redone.  Runs inside with-cluster.sh; prints TAP.
set -u
top=${SVP_TOP_SRCDIR:?}
bld=${SVP_TOP_BUILDDIR:?}
w=$bld/src/tools/svdworker
launch=$bld/src/tools/svdlaunch
PATH=$bld/src/tools:$PATH
export PATH
tmp=$(mktemp -d /tmp/svp-array.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
n=0
ok()  { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -n 30; }
outputs() { ls "$1" 2>/dev/null | grep -c '\.safetensors$'; }
# the params metadata of an output (its safetensors header holds JSON text)
params() { head -c 4096 "$1" | tr -d '\000' | grep -ao '"params":"{[^}]*}'; }
gone() {  # waits until job $1 has left the queue
    for _ in $(seq 600); do
        [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
        sleep 0.1
    done
    return 1
}

echo "1..7"

# 20 samples: seeds, fps, motion buckets, noise, guidance and names differ by
# line; lines of shard 1 (i mod 3 == 1) keep the default names the test polls
mkdir -p "$tmp/img"
cp "$top/etc/demo/input.png" "$tmp/img/a.png"
cp "$top/etc/demo/input.png" "$tmp/img/b.png"
: >"$tmp/m.jsonl"
for i in $(seq 0 19); do
    line="{\"image\": \"img/$([ $((i % 2)) -eq 0 ] && echo a || echo b).png\""
    [ $((i % 4)) -ne 3 ] && line="$line, \"seed\": $((1000 + 7 * i))"
    [ $((i % 5)) -eq 0 ] && line="$line, \"fps\": $((3 + i))"
    [ $((i % 3)) -eq 2 ] && line="$line, \"motion_bucket_id\": $((10 * i)), \"name\": \"clip-$i\""
    [ $((i % 7)) -eq 1 ] && line="$line, \"noise_aug_strength\": 0.$i, \"min_guidance\": 1.5, \"max_guidance\": 2.$i"
    echo "$line}" >>"$tmp/m.jsonl"
    [ $((i % 6)) -eq 5 ] && echo "# a comment keeps the line numbers honest" >>"$tmp/m.jsonl"
done
cat >"$tmp/arr.yaml" <<YAML
name: arr
model: {dummy: {cost: sleep, step_ms: 20}}
steps: 4
seed: 5
latent_shape: [1, 2, 4, 8, 8]
video: {manifest: m.jsonl, fps: 9}
comm: {deadline: 20, transport: 'posix,self'}
output: {dir: '$tmp/out'}
cluster: {nodes: 1, ranks_per_node: 2, array: '0-2', output: '$tmp/arr-%A_%a.out'}
log: {trace: tr}
YAML
# (from $tmp, as the array's tasks: the spec's log.trace is relative)
(cd "$tmp" && "$w" "$tmp/arr.yaml" --set output.dir="$tmp/ref" --set model.dummy.step_ms=0) \
    >"$tmp/ref.log" 2>&1 ||
    { echo "Bail out! the one-process reference run failed"; cat "$tmp/ref.log"; exit 1; }
"$launch" render "$tmp/arr.yaml" -o "$tmp/arr.sh" >"$tmp/render.log" 2>&1 ||
    { echo "Bail out! render failed"; cat "$tmp/render.log"; exit 1; }

# ---- the whole array: every sample once, with its own parameters ----------
(cd "$tmp" && timeout -k 5 120 sbatch --wait "$tmp/arr.sh" >>"$tmp/render.log" 2>&1)
rc=$?
runs=0
for i in 0 1 2; do
    r=$(sed -n 's/^ *"run": \([0-9]*\),*$/\1/p' "$tmp/out/run.shard-$i-of-3.json" 2>/dev/null)
    runs=$((runs + ${r:-100}))
done
bad=""
for f in "$tmp"/ref/*.safetensors; do
    cmp -s "$f" "$tmp/out/$(basename "$f")" || bad="$bad $(basename "$f")"
done
if [ $rc -eq 0 ] && [ "$(outputs "$tmp/out")" -eq 20 ] && [ "$(outputs "$tmp/ref")" -eq 20 ] &&
   [ $runs -eq 20 ] && [ -z "$bad" ] && [ ! -e "$tmp/out/run.json" ] &&
   grep -q "task 1 of 3 makes 7 of them" "$tmp"/arr-*_1.out &&
   grep -q "task 2 of 3 makes 6 of them" "$tmp"/arr-*_2.out; then
    ok "3 tasks x 2 ranks: 20 samples, made 7 + 7 + 6 times in all, bit-identical to one process"
else
    nok "array of 3 (rc=$rc, $(outputs "$tmp/out") outputs, $runs runs, differ:$bad)" "$tmp/render.log"
    cat "$tmp"/arr-*.out 2>/dev/null | sed 's/^/# /' | tail -n 20
fi

# each output records its own line's parameters (line k of the file is
# sample i; comment lines are not samples), defaults from the spec; where
# the line sits is not among them
bad=""
k=0
i=0
while IFS= read -r line; do
    k=$((k + 1))
    case $line in \#*) continue ;; esac
    name=$(printf 'sample_%06d' $i)
    [ $((i % 3)) -eq 2 ] && name=clip-$i
    p=$(params "$tmp/out/$name.safetensors")
    seed=5; [ $((i % 4)) -ne 3 ] && seed=$((1000 + 7 * i))
    fps=9; [ $((i % 5)) -eq 0 ] && fps=$((3 + i))
    mb=127; [ $((i % 3)) -eq 2 ] && mb=$((10 * i))
    case $p in
    *"\\\"fps\\\":$fps,"*"\\\"motion_bucket_id\\\":$mb,"*"\\\"name\\\":\\\"$name\\\""*"\\\"seed\\\":$seed}") ;;
    *) bad="$bad $i" ;;
    esac
    if [ $((i % 7)) -eq 1 ] && ! echo "$p" | grep -qF "max_guidance\\\":2.$i,"; then bad="$bad $i(g)"; fi
    i=$((i + 1))
done <"$tmp/m.jsonl"
if [ $i -eq 20 ] && [ -z "$bad" ]; then
    ok "every output carries its own manifest line's seed, fps, motion bucket, guidance and name"
else
    nok "outputs' parameters (lines $i, wrong:$bad)"
    params "$tmp/out/sample_000001.safetensors" | sed 's/^/# /'
fi

# ---- svdtool report: one report per task, picked with --run --------------
svdtool=$bld/src/tools/svdtool
"$svdtool" report "$tmp/out" -o "$tmp/rep" >"$tmp/rep.log" 2>&1
rc=$?
"$svdtool" report "$tmp/out" --run "$tmp/out/run.shard-2-of-3.json" -o "$tmp/rep2" \
    >>"$tmp/rep.log" 2>&1
rc2=$?
if [ $rc -ne 0 ] && [ ! -e "$tmp/rep/report.json" ] &&
   grep -q "the run records of 3 array tasks, one report each: add --run" "$tmp/rep.log" &&
   grep -q "run.shard-0-of-3.json" "$tmp/rep.log" && [ $rc2 -eq 0 ] &&
   [ "$(jq '.ranks | length' "$tmp/rep2/report.json" 2>/dev/null)" = 2 ] &&
   [ "$(jq '.samples' "$tmp/rep2/report.json" 2>/dev/null)" = 6 ]; then
    ok "svdtool report on the array's folder names the 3 tasks' records; with --run, task 2's report: 2 ranks, its 6 samples"
else
    nok "svdtool report of an array task (rc=$rc, rc2=$rc2, ranks $(jq ".ranks | length" "$tmp/rep2/report.json" 2>&1), samples $(jq .samples "$tmp/rep2/report.json" 2>&1))" "$tmp/rep.log"
fi

# ---- one task stopped halfway: status names it, then it completes ---------
sed -i -e "s|$tmp/out|$tmp/half|" -e 's/step_ms: 20/step_ms: 150/' "$tmp/arr.yaml"
"$launch" render "$tmp/arr.yaml" -o "$tmp/half.sh" >>"$tmp/render.log" 2>&1
id=$(cd "$tmp" && sbatch --parsable "$tmp/half.sh" 2>>"$tmp/render.log")
id=${id%%;*}
for _ in $(seq 600); do  # until task 1 has made 2 of its 7 (samples 1 and 4)
    [ -e "$tmp/half/sample_000004.safetensors" ] && break
    sleep 0.05
done
scancel "${id}_1"
# while tasks 0 and 2 run on: the ETA counts their samples, not task 1's
for _ in $(seq 100); do
    grep -q '"state": "stopped"' "$tmp/half/task.shard-1-of-3.json" 2>/dev/null && break
    sleep 0.05
done
"$launch" status "$tmp/half" --json >"$tmp/status_mid.json" 2>&1
gone "$id"
before=$(outputs "$tmp/half")
mine=0
for s in 1 4 7 10 13 16 19; do
    [ -e "$tmp/half/$(printf 'sample_%06d' $s).safetensors" ] && mine=$((mine + 1))
done
missing=$(for s in 1 4 7 10 13 16 19; do
    [ -e "$tmp/half/$(printf 'sample_%06d' $s).safetensors" ] || printf '%s\n' "$s"
done | jq -s -c .)
"$launch" status "$tmp/half" >"$tmp/status.txt" 2>&1
"$launch" status "$tmp/half" --json >"$tmp/status.json" 2>&1
if [ "$mine" -ge 2 ] && [ "$mine" -lt 7 ] && [ "$before" -eq $((13 + mine)) ] &&
   grep -q "job 'arr' in $tmp/half: $before of 20 samples done" "$tmp/status.txt" &&
   grep -q "task 1 of 3: $mine of 7 done, stopped" "$tmp/status.txt" &&
   grep -q "task 0 of 3: 7 of 7 done, done" "$tmp/status.txt" &&
   grep -q "failed: $((7 - mine)) samples not made by a failed, stopped or lost task" "$tmp/status.txt" &&
   grep -q "\"done\": $before," "$tmp/status.json" &&
   grep -q "\"failed_count\": $((7 - mine))," "$tmp/status.json" &&
   grep -q "task 1 of 3: $mine of 7 done, stopped (job ${id}_1)" "$tmp/status.txt" &&
   [ "$(jq -c '[.failed[] | if type == "array" then range(.[0]; .[1] + 1; .[2]) else . end]' "$tmp/status.json")" = "$missing" ]; then
    ok "task 1 stopped after $mine of its 7: status says $before of 20 done, which task (${id}_1), all $((7 - mine)) missing listed in its JSON"
else
    nok "half-finished array (task 1 made $mine, $before outputs)" "$tmp/status.txt"
fi

# the status taken while tasks 0 and 2 still ran: the ETA's samples are
# theirs, task 1's are counted apart
mid_ok=no
if jq -e --argjson m "$(jq length <<<"$missing")" \
     '(.tasks[1].state == "stopped") and
      (.remaining == ([.tasks[] | select(.state == "running") | .samples - .done] | add // 0)) and
      (.done + .remaining + .orphaned == 20) and
      (.orphaned >= ([.tasks[1] | .samples - .done] | add)) and
      (.failed_count == (.tasks[1].samples - .tasks[1].done)) and
      ((.eta_s == null) or (.remaining > 0))' "$tmp/status_mid.json" >/dev/null 2>&1; then
    mid_ok=yes
fi
if [ $mid_ok = yes ]; then
    ok "status while tasks 0 and 2 ran: its ETA counts their $(jq .remaining "$tmp/status_mid.json") samples; task 1's $(jq .orphaned "$tmp/status_mid.json") counted apart, none in the ETA"
else
    nok "status while the other tasks ran" "$tmp/status_mid.json"
fi

# run task 1 again, alone: its shard by the spec's range, nothing redone
find "$tmp/half" -name '*.safetensors' -printf '%f %T@\n' | sort >"$tmp/mtimes.before"
(cd "$tmp" && timeout -k 5 120 sbatch --wait --array=1 "$tmp/half.sh" >>"$tmp/render.log" 2>&1)
rc=$?
find "$tmp/half" -name '*.safetensors' -printf '%f %T@\n' | sort >"$tmp/mtimes.after"
redone=$(join "$tmp/mtimes.before" "$tmp/mtimes.after" | awk '$2 != $3' | wc -l)
r1=$(sed -n 's/^ *"run": \([0-9]*\),*$/\1/p' "$tmp/half/run.shard-1-of-3.json" 2>/dev/null)
s1=$(sed -n 's/^ *"skipped": \([0-9]*\),*$/\1/p' "$tmp/half/run.shard-1-of-3.json" 2>/dev/null)
bad=""
for f in "$tmp"/ref/*.safetensors; do
    cmp -s "$f" "$tmp/half/$(basename "$f")" || bad="$bad $(basename "$f")"
done
if [ $rc -eq 0 ] && [ "$(outputs "$tmp/half")" -eq 20 ] && [ "$redone" -eq 0 ] &&
   [ "${r1:-x}" = $((7 - mine)) ] && [ "${s1:-x}" = "$mine" ] && [ -z "$bad" ] &&
   grep -q "skipped .* (finished by an earlier run)" "$tmp"/arr-*_1.out; then
    ok "task 1 run again alone: made its $((7 - mine)) missing, skipped its $mine, none of the $before redone; all 20 bit-identical"
else
    nok "rerun of task 1 (rc=$rc, $(outputs "$tmp/half") outputs, $redone redone, run ${r1:-?} skipped ${s1:-?}, differ:$bad)" "$tmp/render.log"
fi

"$launch" status "$tmp/half" >"$tmp/status2.txt" 2>&1
if grep -q "20 of 20 samples done (100%), 3 tasks" "$tmp/status2.txt" &&
   ! grep -q "failed" "$tmp/status2.txt" && grep -q "task 1 of 3: 7 of 7 done, done" "$tmp/status2.txt"; then
    ok "status after the rerun: 20 of 20, every task done, nothing failed"
else
    nok "status after the rerun" "$tmp/status2.txt"
fi
