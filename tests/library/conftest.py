"""Custom ops made by a test are forgotten when it ends, so names can be reused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tensorkit.library import _custom_op


@pytest.fixture(autouse=True)
def forget_custom_ops() -> Iterator[None]:
    before = set(_custom_op._REGISTRY)
    yield
    for name in set(_custom_op._REGISTRY) - before:
        _custom_op.unregister(name)
