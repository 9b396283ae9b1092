"""The user's call site of each op, cheap enough to take after every op (``with_stack``).

The same frame walk as ``tensorkit._callsite.user_call_site`` with two savings for the
profiler's per-op use: whether a file belongs to tensorkit is remembered per file name, and
the site is kept as ``(file, line)``, formatted as 'file:line' only when records are read.
"""

from __future__ import annotations

import sys

from .._callsite import is_package_file

_inside: dict[str, bool] = {}  # file name -> whether it is one of tensorkit's library files


def call_site(skip: int = 1) -> tuple[str, int] | None:
    """(file, line) of the innermost frame outside tensorkit's library files, or None; the
    walk starts ``skip`` frames above this function's (callers skip their own frames)."""
    frame = sys._getframe(skip)
    inside = _inside
    while frame is not None:
        name = frame.f_code.co_filename
        known = inside.get(name)
        if known is None:
            known = inside[name] = is_package_file(name)
        if not known:
            return name, frame.f_lineno
        frame = frame.f_back
    return None


def format_site(site: tuple[str, int] | None) -> str | None:
    """'file:line', as ``user_call_site`` writes it."""
    return None if site is None else f"{site[0]}:{site[1]}"
