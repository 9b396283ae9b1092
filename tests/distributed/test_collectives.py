"""Every collective and ReduceOp on 2 and 3 real ranks against NumPy (programs/collectives.py
does the checking inside the ranks; one launch per world size)."""

from __future__ import annotations

import pytest
from dist_launch import assert_passed, launch

pytestmark = pytest.mark.xdist_group("distributed")


@pytest.mark.parametrize("nproc", [2, 3])
def test_every_collective_matches_numpy(nproc: int) -> None:
    run = launch("collectives.py", nproc)
    assert_passed(run, nproc)
    for part in ("reductions", "data movement", "async and point to point", "groups", "misuse"):
        assert run.stdout.count(f"ok {part}") == nproc, run.stdout
