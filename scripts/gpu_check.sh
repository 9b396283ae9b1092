#!/usr/bin/env bash
# Run on a machine with an NVIDIA GPU, from the repository root, with the source tree on the
# path (nothing needs installing but the packages below): the CUDA-marked tests (tk.cuda, the
# profiler's CUDA events, ...), the profiler and CuPy coverage tests, the op suite on device
# "cuda", the custom-op example's CUDA kernels (tk.utils.cpp_extension), tk.distributed's nccl backend (skipped without mpi4py or libnccl: the distributed
# and nccl extras), then the GPU benchmark against PyTorch (bench/bench_gpu.py). Each part has a time
# cap; the whole run stays under 5 minutes. Ends with the markdown to paste into
# docs/benchmarks.md.
#
# Python: the project's environment (.venv/bin/python, which `make run` and `make test`
# create) when there is one, else python3 from the path. It needs NumPy, CuPy and pytest
# (PyTorch too for the benchmark's comparison); when one is missing the script says how to
# install it and stops.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
if ! command -v "$PYTHON" >/dev/null; then
  echo "gpu_check.sh: no $PYTHON here: install Python 3.10+ (or run 'make test', which makes .venv)" >&2
  exit 2
fi
missing=$("$PYTHON" -c "
import importlib.util
print(' '.join(m for m in ('numpy', 'cupy', 'pytest') if importlib.util.find_spec(m) is None))
")
if [ -n "$missing" ]; then
  {
    echo "gpu_check.sh: $PYTHON lacks: $missing"
    echo "It needs NumPy, CuPy (the cuda extra, CUDA 12) and pytest (the test extra). Install them with"
    if [ "$PYTHON" = .venv/bin/python ]; then
      echo "  .venv/bin/python -m pip install -e '.[cuda,test]'"
    else
      echo "  $PYTHON -m pip install -e '.[cuda,test]'    (or: make test TEST_EXTRAS=test,cuda, which makes .venv)"
    fi
  } >&2
  exit 2
fi
echo "python: $PYTHON"
date -u
gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)
echo "${gpu:-nvidia-smi found no GPU}"
"$PYTHON" -c "import tensorkit as tk, numpy, cupy; print('tensorkit', tk.__version__, 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'cuda available', tk.cuda.is_available())"
status=0
summaries=()

# run LABEL SECONDS COMMAND...: run a pytest command under a time cap, keep its summary line
run() {
  local label=$1 cap=$2
  shift 2
  echo "== $label"
  timeout "$cap" "$@" 2>&1 | tee /tmp/gpu_check_part.txt
  local rc=${PIPESTATUS[0]}
  local summary
  summary=$(grep -E "(passed|failed|error|skipped)" /tmp/gpu_check_part.txt | tail -1 | tr -d '=')
  [ "$rc" = 124 ] && summary="timed out after ${cap}s; ${summary}"
  summaries+=("$label: ${summary:-no summary (rc $rc)}")
  [ "$rc" = 0 ] || status=1
}

run "CUDA-marked tests" 50 "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda tests \
  --ignore=tests/extensions/test_cuda_extension_gpu.py
run "stand-in, profiler and CuPy coverage" 40 "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/test_cuda_api.py tests/test_profiler.py tests/test_profiler_cuda.py \
  tests/test_cupy_coverage.py
run "op suite on cuda" 110 env TENSORKIT_TEST_DEVICE=cuda "$PYTHON" -m pytest -q -p no:cacheprovider \
  -x tests/test_ops.py tests/test_linalg.py tests/test_einsum.py
run "custom ops: the fused SiLU example's CUDA kernels (NVRTC)" 30 "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/extensions/test_cuda_extension_gpu.py
run "nccl backend (a world of one rank per GPU, at most 2)" 60 "$PYTHON" -m pytest -q -p no:cacheprovider \
  -rs tests/distributed/test_nccl.py

echo "== GPU benchmark (bench/bench_gpu.py)"
timeout 90 "$PYTHON" bench/bench_gpu.py --markdown | tee /tmp/gpu_check_bench.txt
bench_rc=${PIPESTATUS[0]}
[ "$bench_rc" = 0 ] || status=1

echo
echo "== for docs/benchmarks.md (GPU check table row, then the benchmark above)"
joined=$(printf '%s; ' "${summaries[@]}")
echo "| $(date -u +%F) | ${gpu:-?} | ${joined}bench_gpu.py exit ${bench_rc} |"
exit $status
