#!/usr/bin/env bash
# Run on a machine with an NVIDIA GPU, from the repository root, with the source tree on the
# path (nothing is installed): the CUDA-marked tests, then the op suite on device "cuda".
# Prints pass counts per part; must finish in under 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
date -u
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
python3 -c "import tensorkit as tk, numpy, cupy; print('tensorkit', tk.__version__, 'numpy', numpy.__version__, 'cupy', cupy.__version__, 'cuda available', tk.cuda.is_available())"
status=0
echo "== CUDA-marked tests"
timeout 120 python3 -m pytest -q -p no:cacheprovider -m cuda tests || status=1
echo "== op suite on cuda"
TENSORKIT_TEST_DEVICE=cuda timeout 150 python3 -m pytest -q -p no:cacheprovider -x \
  tests/test_ops.py tests/test_linalg.py tests/test_einsum.py || status=1
exit $status
