"""Where the user called us from: the innermost stack frame outside the tensorkit package."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_call_site() -> str | None:
    """'file:line' of the innermost frame whose file is not inside tensorkit, or None."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def is_package_file(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR)
