"""A docstring's first paragraph as inline runs (text, code, math, emphasis, strong), parsed
as reStructuredText with docutils, so that front ends draw it with DOM nodes and no markup
parser of their own."""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["RUN_KINDS", "first_paragraph", "inline_runs"]

RUN_KINDS = ("text", "code", "math", "emphasis", "strong")

# docutils node class name -> run kind; references, targets and the rest read as text.
_KINDS = {
    "literal": "code",
    "title_reference": "code",  # `single backticks`: Sphinx's default role names an object
    "math": "math",
    "emphasis": "emphasis",
    "strong": "strong",
}
# An interpreted text role docutils does not know (Sphinx's :func:, :class:, ...) stays in
# the parsed tree as its source text; its content is a name, shown as code.
_UNKNOWN_ROLE = re.compile(r"^:[\w.:+-]+:`(?P<content>.*)`$", re.DOTALL)
_REFERENCE = re.compile(r"^`?(?P<content>.*?)`?__?$", re.DOTALL)


def first_paragraph(doc: str | None) -> str:
    """The docstring's first paragraph (up to its first blank line), dedented; "" for none."""
    lines = []
    for line in (doc or "").strip().splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return "\n".join(lines)


@functools.lru_cache(maxsize=512)
def _parsed_runs(text: str) -> tuple[tuple[str, str], ...]:
    try:
        from docutils.core import publish_doctree
    except ImportError:  # docutils comes with the notebook extra; without it, plain text
        return (("text", _collapse(text)),)
    settings = {"report_level": 5, "halt_level": 5, "warning_stream": False}
    document = publish_doctree(text, settings_overrides=settings)
    paragraph = next((n for n in document.children if n.tagname == "paragraph"), None)
    if paragraph is None:  # not a paragraph (a list, a literal block...): its text as is
        return (("text", _collapse(text)),)
    runs: list[tuple[str, str]] = []
    for child in paragraph.children:
        kind, content = _run_of(child)
        if not content:
            continue
        if runs and kind == "text" and runs[-1][0] == "text":
            runs[-1] = ("text", runs[-1][1] + content)
        else:
            runs.append((kind, content))
    return tuple(runs)


def _run_of(node: Any) -> tuple[str, str]:
    """One inline node of a parsed paragraph as (kind, text)."""
    text = node.astext()
    if node.tagname == "problematic":
        unknown = _UNKNOWN_ROLE.match(text)
        if unknown:
            return "code", _collapse(unknown["content"])
        reference = _REFERENCE.match(text)
        return "text", _collapse(reference["content"] if reference else text)
    if node.tagname == "target":  # the hidden target of an inline `text <url>`_ link
        return "text", ""
    return _KINDS.get(node.tagname, "text"), _collapse(text)


def _collapse(text: str) -> str:
    """Line breaks and runs of spaces as one space (a paragraph reflows)."""
    return re.sub(r"\s+", " ", text)


def inline_runs(doc: str | None) -> list[dict]:
    """The first paragraph of ``doc`` as ``[{"kind": ..., "text": ...}]`` runs, ``kind`` one
    of :data:`RUN_KINDS`: reStructuredText inline markup parsed by docutils (``literal``
    and Sphinx roles such as ``:func:`` read as code, ``:math:`` as math, references as their
    text). Empty for no docstring."""
    text = first_paragraph(doc)
    if not text:
        return []
    return [{"kind": kind, "text": content} for kind, content in _parsed_runs(text)]
