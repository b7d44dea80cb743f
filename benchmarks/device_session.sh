#!/bin/bash
# One GPU-machine session (about 9 minutes), run from the repository root:
#   1. the 1D Poisson headline run on the GPU (seed 1224: CGMPINN ReLoBRaLo on/off, PINN),
#   2. sweep scaling on the GPU (1..32 seeds vmapped),
#   3. paper-table runs: CGMPINN and PINN on the GPU (5 seeds vmapped per group) and, at
#      the same time, other methods on the machine's spare CPU cores (one problem per worker,
#      2 cores each, seeds one by one), until the deadline.
# Every finished run is cached as in benchmarks/paper_tables.py, so nothing finished is lost
# when the deadline stops a job. Results are packed into $OUT/results.tgz.
# Usage: OUT=/tmp/out DEADLINE_S=530 bash benchmarks/device_session.sh
# The machine's image has jax, optax and equinox but not jaxopt: put its wheel in .whl/
# (pip download --no-deps jaxopt==0.8.5 -d .whl) and carry that folder; it is installed first.
# Run only one JAX process on the GPU at a time (a second one beside it failed here).
# Options (environment): SKIP_TIMING=1 skips steps 1-2; GPU_TABLE_ARGS replaces the GPU's
# paper_tables arguments; CPU_METHODS / CPU_SEEDS / CPU_TABLES choose the CPU workers' runs.
set -u
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE_S=${DEADLINE_S:-530}
TAG=${TAG:-gpu}
left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
export PYTHONUNBUFFERED=1
LOG=$OUT/log.txt
{
  date; nproc; nvidia-smi -L 2>&1
  python3 -c "import jax, optax, equinox, jaxopt; print('jax', jax.__version__, 'optax', optax.__version__, 'equinox', equinox.__version__, 'jaxopt', jaxopt.__version__, jax.devices())"
} >"$LOG" 2>&1

NCPU=$(nproc)
CPU_WORKERS=${CPU_WORKERS:-6}
CPU_PROBLEMS=(poisson1d poisson2d heat damped_wave advection_diffusion fisher_kpp)
CPU_METHODS=${CPU_METHODS:-gpinn,lbpinn,lnn_pinn,star_pinn}
pids=()
for i in $(seq 0 $((CPU_WORKERS - 1))); do
  p=${CPU_PROBLEMS[$i]}
  c0=$((2 * i)); c1=$((2 * i + 1))
  [ $c1 -ge $((NCPU - 4)) ] && break
  ( JAX_PLATFORMS=cpu timeout $(left) taskset -c $c0,$c1 python3 benchmarks/paper_tables.py --problems "$p" \
      --tables "${CPU_TABLES:-methods}" --methods "$CPU_METHODS" --seeds "${CPU_SEEDS:-0,1,2}" --no-vmap --no-figures --progress-seconds 1e9 \
      >"$OUT/cpu_$p.txt" 2>&1 ) &
  pids+=($!)
done

GPU_CORES="$((NCPU - 4))-$((NCPU - 1))"
GPU_TABLE_ARGS=${GPU_TABLE_ARGS:---tables methods --methods cgmpinn,pinn --seeds 0,1,2,3,4}
{
  if [ -z "${SKIP_TIMING:-}" ]; then
    echo "== headline (GPU), $(left) s left"
    timeout 200 taskset -c $GPU_CORES python3 benchmarks/headline.py --only poisson1d --seeds 1224 --tag "$TAG"
    echo "== sweep scaling (GPU), $(left) s left"
    timeout 100 taskset -c $GPU_CORES python3 benchmarks/sweep_scaling.py --seeds 1,2,4,8,32 --tag "$TAG"
  fi
  echo "== paper tables (GPU), $(left) s left"
  timeout $(left) taskset -c $GPU_CORES python3 benchmarks/paper_tables.py $GPU_TABLE_ARGS --no-figures --progress-seconds 1e9
} >>"$LOG" 2>&1
wait "${pids[@]}" 2>/dev/null
echo "== done after $(( $(date +%s) - T0 )) s" >>"$LOG"
tar czf "$OUT/results.tgz" benchmarks/results
