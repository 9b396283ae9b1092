"""A module moved to shared memory is updated in place by another process."""

from __future__ import annotations

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.multiprocessing as mp
import tensorkit.nn as nn


def _add_one(model: nn.Module, done) -> None:
    with tk.no_grad():
        for p in model.parameters():
            p.add_(1.0)
    done.put(True)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_shared_module_updates_are_visible_to_the_parent(method):
    tk.manual_seed(0)
    model = nn.Linear(3, 2).share_memory()
    before = [p.detach().numpy().copy() for p in model.parameters()]
    assert all(p.is_shared() for p in model.parameters())
    context = mp.get_context(method)
    done = context.Queue()
    worker = context.Process(target=_add_one, args=(model, done))
    worker.start()
    assert done.get(timeout=30)
    worker.join(timeout=30)
    assert worker.exitcode == 0
    for old, p in zip(before, model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), old + 1.0)
