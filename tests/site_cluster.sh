#!/bin/bash
# Site options through a real sbatch on the local cluster (TAP): a script
# rendered with cluster.cpus_per_task, signal, sbatch_args, srun_args, setup
# lines and expanded environment values is accepted by sbatch and srun, runs
# its setup before srun, expands $SLURM_JOB_ID, and makes every sample.  The
# options svdlaunch reads as Slurm does: an abbreviation sbatch takes, one it
# refuses as ambiguous, --mem-per-cpu beside --mem; per-rank srun logs; and
# two independent shard jobs (render --shard) that make the samples between
# them.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -20; }
echo "1..7"

sed -e '/^cluster:/,$d' -e "s|^  dir: out/sim_4rank|  dir: $tmp/out|" \
    "$top/etc/sim_4rank.yaml" >"$tmp/site.yaml"
cat >>"$tmp/site.yaml" <<'YAML'
cluster:
  nodes: 1
  ranks_per_node: 2
  time: "00:10:00"
  output: site-%j.out
  cpus_per_task: 2
  signal: "TERM@30"
  sbatch_args: ["--comm=svdpipe-site-test"]
  srun_args: ["--output=rank-%t.log"]
  setup: ["echo \"setup ran: tag=$SVP_TAG\"", "export SVP_SETUP_SEEN=1"]
  env_expand: true
  env:
    UCX_TLS: "sm,self"
    SVP_TAG: "job-${SLURM_JOB_ID}"
YAML

if (cd "$tmp" && PATH="$tools:$PATH" "$tools/svdlaunch" render site.yaml -o site.sh \
        && PATH="$tools:$PATH" timeout -k 5 120 sbatch --parsable --wait site.sh \
        >"$tmp/id" 2>"$tmp/sb.log") &&
   [ "$(ls "$tmp/out" | grep -c '^sample_.*\.safetensors$')" -eq 8 ]; then
    ok "sbatch and srun take the site options; all 8 samples made"
else cat "$tmp"/site-*.out >>"$tmp/sb.log" 2>/dev/null; nok "site options job" "$tmp/sb.log"; fi
id=$(head -n 1 "$tmp/id" 2>/dev/null | cut -d';' -f1)
if [ -n "$id" ] && grep -qx "setup ran: tag=job-$id" "$tmp/site-$id.out"; then
    ok "setup lines run before srun, with \$SLURM_JOB_ID expanded in cluster.env"
else nok "setup and env_expand" "$tmp/site-$id.out"; fi
if [ -n "$id" ] && scontrol show job "$id" >"$tmp/job" 2>&1 &&
   grep -q "Comment=svdpipe-site-test" "$tmp/job" && grep -q "CPUs/Task=2" "$tmp/job"; then
    ok "the job carries --comment from sbatch_args (as --comm) and --cpus-per-task=2"
else nok "job record" "$tmp/job"; fi
if [ -s "$tmp/rank-0.log" ] && [ -s "$tmp/rank-1.log" ] &&
   grep -q "r1 " "$tmp/rank-1.log" && ! grep -q "r1 " "$tmp/rank-0.log"; then
    ok "srun_args --output=rank-%t.log: a log per rank"
else ls "$tmp" >"$tmp/ls"; nok "per-rank srun logs" "$tmp/ls"; fi

# what svdlaunch reads as sbatch does: sbatch refuses --nod (ambiguous) and
# reads --ntasks-per-n as --ntasks-per-node; check refuses both first
for arg in --nod=2 --ntasks-per-n=2; do
    sed "s|^  sbatch_args: .*|  sbatch_args: [\"$arg\"]|" "$tmp/site.yaml" >"$tmp/abbr.yaml"
    (cd "$tmp" && PATH="$tools:$PATH" "$tools/svdlaunch" check abbr.yaml) \
        >>"$tmp/abbr.log" 2>&1 && echo "check accepted $arg" >>"$tmp/abbr.log"
    sbatch --test-only "$arg" --wrap=true >>"$tmp/abbr.log" 2>&1
    echo "sbatch $arg: $?" >>"$tmp/abbr.log"
done
if grep -q "sbatch: option '--nod[=2]*' is ambiguous" "$tmp/abbr.log" &&
   grep -q "sbatch --nod=2: [1-9]" "$tmp/abbr.log" &&
   grep -q "sbatch --ntasks-per-n=2: 0" "$tmp/abbr.log" &&
   grep -q "cluster.sbatch_args\[0\]: .*--nod is the beginning of --nodefile, --nodelist, --nodes" "$tmp/abbr.log" &&
   grep -q "cluster.sbatch_args\[0\]: .*(--ntasks-per-node: use cluster.ranks_per_node)" "$tmp/abbr.log" &&
   ! grep -q "check accepted" "$tmp/abbr.log"; then
    ok "abbreviations: check refuses what sbatch refuses (--nod) or reads as its own option"
else nok "abbreviations as sbatch reads them" "$tmp/abbr.log"; fi
sed "s|^  sbatch_args: .*|  sbatch_args: [\"--mem-per-cpu=50M\"]\n  mem: 100M|" \
    "$tmp/site.yaml" >"$tmp/mem.yaml"
(cd "$tmp" && PATH="$tools:$PATH" "$tools/svdlaunch" check mem.yaml) >"$tmp/mem.log" 2>&1
rc=$?
sbatch --test-only --mem=100M --mem-per-cpu=50M --wrap=true >>"$tmp/mem.log" 2>&1
rc2=$?
if [ $rc -eq 2 ] && [ $rc2 -ne 0 ] && grep -q "mutually exclusive" "$tmp/mem.log" &&
   grep -q "no --mem-per-cpu beside cluster.mem" "$tmp/mem.log"; then
    ok "--mem-per-cpu beside cluster.mem: refused by check, as sbatch refuses it"
else nok "--mem-per-cpu beside --mem (rc=$rc, sbatch $rc2)" "$tmp/mem.log"; fi

# two independent shard jobs share an output folder and make every sample
for i in 0 1; do
    (cd "$tmp" && PATH="$tools:$PATH" "$tools/svdlaunch" render site.yaml --shard $i/2 \
         --set output.dir="$tmp/shards" --set 'cluster.srun_args=[]' -o shard$i.sh) \
        >>"$tmp/shards.log" 2>&1
done
(cd "$tmp" && for i in 0 1; do
     PATH="$tools:$PATH" timeout -k 5 120 sbatch --parsable --wait shard$i.sh \
         >>"$tmp/shards.log" 2>&1 &
 done; wait)
if [ "$(ls "$tmp/shards" 2>/dev/null | grep -c '^sample_.*\.safetensors$')" -eq 8 ] &&
   grep -q -- "--shard 1/2" "$tmp/shard1.sh"; then
    ok "render --shard 0/2 and 1/2: two jobs make the 8 samples between them"
else ls "$tmp/shards" >>"$tmp/shards.log" 2>&1; nok "shard jobs" "$tmp/shards.log"; fi
