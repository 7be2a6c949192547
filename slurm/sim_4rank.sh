#!/bin/bash
# svdpipe job sim_4rank, rendered by svdlaunch from ../etc/sim_4rank.yaml.
# Edit the job spec and render again: changes made here are lost.
# svdpipe output.dir: out/sim_4rank
#SBATCH --job-name=sim_4rank
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --time=00:10:00
#SBATCH --output=sim_4rank-%j.out

set -euo pipefail

export UCX_TLS='sm,self'

# The job spec is named relative to this script.  sbatch runs a spooled copy
# of the script, so when $0 does not lead to the spec, the submitted path
# is taken from the job's Command field.
svp_rel='../etc/sim_4rank.yaml'
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

exec srun --mpi=pmix --kill-on-bad-exit=1 -W 90 \
    'svdworker' "$svp_spec"
