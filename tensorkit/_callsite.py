"""Where the user called us from: the innermost stack frame outside the tensorkit package."""

from __future__ import annotations

import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_EXAMPLES_DIR = _PACKAGE_DIR + "examples" + os.sep  # examples are user code


def user_call_site() -> str | None:
    """'file:line' of the innermost frame whose file is not inside tensorkit, or None."""
    frame = sys._getframe(1)
    while frame is not None and is_package_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


def is_package_file(filename: str) -> bool:
    """True for tensorkit's own library files (not its examples)."""
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_EXAMPLES_DIR)
