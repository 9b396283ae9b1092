#!/usr/bin/env bash
# Run on a machine with an NVIDIA GPU, from the repository root, with the source tree on the
# path (nothing needs installing but the packages below): the CUDA-marked tests (tk.cuda, the
# profiler's CUDA events, ...), the profiler and CuPy coverage tests, the op suite on device
# "cuda", the custom-op example's CUDA kernels (tk.utils.cpp_extension), tk.distributed's nccl
# backend (skipped without mpi4py or libnccl: the distributed and nccl extras), the cuDNN values
# check (bench/cudnn_values.py: the cuDNN path against im2col and PyTorch for conv, pooling and
# batch norm), then the GPU benchmark against PyTorch (bench/bench_gpu.py, with the CNN step also
# on the im2col path). Each part has a time cap (270 s in all), so the whole run stays under 5 minutes. Ends with
# the markdown to paste into
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

run "CUDA-marked tests" 35 "$PYTHON" -m pytest -q -p no:cacheprovider -m cuda tests \
  --ignore=tests/extensions/test_cuda_extension_gpu.py
run "stand-in, profiler and CuPy coverage" 25 "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/test_cuda_api.py tests/test_profiler.py tests/test_profiler_cuda.py \
  tests/test_cupy_coverage.py
run "op suite on cuda" 60 env TENSORKIT_TEST_DEVICE=cuda "$PYTHON" -m pytest -q -p no:cacheprovider \
  -x tests/test_ops.py tests/test_linalg.py tests/test_einsum.py
run "custom ops: the fused SiLU example's CUDA kernels (NVRTC)" 20 "$PYTHON" -m pytest -q -p no:cacheprovider \
  tests/extensions/test_cuda_extension_gpu.py
run "nccl backend (a world of one rank per GPU, at most 2)" 30 "$PYTHON" -m pytest -q -p no:cacheprovider \
  -rs tests/distributed/test_nccl.py

echo "== cuDNN values against im2col and PyTorch (bench/cudnn_values.py)"
timeout 25 "$PYTHON" bench/cudnn_values.py | tee /tmp/gpu_check_cudnn.txt
cudnn_rc=${PIPESTATUS[0]}
[ "$cudnn_rc" = 0 ] || status=1

echo "== tk.jit on CUDA: fused ElementwiseKernels against torch.compile (bench/bench_jit.py --gelu-gpu)"
timeout 30 "$PYTHON" bench/bench_jit.py --gelu-gpu | tee /tmp/gpu_check_jit.txt
jit_rc=${PIPESTATUS[0]}
[ "$jit_rc" = 0 ] || status=1

echo "== GPU benchmark (bench/bench_gpu.py)"
timeout 45 "$PYTHON" bench/bench_gpu.py --markdown | tee /tmp/gpu_check_bench.txt
bench_rc=${PIPESTATUS[0]}
[ "$bench_rc" = 0 ] || status=1

echo
echo "== for docs/benchmarks.md (GPU check table row, then the benchmark above)"
joined=$(printf '%s; ' "${summaries[@]}")
echo "| $(date -u +%F) | ${gpu:-?} | ${joined}cudnn_values.py exit ${cudnn_rc}; bench_jit.py --gelu-gpu exit ${jit_rc}; bench_gpu.py exit ${bench_rc} |"
exit $status
