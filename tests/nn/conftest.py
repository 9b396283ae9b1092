"""Every tk.nn test starts from the same random state (layer initializations, dropout)."""

from __future__ import annotations

import pytest

import tensorkit as tk


@pytest.fixture(autouse=True)
def _seeded():
    tk.manual_seed(0)
