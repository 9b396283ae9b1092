"""Shared fixtures: the device parameter (CUDA cases skip without a GPU) and seeded RNGs."""

from __future__ import annotations

import os
import tempfile
import zlib

import numpy as np
import pytest

import tensorkit as tk

# Generated tk.jit kernels go to one directory per user for the whole run (xdist workers share
# it, so each kernel compiles once), never to the user's own ~/.cache.
os.environ.setdefault(
    "TENSORKIT_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"tensorkit-tests-{os.getuid()}")
)

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if tk.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (tk.cuda.is_available() is False)")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seed_from_test_id(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """tensorkit's generator and a test module's shared ``RNG`` restart from a seed made of
    the test's own id, so a test draws the same data (and initial weights) whichever tests ran
    before it in its worker: xdist spreads them differently on every machine.
    ``TENSORKIT_TEST_SEED`` shifts every seed, to probe tolerances with other data."""
    salt = os.environ.get("TENSORKIT_TEST_SEED", "")
    seed = zlib.crc32((salt + request.node.nodeid).encode())
    tk.manual_seed(seed)
    if isinstance(getattr(request.module, "RNG", None), np.random.Generator):
        monkeypatch.setattr(request.module, "RNG", np.random.default_rng(seed))


@pytest.fixture(autouse=True)
def _restore_global_state():
    """Every test starts with grad mode on and float32 as the default dtype."""
    yield
    tk.set_default_dtype(tk.float32)
    tk._state.grad_enabled = True
    tk._state.inference_mode = False
