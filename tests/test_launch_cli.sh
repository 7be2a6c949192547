#!/bin/sh
# svdlaunch, svdworker and svdtool as a user meets them (TAP): nothing is
# rendered or queued when a check fails, spec-relative paths, versions,
# synopses, spec errors in the compiler's form, site options as Slurm reads
# them, shard jobs, and hostile bytes never printed raw.  sbatch is a stand-in that
# records its calls: a job that reached it was queued.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
l=$tools/svdlaunch
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" 2>/dev/null | head -20; }
skip() { n=$((n+1)); echo "ok $n - $1 # SKIP $2"; }
echo "1..77"

mkdir -p "$tmp/bin" "$tmp/job" "$tmp/elsewhere"
cat >"$tmp/bin/sbatch" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/sbatch.calls"
echo 4242
EOF
chmod +x "$tmp/bin/sbatch"
PATH=$tmp/bin:$tools:$PATH
export PATH

# a job beside its model and image, named relative to the spec's folder
if "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 5 \
        --output "$tmp/job/model" >"$tmp/err" 2>&1; then
    ok "svdtool init writes the svd-mini model"
else nok "svdtool init"; fi
cp "$top/etc/demo/input.png" "$tmp/job/in.png"
cat >"$tmp/job/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 4
samples: 1
video: {inputs: [in.png], width: 112, height: 64, num_frames: 3, decode_chunk_size: 2}
output: {dir: '$tmp/out'}
cluster: {nodes: 1, ranks_per_node: 2}
YAML
spec=$tmp/job/job.yaml

# from another directory, the spec's relative paths are found
(cd "$tmp/elsewhere" && "$l" check ../job/job.yaml) >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "ok: 2 ranks" "$tmp/err"; then
    ok "check from another directory finds model and image beside the spec"
else nok "spec-relative paths (rc=$rc)"; fi
(cd "$tmp/elsewhere" && "$l" check ../job/job.yaml --set video.inputs=in.png) >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "video.inputs\[0\]: cannot open in.png" "$tmp/err"; then
    ok "a --set path stays relative to the working directory"
else nok "--set path (rc=$rc)"; fi

# started by hand, the worker names a missing model folder as such
"$tools/svdworker" "$spec" --set model.path="$tmp/nomodel" --set output.dir="$tmp/o1" \
    >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "model.path: cannot open $tmp/nomodel" "$tmp/err" &&
   ! grep -q "scheduler" "$tmp/err"; then
    ok "svdworker: a missing model.path is named, not taken for a missing scheduler/"
else nok "svdworker missing model (rc=$rc)"; fi

# every failing check: exit 2, no script written, nothing queued
try() {   # what, expected message, --set options...
    what=$1 msg=$2
    shift 2
    rm -f "$tmp/sbatch.calls" "$tmp/r.sh"
    rm -rf "$tmp/out" "$tmp/out.sbatch"
    "$l" render "$spec" -o "$tmp/r.sh" "$@" >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$msg" "$tmp/err" && [ ! -e "$tmp/r.sh" ]; then
        ok "render, $what: exit 2, names it, writes no script"
    else nok "render, $what (rc=$rc)"; fi
    "$l" submit "$spec" "$@" >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -q -- "$msg" "$tmp/err" && [ ! -e "$tmp/sbatch.calls" ] &&
       [ ! -e "$tmp/out.sbatch" ]; then
        ok "submit, $what: exit 2, nothing queued"
    else nok "submit, $what (rc=$rc)"; fi
}
try "a bad step assignment" "steps=7 is not divisible by 2 ranks" --set steps=7
try "a dtype the dummy model cannot hold" "dtype: f16: the dummy model is an f32 simulator" \
    --set dtype=f16 --set model.kind=dummy
if "$l" check "$spec" --set dtype=bf16 >"$tmp/err" 2>&1; then
    ok "check: bf16 weights on the cpu pass"
else nok "check: bf16 on the cpu refused: $(head -c 300 "$tmp/err")"; fi
try "a missing model" "model.path: cannot open $tmp/nomodel" --set model.path="$tmp/nomodel"
mkdir -p "$tmp/half/unet"
try "a model folder without its parts" "is not a usable SVD / SVD-XT folder" \
    --set model.path="$tmp/half"
try "a missing input" "video.inputs\[0\]: cannot open $tmp/nope.png" \
    --set video.inputs="$tmp/nope.png"
: >"$tmp/afile"
try "an output under a file" "output.dir: cannot create" --set output.dir="$tmp/afile/out"
try "a worker that is not there" "cluster.worker: cannot run" \
    --set cluster.worker="$tmp/bin/no-svdworker"
save=$PATH
PATH=$tmp/bin:/usr/bin:/bin
try "svdworker not on PATH" "'svdworker' is not on PATH"
PATH=$save
# nothing can be created in /proc, not even by root
try "an unwritable output" "output.dir: cannot write /proc/svdpipe-none/out" \
    --set output.dir=/proc/svdpipe-none/out
if [ "$(id -u)" -ne 0 ]; then
    mkdir -p "$tmp/ro" && chmod 555 "$tmp/ro"
    try "a read-only output folder" "output.dir: cannot write" --set output.dir="$tmp/ro/out"
else
    skip "render, a read-only output folder" "root writes everywhere"
    skip "submit, a read-only output folder" "root writes everywhere"
fi

# a good job is rendered and queued once
rm -f "$tmp/sbatch.calls"
"$l" submit "$spec" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 4242 "$tmp/err" && [ "$(wc -l <"$tmp/sbatch.calls")" -eq 1 ] &&
   [ -f "$tmp/out.sbatch" ]; then
    ok "submit of a good job: one sbatch call, prints the job id"
else nok "good submit (rc=$rc)"; fi
"$l" render "$spec" --no-path-check --set model.path=/elsewhere >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "srun --mpi=pmix" "$tmp/err"; then
    ok "--no-path-check renders a script for another machine"
else nok "--no-path-check (rc=$rc)"; fi

# spec errors in the compiler's form, without a log prefix
printf 'steps: 4\nstpes: 3\n' >"$tmp/bad.yaml"
for t in svdlaunch svdworker; do
    if [ $t = svdlaunch ]; then "$l" check "$tmp/bad.yaml" >"$tmp/err" 2>&1; rc=$?
    else "$tools/svdworker" "$tmp/bad.yaml" >"$tmp/err" 2>&1; rc=$?; fi
    if [ $rc -eq 2 ] && head -n 1 "$tmp/err" |
           grep -qx "$tmp/bad.yaml:2:1: unknown key 'stpes' (did you mean 'steps'?)"; then
        ok "$t: spec error is file:line:col: message"
    else nok "$t spec error (rc=$rc)"; fi
done

# --version on every tool; every option of --help in the man page's synopsis
for t in svdlaunch svdworker svdtool; do
    "$tools/$t" --version >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q "^$t (svdpipe) [0-9]" "$tmp/err"; then
        ok "$t --version"
    else nok "$t --version (rc=$rc)"; fi
done
for t in svdlaunch svdworker; do
    "$tools/$t" --help >"$tmp/help" 2>&1
    sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$top/doc/$t.1" | sed 's/\\-/-/g' >"$tmp/syn"
    missing=
    for o in $(sed -n '/^usage:/,/^$/p' "$tmp/help" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$o" "$tmp/syn" || missing="$missing $o"
    done
    "$tools/$t" --help | grep -q -- --version || missing="$missing --version(help)"
    if [ -z "$missing" ]; then ok "$t(1) synopsis has every option of --help"
    else echo "missing:$missing" >"$tmp/err"; nok "$t(1) synopsis"; fi
done
missing=
for c in $("$tools/svdtool" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'); do
    sed 's/\\-/-/g' "$top/doc/svdtool.1" | grep -q "^\.B $c\b" || missing="$missing $c"
done
if [ -z "$missing" ]; then ok "svdtool(1) has every command of --help"
else echo "missing:$missing" >"$tmp/err"; nok "svdtool(1) commands"; fi

# the shipped multi-node example renders for 2 nodes x 4 GPUs and plans
"$l" render "$top/etc/svd_2x4gpu.yaml" --no-path-check >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx "#SBATCH --nodes=2" "$tmp/err" &&
   grep -qx "#SBATCH --ntasks-per-node=4" "$tmp/err" && grep -q -- "--gpus-per-task=1" "$tmp/err"; then
    ok "etc/svd_2x4gpu.yaml renders 2 nodes x 4 tasks with a GPU each"
else nok "svd_2x4gpu render (rc=$rc)"; fi
"$l" plan "$top/etc/svd_2x4gpu.yaml" --hardware "$top/etc/hardware/h100.yaml" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "8 ranks (2 nodes x 4)" "$tmp/err" && grep -q "^memory per GPU" "$tmp/err"; then
    ok "etc/svd_2x4gpu.yaml plans on the H100 table"
else nok "svd_2x4gpu plan (rc=$rc)"; fi

# the planner prices the spec's dtype with the table's figures for it, or
# refuses; never another dtype's
h100=$top/etc/hardware/h100.yaml
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set dtype=f32 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "dtype: f32: .*has no figures for f32 (its svd times are for f16)" "$tmp/err"; then
    ok "plan refuses f32 with a table of f16 figures"
else nok "plan f32 on f16 figures (rc=$rc)"; fi
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set dtype=f16 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^costs .*, f16$" "$tmp/err"; then
    ok "plan prices f16 with the table's f16 figures"
else nok "plan f16 (rc=$rc)"; fi

# 64 nodes x 7: one pipeline of 448 cannot run 28 steps; plan still
# recommends a layout that can, marks the spec's invalid, exits 0
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set cluster.nodes=64 \
    --set samples=4480 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^ *448  (this, invalid: 28 steps do not divide over 448 stages)" "$tmp/err" &&
   grep -q "^recommended: pipeline.stages: 1 (448 pipelines x 1 stage)" "$tmp/err" &&
   ! grep -q "steps=448" "$tmp/err"; then
    ok "plan at 448 ranks recommends a layout and marks the spec's invalid"
else nok "plan 64x7 (rc=$rc)"; fi
# ... and offers 64 array tasks of one node beside the gang job, saying why
if grep -q "^  64 array tasks of 7 ranks" "$tmp/err" &&
   grep -q "^  recommended: the array: .*waits for one free node instead of 64" "$tmp/err" &&
   grep -q 'as an array: cluster: {nodes: 1, array: "0-63"}' "$tmp/err"; then
    ok "plan offers 64 array tasks of 7 ranks beside the gang job"
else nok "plan array option"; fi
# every row of the layouts table is the whole job's: replicas (S = 1) show
# one bubble, the 28-stage pipelines their fill and drain
if [ "$(grep -c '^ *1  *448  ' "$tmp/err")" -eq 1 ] &&
   grep -q "every figure is the job's" "$tmp/err"; then
    ok "one row per layout in the job's layouts table"
else nok "layouts table rows"; fi

# SVD-XT on 8 GPUs, objective latency: pairs recommended, every layout's
# latency printed; by throughput the replicas stay recommended
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set dtype=f16 \
    --set cluster.ranks_per_node=8 --set pipeline.objective=latency >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] &&
   grep -q "^recommended: pipeline.stages: 1, pipeline.guidance_parallel: 2 (4 pipelines x 1 stage x 2): objective latency: a sample takes 13.051 s .* against 25.950 s with 8 replicas" "$tmp/err" &&
   [ "$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+ +[12] +[0-9.]+ +[0-9.]+ +[0-9.]+x' "$tmp/err")" -eq 6 ] &&
   grep -qE '^ +1 +4 +28 +4 .* 2 +13\.051 +13\.051 .*<- recommended' "$tmp/err"; then
    ok "plan, objective latency, 8 GPUs: pairs recommended, the latency of each of 6 layouts"
else nok "plan objective latency (rc=$rc)"; sed 's/^/# /' "$tmp/err" | tail -15; fi
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set dtype=f16 \
    --set cluster.ranks_per_node=8 --json >"$tmp/plan8.json" 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ] && jq -e '.objective == "throughput" and .recommended_pairs == 1 and
       .recommended_stages == 1 and ([.layouts[] | select(.pairs == 2)] | length) == 3 and
       ([.layouts[] | .latency_s > 0 and .first_out_s > 0] | all)' "$tmp/plan8.json" >/dev/null; then
    ok "plan --json, objective throughput: replicas, and the pairs' layouts with their latency"
else nok "plan --json pairs (rc=$rc)"; fi
# render takes the array the plan proposes: one node per task
"$l" render "$top/etc/svd_7gpu.yaml" --no-path-check --set cluster.array=0-63 \
    --set pipeline.stages=1 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx "#SBATCH --array=0-63" "$tmp/err" &&
   grep -qx "#SBATCH --nodes=1" "$tmp/err" && grep -qx "#SBATCH --ntasks-per-node=7" "$tmp/err"; then
    ok "render writes the array of one-node tasks"
else nok "render array (rc=$rc)"; fi
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set cluster.array=0-63 \
    --set samples=4480 --set pipeline.stages=1 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^array    64 tasks (cluster.array 0-63), each up to 70 of the 4480 samples" "$tmp/err" &&
   grep -q "^ *1  *7  *28  *10 " "$tmp/err"; then
    ok "plan of an array prices one task's share"
else nok "plan array spec (rc=$rc)"; fi

# a predicted makespan beyond cluster.time is said
"$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set cluster.time=1 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^warning: the predicted makespan 71 s exceeds cluster.time 1 (60 s)" "$tmp/err"; then
    ok "plan warns when the makespan exceeds cluster.time"
else nok "plan time warning (rc=$rc)"; fi

# --json: one object that parses, with the same figures
if command -v jq >/dev/null 2>&1; then
    "$l" plan "$top/etc/svd_7gpu.yaml" --hardware "$h100" --set cluster.time=1 --json \
        >"$tmp/plan.json" 2>"$tmp/err"; rc=$?
    if [ $rc -eq 0 ] && [ "$(jq -r '.dtype' "$tmp/plan.json")" = f16 ] &&
       [ "$(jq -r '.layouts | length' "$tmp/plan.json")" = 2 ] &&
       [ "$(jq -r '.recommended_stages' "$tmp/plan.json")" = 1 ] &&
       [ "$(jq -r '.makespan_s | floor' "$tmp/plan.json")" = 71 ] &&
       [ "$(jq -r '.warnings | length' "$tmp/plan.json")" = 1 ]; then
        ok "plan --json parses (jq) and carries the layouts and the warning"
    else cp "$tmp/plan.json" "$tmp/err"; nok "plan --json (rc=$rc)"; fi
else skip "plan --json" "jq not installed"; fi

# render with stages: auto and no time model counts steps, not seconds
"$l" render "$top/etc/svd_7gpu.yaml" --no-path-check --set pipeline.stages=auto >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^# pipeline.stages: auto -> 1 (7 pipelines x 1 stage), predicted makespan 56 step times" "$tmp/err" &&
   ! grep -q "56.000 s" "$tmp/err"; then
    ok "render auto without a time model counts step times"
else nok "render auto unit steps (rc=$rc)"; fi

# the man pages made by the build carry its version
v=$("$l" --version | sed -n 's/^svdlaunch (.*) //p')
bad=
for m in svdlaunch.1 svdworker.1 svdtool.1 svdpipe-job.5; do
    head -n 1 "$bld/doc/man/$m" 2>/dev/null | grep -q "\"svdpipe $v\"" || bad="$bad $m"
done
if [ -n "$v" ] && [ -z "$bad" ]; then ok "man pages say version $v"
else echo "version '$v'; wrong:$bad" >"$tmp/err"; nok "man page versions"; fi

# submit's exit status when sbatch refuses the job is the man page's
mkdir -p "$tmp/badbin"
printf '#!/bin/sh\necho "sbatch: error: invalid partition" >&2\nexit 1\n' >"$tmp/badbin/sbatch"
chmod +x "$tmp/badbin/sbatch"
PATH=$tmp/badbin:$PATH "$l" submit "$spec" >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 3 ] && sed 's/\\-/-/g' "$top/doc/svdlaunch.1" | grep -q "^nothing was written or submitted; 3 submit: sbatch could not be run or"; then
    ok "submit exits 3 when sbatch refuses the job, as svdlaunch(1) says"
else nok "submit exit status (rc=$rc)"; fi

# containers: check refuses a job whose output is under no mount, and render
# hands the worker the spec's path inside the container
mkdir -p "$tmp/share/jobs"
cp "$spec" "$tmp/share/jobs/c.yaml"
"$l" check "$tmp/share/jobs/c.yaml" --no-path-check --set cluster.container_image=img \
    --set "cluster.container_mounts=[$tmp/share:/share]" --set cluster.container_workdir=/share \
    >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "output.dir: \"$tmp/out\" is under no mount" "$tmp/err"; then
    ok "check: an output.dir the container cannot see is refused"
else nok "container check (rc=$rc)"; fi
for rt in pyxis apptainer; do
    "$l" render "$tmp/share/jobs/c.yaml" --no-path-check --set cluster.container_image=img \
        --set "cluster.container_mounts=[$tmp/share:/share]" --set cluster.container_workdir=/share \
        --set output.dir=/share/out --set cluster.container_runtime=$rt >"$tmp/err" 2>&1; rc=$?
    if [ $rc -eq 0 ] && grep -q "^    'svdworker' '/share/jobs/c.yaml' " "$tmp/err" &&
       grep -q "^# svdpipe output.dir: $tmp/share/out\$" "$tmp/err"; then
        ok "render ($rt) passes the container-side spec path, and notes the outputs' host path"
    else nok "render $rt (rc=$rc)"; fi
done

# a manifest in a container: its absolute image paths are the container's,
# checked under the mounts and decoded through them; relative ones sit
# beside it.  An image no mount covers is named, and so is one that does not
# decode, by the path the worker would open
mkdir -p "$tmp/share/c2" "$tmp/share/img"
cp -r "$tmp/job/model" "$tmp/share/c2/model"
cp "$top/etc/demo/input.png" "$tmp/share/img/a.png"
cp "$top/etc/demo/input.png" "$tmp/share/c2/rel.png"
echo "not a picture" >"$tmp/share/img/bad.png"
printf '{"image": "/share/img/a.png"}\n{"image": "rel.png", "seed": 3}\n' >"$tmp/share/c2/m.jsonl"
cat >"$tmp/share/c2/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 4
video: {manifest: m.jsonl, width: 112, height: 64, num_frames: 3, decode_chunk_size: 2}
output: {dir: /share/out}
cluster:
  nodes: 1
  ranks_per_node: 2
  container_image: img
  container_mounts: ['$tmp/share:/share']
  container_workdir: /share
YAML
"$l" check "$tmp/share/c2/job.yaml" >"$tmp/err" 2>&1; rc=$?
echo '{"image": "/elsewhere/x.png"}' >>"$tmp/share/c2/m.jsonl"
"$l" check "$tmp/share/c2/job.yaml" >"$tmp/err2" 2>&1; rc2=$?
sed -i 's|/elsewhere/x.png|/share/img/bad.png|' "$tmp/share/c2/m.jsonl"
"$l" check "$tmp/share/c2/job.yaml" >"$tmp/err3" 2>&1; rc3=$?
"$l" check "$tmp/share/c2/job.yaml" --set video.manifest=/data/m.jsonl >"$tmp/err4" 2>&1; rc4=$?
if [ $rc -eq 0 ] && grep -q "ok: 2 ranks .*, 2 samples" "$tmp/err" &&
   [ $rc2 -eq 2 ] && grep -q "c2/m.jsonl:3: key 'image': /elsewhere/x.png is under no mount of cluster.container_mounts" "$tmp/err2" &&
   [ $rc3 -eq 2 ] && grep -q "video.manifest: 1 of 3 images does not decode: /share/img/bad.png" "$tmp/err3" &&
   [ $rc4 -eq 2 ] && grep -q "video.manifest: \"/data/m.jsonl\" is under no mount" "$tmp/err4"; then
    ok "container: a manifest's container paths checked through the mounts; unseen and undecodable images named"
else
    nok "container manifest (rc=$rc, $rc2, $rc3, $rc4)"
    sed 's/^/# /' "$tmp/err" "$tmp/err2" "$tmp/err3" "$tmp/err4"
fi

# status of a job id Slurm does not know: said, with what to give instead
"$l" status 999999 >"$tmp/err" 2>&1; rc=$?
"$l" status no-such-dir >"$tmp/err2" 2>&1; rc2=$?
if [ $rc -ne 0 ] && grep -q "status: job 999999: scontrol show job: .*give its output directory" "$tmp/err" &&
   [ $rc2 -ne 0 ]; then
    ok "status JOBID of an unknown job: scontrol's reason, and to give the output directory"
else nok "status of an unknown job (rc=$rc, rc2=$rc2)"; sed 's/^/# /' "$tmp/err" "$tmp/err2"; fi

# site keys checked after parsing still name the line and column of the value
cat >"$tmp/site.yaml" <<'YAML'
steps: 8
cluster:
  nodes: 1
  signal: "USR1@120"
  sbatch_args: ["--mail-type=END", "--comment=a b"]
YAML
"$l" check "$tmp/site.yaml" --no-path-check >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "^$tmp/site.yaml:4:11: cluster.signal: expected TERM@SECONDS or INT@SECONDS" "$tmp/err"; then
    ok "a bad cluster.signal is named at its line and column"
else nok "cluster.signal mark (rc=$rc)"; fi
"$l" check "$tmp/site.yaml" --no-path-check --set cluster.signal=TERM@60 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "^$tmp/site.yaml:5:36: cluster.sbatch_args\[1\]: expected an option" "$tmp/err"; then
    ok "a bad list item is named at its own line and column"
else nok "cluster.sbatch_args mark (rc=$rc)"; fi
"$l" check "$tmp/site.yaml" --no-path-check --set cluster.signal=HUP \
    --set cluster.sbatch_args=--x=1 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "^$tmp/site.yaml: cluster.signal: expected" "$tmp/err"; then
    ok "a bad value from --set is named without the file's line"
else nok "--set value mark (rc=$rc)"; fi

# ---- site options as Slurm reads them --------------------------------------
# an abbreviation is the option it stands for; per-rank srun logs pass
printf 'steps: 8\ncluster:\n  sbatch_args: ["--ntasks-per-n=4"]\n' >"$tmp/abbr.yaml"
"$l" check "$tmp/abbr.yaml" --no-path-check >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "abbr.yaml:3:17: cluster.sbatch_args\[0\]: .*(--ntasks-per-node: use cluster.ranks_per_node), found \"--ntasks-per-n=4\"" "$tmp/err"; then
    ok "an abbreviated sbatch option is the option it stands for: refused with its key"
else nok "sbatch abbreviation (rc=$rc)"; fi
printf 'steps: 8\ncluster:\n  srun_args: ["--output=rank-%%t.log", "--label"]\n' >"$tmp/rank.yaml"
"$l" render "$tmp/rank.yaml" --no-path-check >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^    --output=rank-%t.log --label \\\\$" "$tmp/err"; then
    ok "per-rank srun output files (--output=rank-%t.log) reach srun"
else nok "srun --output (rc=$rc)"; fi

# a relative cluster.worker: the spec's folder's, named from the root
mkdir -p "$tmp/job/bin"
printf '#!/bin/sh\n' >"$tmp/job/bin/svdworker"
chmod +x "$tmp/job/bin/svdworker"
printf 'steps: 4\noutput: {dir: out}\ncluster: {worker: bin/svdworker}\n' >"$tmp/job/rel.yaml"
(cd "$tmp/elsewhere" && "$l" render ../job/rel.yaml) >"$tmp/err" 2>&1; rc=$?
jobp=$(cd "$tmp/job" && pwd -P)
if [ $rc -eq 0 ] && grep -q "^    '$jobp/bin/svdworker' \"\$svp_spec\"$" "$tmp/err"; then
    ok "a relative cluster.worker is the spec folder's, named from the root in the script"
else nok "relative worker (rc=$rc)"; fi
(cd "$tmp/job" && "$l" check rel.yaml --set cluster.worker=nobin/svdworker) >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "cluster.worker: cannot run nobin/svdworker" "$tmp/err"; then
    ok "a relative cluster.worker from --set is the working directory's"
else nok "relative worker from --set (rc=$rc)"; fi

# arrays Slurm would refuse, or whose tasks outnumber the samples: warned
printf 'steps: 4\nsamples: 10\noutput: {dir: out}\ncluster: {array: "1-1500"}\n' >"$tmp/job/arr.yaml"
"$l" check "$tmp/job/arr.yaml" --no-path-check >"$tmp/err" 2>&1; rc=$?
"$l" check "$tmp/job/arr.yaml" --no-path-check --set cluster.array=0-15 >"$tmp/err2" 2>&1; rc2=$?
if [ $rc -eq 0 ] && grep -q "warn .*cluster.array: 1-1500 has task ids up to 1500, and Slurm's default MaxArraySize of 1001" "$tmp/err" &&
   [ $rc2 -eq 0 ] && grep -q "warn .*0-15 makes 16 tasks for 10 samples: 6 tasks get no sample.*MaxArraySize" "$tmp/err2"; then
    ok "arrays past MaxArraySize's default or with more tasks than samples are warned about"
else nok "array warnings (rc=$rc, rc2=$rc2)"; cat -v "$tmp/err2" | sed 's/^/# /'; fi

# independent shard jobs: render and submit --shard I/N
"$l" render "$tmp/job/arr.yaml" --set cluster.array= --shard 1/3 >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -q "^# shard 1 of 3: this job makes the samples whose index is 1 mod 3$" "$tmp/err" &&
   grep -q " \"\$svp_spec\" --shard 1/3 --set 'cluster.array='$" "$tmp/err"; then
    ok "render --shard I/N: the worker makes shard I of N"
else nok "render --shard (rc=$rc)"; fi
: >"$tmp/sbatch.calls"
(cd "$tmp/job" && "$l" submit arr.yaml --set cluster.array= --shard 2/3) >"$tmp/err" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -qx 4242 "$tmp/err" && [ -f "$tmp/job/out.shard-2-of-3.sbatch" ] &&
   grep -q -- "--parsable out.shard-2-of-3.sbatch" "$tmp/sbatch.calls" &&
   grep -q -- "--shard 2/3" "$tmp/job/out.shard-2-of-3.sbatch"; then
    ok "submit --shard I/N queues its own script, OUTPUT_DIR.shard-I-of-N.sbatch"
else nok "submit --shard (rc=$rc)"; cat "$tmp/sbatch.calls" | sed 's/^/# /'; fi
"$l" render "$tmp/job/arr.yaml" --shard 1/3 >"$tmp/err" 2>&1; rc=$?
"$l" check "$tmp/job/arr.yaml" --shard 1/3 >"$tmp/err2" 2>&1; rc2=$?
if [ $rc -eq 2 ] && grep -q "expected a job without cluster.array" "$tmp/err" && [ $rc2 -eq 2 ]; then
    ok "--shard is refused beside cluster.array, and by check"
else nok "--shard refused (rc=$rc, rc2=$rc2)"; fi

# ---- hostile bytes ---------------------------------------------------------
# Specs, --set values and manifests holding terminal sequences (ESC, BEL,
# CSI as C1), NUL, bidi overrides, a BOM and bytes that are not UTF-8 go
# through all three tools; what they print (stdout and stderr) holds no byte
# below 0x20 but newline, no DEL or C1 control, and is UTF-8: the values
# show as escapes.  A tab is escaped too (\t): a message is one line.
hb=$tmp/hostile
mkdir -p "$hb/in" "$hb/out"
: >"$hb/in/a.png"
# printable: no control byte but newline, no C1, valid UTF-8
hb_clean() {
    bad=$(tr -d '\n' <"$1" | LC_ALL=C tr -d ' -~\200-\377' | wc -c)
    [ "$bad" -eq 0 ] && iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 &&
        ! LC_ALL=C grep -q "$(printf '\302[\200-\237]')" "$1"
}
# specs: YAML escapes that make raw bytes, and raw bytes libyaml refuses
printf 'steps: "\\e[31mred\\e]0;title\\a"\n' >"$hb/s1.yaml"
printf 'steps: 4\nname: a\033[2Jb\n' >"$hb/s2.yaml"
printf 'steps: 4\nname: x\nseed: 5\377\376\n' >"$hb/s3.yaml"
printf 'steps: 4\nname: x\n  seed: \000\n' >"$hb/s4.yaml"
printf 'steps: 4\n---\n\033]0;x\007: [\n' >"$hb/s5.yaml"
printf 'steps: 4\n"ke\\u009by\\u202e\\t": 1\n' >"$hb/s6.yaml"
printf 'steps: 4\n"\\ufeffsteps\\x7f": 3\n' >"$hb/s7.yaml"
printf 'steps: 4\noutput: {dir: "%s/o\\e[31m"}\n' "$hb" >"$hb/s8.yaml"
printf 'steps: 4\nname: "job\\u009b\\u202e"\n' >"$hb/s9.yaml"
printf 'steps: 4\ncluster: {sbatch_args: ["--comment=\\e[31m"], srun_args: ["--x=\\x01"]}\n' >"$hb/s10.yaml"
printf 'steps: 4\nmodel: {kind: svd, path: "m\\e]0;x\\a"}\n' >"$hb/s11.yaml"
printf 'steps: 4\ncluster: {env: {"A\\e": 1}, worker: "w\\e[1m"}\n' >"$hb/s12.yaml"
printf '\357\273\277steps: 4\nname: "a\\x9b"\n' >"$hb/s13.yaml"
# --set values (on a clean spec)
printf 'steps: 4\nsamples: 2\nlatent_shape: [1, 2, 4, 8, 8]\noutput: {dir: "%s/out"}\n' \
    "$hb" >"$hb/ok.yaml"
sets1=$(printf 'steps=\033[31m')
sets2=$(printf 'lo\377\376g.level=warn')
sets3=$(printf '\033[2J=1')
sets4=$(printf 'name=\033]0;pwned\007')
sets5=$(printf 'cluster.env.A=\033[31m')
sets6=$(printf 'output.dir=o\033[1m')
sets7=$(printf 'video.inputs=[\033[31m.png]')
sets8=$(printf 'cluster.srun_args=--x=\001')
sets9=$(printf 'seed=\342\200\256 \t1')
# manifests
printf '{"image": "a\\u001b[31m.png"}\n' >"$hb/in/m1.jsonl"
printf '{"image": "a\033[31m.png"}\n' >"$hb/in/m2.jsonl"
printf '{"image": "\377\376.png"}\n' >"$hb/in/m3.jsonl"
printf '{"\\u009b\\u202e": 1}\n' >"$hb/in/m4.jsonl"
printf '{"image": "a.png", "name": "x\\u001b"}\n' >"$hb/in/m5.jsonl"
printf '{"image": "a.png", "seed": "\\u001b]0;x\\u0007"}\n' >"$hb/in/m6.jsonl"
printf '{"image": "a.png", "name": "ok"}\n{"image": "a.png", "name": "ok"}\n# \033[2J\n' \
    >"$hb/in/m7.jsonl"
printf '{"image": "a.png"}\n' >"$hb/in/$(printf 'm8\033[31m').jsonl"

hb_run() {   # hb_run OUT TOOL ARGS...: stdout and stderr of one run, appended
    o=$1; shift
    "$@" >>"$o" 2>&1 </dev/null
}
hb_tools() {   # hb_tools PREFIX SPEC [--set ...]: every tool that reads a spec
    p=$1; spec=$2; shift 2
    hb_run "$hb/$p.worker" "$tools/svdworker" "$spec" --check "$@"
    hb_run "$hb/$p.worker" "$tools/svdworker" "$spec" --print-spec "$@"
    for c in check render plan; do
        hb_run "$hb/$p.launch" "$l" "$c" "$spec" "$@"
    done
    hb_run "$hb/$p.launch" "$l" check "$spec" --no-path-check "$@"
    hb_run "$hb/$p.launch" "$l" submit "$spec" --dry-run "$@"
}
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13; do
    hb_tools spec "$hb/s$i.yaml"
done
for s in "$sets1" "$sets2" "$sets3" "$sets4" "$sets5" "$sets6" "$sets7" "$sets8" "$sets9"; do
    hb_tools set "$hb/ok.yaml" --set "$s"
done
for i in 1 2 3 4 5 6 7; do
    hb_tools manifest "$hb/ok.yaml" --set "video.manifest=$hb/in/m$i.jsonl" --set samples=0
done
hb_tools manifest "$hb/ok.yaml" --set "video.manifest=$hb/in/$(printf 'm8\033[31m').jsonl" \
    --set samples=0
# svdtool reads the spec back from a run's records: a run whose name,
# output folder and manifest carry hostile bytes, then its report
hbo=$hb/$(printf 'run\033[31m')
hb_run "$hb/spec.tool" "$tools/svdworker" "$hb/ok.yaml" --set "$sets4" \
    --set "output.dir=$hbo" --set "log.trace=$hbo/tr" \
    --set "video.manifest=$hb/in/$(printf 'm8\033[31m').jsonl" --set samples=0
cp "$hb/spec.tool" "$hb/manifest.tool"
cp "$hb/spec.tool" "$hb/set.tool"
for k in spec set manifest; do
    hb_run "$hb/$k.tool" "$tools/svdtool" report "$hbo" -o "$hb/rep-$k"
done
# a run record whose spec and file name are themselves hostile
mkdir -p "$hb/forged"
printf '{"spec": "steps: \\"\\u001b[31m\\"\\n\\u0000", "spec_file": "\\u001b]0;x\\u0007"}\n' \
    >"$hb/forged/run.json"
hb_run "$hb/spec.tool" "$tools/svdtool" report "$hb/forged" -o "$hb/rep-forged"
printf '{"_class_name": "\\u001b]0;x\\u0007", "prediction_type": "\\u009bv"}\n' \
    >"$hb/config.json"
hb_run "$hb/set.tool" "$tools/svdtool" schedule --config "$hb/config.json" --steps 4
hb_run "$hb/set.tool" "$tools/svdtool" init --config "$hb/config.json" --seed 1 \
    --output "$hb/init"

for k in spec set manifest; do
    for t in worker launch tool; do
        if [ -s "$hb/$k.$t" ] && hb_clean "$hb/$k.$t"; then
            ok "hostile bytes in a $k: svd$t prints none of them raw"
        else
            cp "$hb/$k.$t" "$tmp/err" 2>/dev/null
            nok "hostile bytes in a $k through svd$t"
            LC_ALL=C grep -n "$(printf '[\001-\011\013-\037\177]')" "$hb/$k.$t" |
                cat -v | head -5 | sed 's/^/# /'
        fi
    done
done
# and they were echoed, escaped: the cases reach the messages
cat "$hb"/*.worker "$hb"/*.launch "$hb"/*.tool >"$tmp/err"
if grep -q 'x1b\[31mred\\x1b\]0;title\\x07' "$tmp/err" &&
   grep -q "unknown key 'ke\\\\u009by\\\\u202e\\\\t'" "$tmp/err" &&
   grep -q "s3.yaml:3:8: invalid YAML: .*0xff" "$tmp/err" &&
   grep -q "s4.yaml:3:9: invalid YAML: .*0x00" "$tmp/err" &&
   grep -q "expected UTF-8 text, found the byte 0xff" "$tmp/err" &&
   grep -q 'm8\\x1b\[31m.jsonl' "$tmp/err" &&
   grep -q "unknown key '\\\\u009b\\\\u202e'" "$tmp/err"; then
    ok "hostile bytes are shown as escapes (\\x1b, \\u009b), with their line and column"
else nok "hostile bytes escaped"; fi
