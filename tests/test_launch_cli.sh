#!/bin/sh
# svdlaunch, svdworker and svdtool as a user meets them (TAP): nothing is
# rendered or queued when a check fails, spec-relative paths, versions,
# synopses, spec errors in the compiler's form.  sbatch is a stand-in that
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
echo "1..59"

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
