"""Where the user called us from: the innermost stack frame outside the tensorkit package,
how to show it ("cell [3], line 2" for a notebook cell, "train.py:14" otherwise) and the
names its source line gives the tensors it passes ("x", "batch.images", "inputs[0]").

Names are read, never evaluated: the line is parsed with :mod:`ast`, and only plain names,
attribute chains and constant subscripts are looked up in the frame (attributes with
:func:`inspect.getattr_static`, so no property or ``__getattr__`` runs; subscripts only on
lists, tuples and dicts). Before Python 3.13, reading a function frame's ``f_locals`` leaves
a snapshot of its variables on the frame that keeps them alive after the function deletes
them, so there a function's local variables are not looked at (names come from module-level
code, as notebook cells and scripts run, and from globals); from 3.13 ``f_locals`` is a live
view and every frame's names count.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache
import os
import re
import sys
import sysconfig
from collections.abc import Collection
from types import FrameType
from typing import Any

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_EXAMPLES_DIR = _PACKAGE_DIR + "examples" + os.sep  # examples are user code
# ipykernel compiles each cell to /tmp/ipykernel_<pid>/<hash>.py; IPython alone to
# <ipython-input-<n>-<hash>>.
_KERNEL_CELL = re.compile(r"ipykernel_\d+[\\/][^\\/]+\.py$")
_IPYTHON_CELL = re.compile(r"^<ipython-input-(\d+)-")
_STATEMENT_LINES = 10  # how many lines a statement may span for its names to be read
_OUTER_FRAMES = 40  # how far out from the call site names are looked for
# Installed libraries and the standard library (IPython, pytest, asyncio...): not user code.
_LIBRARY_DIRS = tuple(
    {
        os.path.join(sysconfig.get_paths()[key], "")
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
    }
) + ("<frozen ",)
_MISSING = object()
_LIVE_LOCALS = sys.version_info >= (3, 13)  # f_locals of a function: a view, not a snapshot


def user_frame() -> FrameType | None:
    """The innermost frame whose file is not one of tensorkit's library files, or None."""
    frame = sys._getframe(1)
    while frame is not None and is_package_file(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_call_site() -> str | None:
    """'file:line' of the innermost frame whose file is not inside tensorkit, or None."""
    frame = user_frame()
    return None if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def is_package_file(filename: str) -> bool:
    """True for tensorkit's own library files (not its examples)."""
    return filename.startswith(_PACKAGE_DIR) and not filename.startswith(_EXAMPLES_DIR)


# ---------------------------------------------------------------------------- display
def call_site_info(site: str | None) -> dict | None:
    """A 'file:line' call site as ``{"site", "file", "line", "cell", "display"}``: ``cell``
    is the notebook cell's execution count (None outside a cell, or where it is not known),
    ``display`` the text to show (:func:`display_site`)."""
    if site is None:
        return None
    file, _, line_text = site.rpartition(":")
    if not file or not line_text.isdigit():
        return {"site": site, "file": site, "line": None, "cell": None, "display": site}
    line = int(line_text)
    in_cell, cell = _notebook_cell(file)
    if not in_cell:
        display = f"{_shown_path(file)}:{line}"
    elif cell is None:
        display = f"notebook cell, line {line}"
    else:
        display = f"cell [{cell}], line {line}"
    return {"site": site, "file": file, "line": line, "cell": cell, "display": display}


def display_site(site: str | None) -> str | None:
    """How to show a 'file:line' call site: "cell [3], line 2" for code run in a notebook
    cell (the kernel's temporary file name is never shown; "notebook cell, line 2" when the
    cell's number is not known), else "file:line" with the file relative to the working
    directory when inside it."""
    info = call_site_info(site)
    return None if info is None else info["display"]


def _notebook_cell(file: str) -> tuple[bool, int | None]:
    """Whether ``file`` is a notebook cell's code, and its execution count where known (from
    the running IPython's compiler, which maps each cell's file name to it)."""
    number = _execution_count(file)
    if number is not None:
        return True, number
    old_style = _IPYTHON_CELL.match(file)
    if old_style:
        return True, int(old_style.group(1))
    return bool(_KERNEL_CELL.search(file)), None


def _execution_count(file: str) -> int | None:
    ipython = sys.modules.get("IPython")  # never imported here: only asked when running
    shell = ipython.get_ipython() if ipython is not None else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    named = name_of(file) if callable(name_of) else None  # ("Cell", "In[3]") or None
    if not named:
        return None
    number = re.search(r"\[(\d+)\]", str(named[-1]))
    return int(number.group(1)) if number else None


def _shown_path(file: str) -> str:
    """``file`` relative to the working directory when inside it, else as given."""
    if not os.path.isabs(file):
        return file
    try:
        cwd = os.getcwd()
        inside = os.path.commonpath([cwd, file]) == cwd
    except (OSError, ValueError):  # no working directory, or another drive
        return file
    return os.path.relpath(file, cwd) if inside else file


# ------------------------------------------------------------------------------ names
def source_names(frame: FrameType, wanted: Collection[int]) -> dict[int, str]:
    """For objects whose ``id`` is in ``wanted`` (objects alive now): the text of the first
    expression denoting each in the current statement of the outermost user frame (from
    ``frame`` outward, tensorkit's own frames skipped) that has one, e.g. ``{id(x): "x"}``:
    so a model's input is named as its caller wrote it (``net(images)``), not as the
    ``forward`` that first used it calls it."""
    found: dict[int, str] = {}
    current: FrameType | None = frame
    for _ in range(_OUTER_FRAMES):
        if current is None:
            break
        if _is_user_file(current.f_code.co_filename):
            found.update(_frame_names(current, wanted))
        current = current.f_back
    return found


def _is_user_file(file: str) -> bool:
    return not is_package_file(file) and not file.startswith(_LIBRARY_DIRS)


def _frame_names(frame: FrameType, wanted: Collection[int]) -> dict[int, str]:
    found: dict[int, str] = {}
    expressions = _expressions(frame.f_code.co_filename, frame.f_lineno)
    if not expressions:
        return found
    in_function = frame.f_code.co_flags & inspect.CO_OPTIMIZED
    scopes = (
        (frame.f_globals,)
        if in_function and not _LIVE_LOCALS
        else (frame.f_locals, frame.f_globals)
    )
    for text, expression in expressions:
        value = _lookup(expression, scopes)
        key = id(value)
        if key in wanted and key not in found:
            found[key] = text
    return found


@functools.lru_cache(maxsize=1024)
def _expressions(file: str, line: int) -> tuple[tuple[str, ast.expr], ...]:
    """The names, attribute chains and subscripts the statement at ``file:line`` reads, in
    source order (the line parsed alone, or with the next lines when the statement continues
    there), except the functions it calls."""
    lines = [linecache.getline(file, n) for n in range(line, line + _STATEMENT_LINES)]
    first = lines[0].strip()
    if not first:
        return ()
    for count in range(1, len(lines) + 1):
        source = "".join([first + "\n", *lines[1:count]]).rstrip()
        if source.endswith(":"):  # a block's header: with ..., for ..., if ...
            source += " pass"
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
        read = [
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.Name | ast.Attribute | ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in called
        ]
        read.sort(key=_source_order)
        return tuple((ast.get_source_segment(source, node) or "", node) for node in read)
    return ()


def _source_order(node: ast.expr) -> tuple[int, int, int, int]:
    """Where ``node`` starts, an enclosing expression before the ones inside it."""
    return (node.lineno, node.col_offset, -(node.end_lineno or 0), -(node.end_col_offset or 0))


def _lookup(expression: ast.expr, scopes: tuple[Any, ...]) -> Any:
    """The value ``expression`` denotes with the variables of ``scopes`` (innermost first),
    found without running code, or ``_MISSING``."""
    if isinstance(expression, ast.Name):
        for scope in scopes:
            if expression.id in scope:
                return scope[expression.id]
        return _MISSING
    if isinstance(expression, ast.Attribute):
        owner = _lookup(expression.value, scopes)
        return _MISSING if owner is _MISSING else _attribute(owner, expression.attr)
    if isinstance(expression, ast.Subscript):
        container = _lookup(expression.value, scopes)
        if type(container) not in (list, tuple, dict):
            return _MISSING
        key = _constant(expression.slice, scopes)
        try:
            return _MISSING if key is _MISSING else container[key]
        except (IndexError, KeyError, TypeError):
            return _MISSING
    return _MISSING


def _attribute(owner: Any, name: str) -> Any:
    """``owner.name`` as stored (instance or class dict), or an nn module's parameter, buffer
    or submodule of that name (modules keep them in dicts)."""
    value = inspect.getattr_static(owner, name, _MISSING)
    if value is not _MISSING:
        return value
    for store in ("_parameters", "_buffers", "_modules"):
        members = inspect.getattr_static(owner, store, None)
        if isinstance(members, dict) and name in members:
            return members[name]
    return _MISSING


def _constant(expression: ast.expr, scopes: tuple[Any, ...]) -> Any:
    """An int or str subscript: a literal (``-1`` too) or a name holding one."""
    if isinstance(expression, ast.UnaryOp) and isinstance(expression.op, ast.USub):
        value = _constant(expression.operand, scopes)
        return -value if type(value) is int else _MISSING
    if isinstance(expression, ast.Constant):
        value = expression.value
    elif isinstance(expression, ast.Name):
        value = _lookup(expression, scopes)
    else:
        return _MISSING
    return value if type(value) in (int, str) else _MISSING
