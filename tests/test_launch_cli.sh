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
echo "1..37"

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
