#!/bin/bash
# Site options through a real sbatch on the local cluster (TAP): a script
# rendered with cluster.cpus_per_task, signal, sbatch_args, srun_args, setup
# lines and expanded environment values is accepted by sbatch and srun, runs
# its setup before srun, expands $SLURM_JOB_ID, and makes every sample.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -20; }
echo "1..3"

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
  sbatch_args: ["--comment=svdpipe-site-test"]
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
    ok "the job carries --comment from sbatch_args and --cpus-per-task=2"
else nok "job record" "$tmp/job"; fi
