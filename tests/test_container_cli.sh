#!/bin/sh
# Jobs that run in a container, as svdlaunch checks them before the queue
# (TAP): video.inputs seen through the mounts are counted and priced, a
# read-only mount under output.dir is refused, and so are an Apptainer image
# missing on the host and a cluster host without apptainer.
top=${SVP_TOP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
bld=${SVP_TOP_BUILDDIR:-$top/_build}
tools=$bld/src/tools
l=$tools/svdlaunch
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); echo "not ok $n - $1"; sed 's/^/# /' "$2" 2>/dev/null | tail -n 20; }
# the worker on PATH, as check wants it on a cluster; no sbatch of ours yet
mkdir -p "$tmp/bin"
ln -s "$tools/svdworker" "$tmp/bin/svdworker"
PATH=$tmp/bin:/usr/bin:/bin
# (apptainer and singularity are not installed here; a test of their
# absence needs that)
if command -v apptainer >/dev/null 2>&1 || command -v singularity >/dev/null 2>&1; then
    echo "1..0 # SKIP apptainer is installed: its absence cannot be tried"; exit 0
fi
echo "1..5"
export PATH

mkdir -p "$tmp/share/job" "$tmp/share/inputs"
if "$tools/svdtool" init --model-config-dir "$top/etc/models/svd-mini" --seed 5 \
        --output "$tmp/share/job/model" >"$tmp/init.log" 2>&1; then :; else
    echo "Bail out! svdtool init failed"; cat "$tmp/init.log"; exit 1
fi
for i in 1 2 3; do cp "$top/etc/demo/input.png" "$tmp/share/inputs/p$i.png"; done
cat >"$tmp/share/job/job.yaml" <<YAML
model: {kind: svd, path: model}
steps: 4
video: {inputs: [/data/inputs], seeds: [1, 2], width: 112, height: 64, num_frames: 3,
        decode_chunk_size: 3}
output: {dir: /data/out}
cluster:
  nodes: 1
  ranks_per_node: 2
  container_image: img
  container_mounts: ['$tmp/share:/data']
  container_workdir: /data
YAML

"$l" check "$tmp/share/job/job.yaml" >"$tmp/check.log" 2>&1; rc=$?
"$l" plan "$tmp/share/job/job.yaml" --hardware "$top/etc/hardware/h100.yaml" \
    --set dtype=f16 >"$tmp/plan.log" 2>&1; rc2=$?
if [ $rc -eq 0 ] && grep -q "ok: 2 ranks .*, 6 samples" "$tmp/check.log" &&
   [ $rc2 -eq 0 ] && ! grep -q "cannot open" "$tmp/plan.log"; then
    ok "video.inputs in the container (/data/inputs): check counts 3 images x 2 seeds = 6 samples, plan prices them"
else
    cat "$tmp/plan.log" >>"$tmp/check.log"
    nok "video.inputs through the mounts (check rc=$rc, plan rc=$rc2)" "$tmp/check.log"
fi

"$l" check "$tmp/share/job/job.yaml" --set "cluster.container_mounts=[$tmp/share:/data:ro]" \
    >"$tmp/ro.log" 2>&1; rc=$?
"$l" check "$tmp/share/job/job.yaml" \
    --set "cluster.container_mounts=[$tmp/share:/data:ro, $tmp/share:/data/out]" \
    >"$tmp/ro2.log" 2>&1; rc2=$?
if [ $rc -eq 2 ] && grep -q "output.dir: \"/data/out\" lies on the read-only mount $tmp/share:/data:ro" "$tmp/ro.log" &&
   [ $rc2 -eq 0 ]; then
    ok "output.dir on a read-only mount refused; a writable mount over it is fine"
else
    cat "$tmp/ro2.log" >>"$tmp/ro.log"
    nok "read-only mount (rc=$rc, rc2=$rc2)" "$tmp/ro.log"
fi

# (an apptainer of our own on PATH: where sbatch is, check looks for it)
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/apptainer"
chmod +x "$tmp/bin/apptainer"
"$l" check "$tmp/share/job/job.yaml" --set cluster.container_runtime=apptainer \
    --set cluster.container_image=img.sif >"$tmp/sif.log" 2>&1; rc=$?
touch "$tmp/share/job/img.sif"
"$l" check "$tmp/share/job/job.yaml" --set cluster.container_runtime=apptainer \
    --set cluster.container_image=img.sif >"$tmp/sif2.log" 2>&1; rc2=$?
"$l" check "$tmp/share/job/job.yaml" --set cluster.container_runtime=apptainer \
    --set cluster.container_image=docker://example/svdpipe:1 >"$tmp/sif3.log" 2>&1; rc3=$?
if [ $rc -eq 2 ] && grep -q "cluster.container_image: $tmp/share/job/img.sif: No such file or directory" "$tmp/sif.log" &&
   [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ]; then
    ok "apptainer: a missing .sif refused (from the spec's folder); a present one and a docker:// image pass"
else
    cat "$tmp/sif2.log" "$tmp/sif3.log" >>"$tmp/sif.log"
    nok "apptainer image (rc=$rc, rc2=$rc2, rc3=$rc3)" "$tmp/sif.log"
fi

# a cluster host (sbatch on PATH) without apptainer: refused; with it: fine
rm -f "$tmp/bin/apptainer"
printf '#!/bin/sh\nexit 0\n' >"$tmp/bin/sbatch"
chmod +x "$tmp/bin/sbatch"
"$l" check "$tmp/share/job/job.yaml" --set cluster.container_runtime=apptainer \
    --set cluster.container_image=img.sif >"$tmp/app.log" 2>&1; rc=$?
cp "$tmp/bin/sbatch" "$tmp/bin/apptainer"
"$l" check "$tmp/share/job/job.yaml" --set cluster.container_runtime=apptainer \
    --set cluster.container_image=img.sif >"$tmp/app2.log" 2>&1; rc2=$?
if [ $rc -eq 2 ] && grep -q "neither apptainer nor singularity is on PATH on this cluster host" "$tmp/app.log" &&
   [ $rc2 -eq 0 ]; then
    ok "apptainer missing on a cluster host (sbatch on PATH): refused; present: fine"
else
    cat "$tmp/app2.log" >>"$tmp/app.log"
    nok "apptainer on PATH (rc=$rc, rc2=$rc2)" "$tmp/app.log"
fi

# --no-path-check leaves this host's files alone
rm -f "$tmp/bin/apptainer" "$tmp/share/job/img.sif"
"$l" render "$tmp/share/job/job.yaml" --no-path-check --set cluster.container_runtime=apptainer \
    --set cluster.container_image=img.sif >"$tmp/np.log" 2>&1; rc=$?
if [ $rc -eq 0 ]; then
    ok "render --no-path-check: no look at the image or the runtime on this host"
else
    nok "render --no-path-check (rc=$rc)" "$tmp/np.log"
fi
