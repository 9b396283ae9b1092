"""Large host buffers are reused across steps (glibc's mmap threshold raised on import)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from tensorkit._backend import host_allocator

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")

# Page faults taken by the second of two same-size 48 MB buffers (allocated, written, freed).
SECOND_BUFFER_FAULTS = """
import resource, numpy as np, tensorkit
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
np.ones(12_000_000, np.float32)
before = faults()
np.ones(12_000_000, np.float32)
print(faults() - before)
"""


def second_buffer_faults(keep: str) -> int:
    env = {**os.environ, host_allocator.ENV_VAR: keep}
    result = subprocess.run(
        [sys.executable, "-c", SECOND_BUFFER_FAULTS],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return int(result.stdout)


@glibc_only
def test_a_freed_large_buffer_is_reused_without_page_faults() -> None:
    assert second_buffer_faults("1") < 8
    assert second_buffer_faults("0") >= 20  # fresh pages: one fault per (huge) page at least


@glibc_only
def test_keep_large_buffers_reports_whether_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    assert host_allocator.keep_large_buffers() is True
    monkeypatch.setenv(host_allocator.ENV_VAR, "0")
    assert host_allocator.keep_large_buffers() is False


def test_other_c_libraries_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(host_allocator.ENV_VAR, raising=False)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert host_allocator.keep_large_buffers() is False
