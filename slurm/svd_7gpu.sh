#!/bin/bash
# svdpipe job svd_7gpu, rendered by svdlaunch from ../etc/svd_7gpu.yaml.
# Edit the job spec and render again: changes made here are lost.
# svdpipe output.dir: out/svd_7gpu
#SBATCH --job-name=svd_7gpu
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=7
#SBATCH --gpus-per-task=1
#SBATCH --time=01:00:00
#SBATCH --exclusive
#SBATCH --output=svd_7gpu-%j.out

set -euo pipefail

export UCX_TLS='cuda_copy,cuda_ipc,sm,self'

# The job spec is named relative to this script.  sbatch runs a spooled copy
# of the script, so when $0 does not lead to the spec, the submitted path
# is taken from the job's Command field.
svp_rel='../etc/svd_7gpu.yaml'
svp_spec=$(dirname -- "$0")/$svp_rel
if [ ! -f "$svp_spec" ] && [ -n "${SLURM_JOB_ID:-}" ]; then
    svp_script=$(scontrol show job "$SLURM_JOB_ID" |
                 sed -n 's/^ *Command=//p' | head -n 1) || svp_script=
    svp_spec=$(dirname -- "$svp_script")/$svp_rel
fi
if [ ! -f "$svp_spec" ]; then
    echo "job spec not found: $svp_spec" >&2
    exit 2
fi

exec srun --mpi=pmix --kill-on-bad-exit=1 -W 330 \
    --gpus-per-task=1 --gpu-bind=per_task:1 \
    'svdworker' "$svp_spec"
