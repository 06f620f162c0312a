#!/bin/bash
# Submits a sharded pilot job to Slurm: an array of N shard tasks, then the merge, which
# runs only when every task succeeded.
#
#   scripts/slurm/submit.sh N RUNS_DIR OUT [pilot run options...]
#
# Prints the two job ids ("array JOB" and "merge JOB"). When a task fails or is cancelled,
# the merge is cancelled with it (--kill-on-invalid-dep=yes). Then resubmit that index alone,
# which resumes its shard's folder, and the merge:
#
#   sbatch --array=I scripts/slurm/shard.sbatch N RUNS_DIR [the same pilot run options]
#   sbatch --dependency=afterok:<that job> scripts/slurm/merge.sbatch N RUNS_DIR OUT
#
# Extra sbatch options (a partition, --gres=gpu:1, a time limit) go in SBATCH_OPTIONS.
# PILOT names the pilot binary the tasks run (default: `pilot` on PATH; exported to them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
n=${1:?usage: submit.sh N RUNS_DIR OUT [pilot run options...]}
runs=${2:?usage: submit.sh N RUNS_DIR OUT [pilot run options...]}
out=${3:?usage: submit.sh N RUNS_DIR OUT [pilot run options...]}
shift 3
mkdir -p "$runs"
case "$n" in '' | *[!0-9]* | 0) echo "submit.sh: N must be a count of 1 or more" >&2; exit 2 ;; esac
# shellcheck disable=SC2086  # SBATCH_OPTIONS is a list of options
array=$(sbatch --parsable ${SBATCH_OPTIONS:-} --array="0-$((n - 1))" --output="$runs/slurm-%A_%a.out" \
        "$here/shard.sbatch" "$n" "$runs" "$@")
array=${array%%;*}
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_OPTIONS:-} --dependency="afterok:$array" --kill-on-invalid-dep=yes \
        --output="$runs/slurm-merge-%j.out" "$here/merge.sbatch" "$n" "$runs" "$out")
merge=${merge%%;*}
echo "array $array"
echo "merge $merge"
