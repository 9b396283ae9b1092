"""Einstein summation built from differentiable tensorkit ops.

Each operand is first reduced on its own: repeated subscripts become diagonals and subscripts
used nowhere else are summed. Operands are then contracted pairwise, left to right, each pair
by one batched matmul. Gradients of any order follow from the ops used.

Subscripts are letters; the dims an ellipsis covers get integer labels, 0 for the leftmost
(ellipses of different operands align on the right and broadcast, as in PyTorch).
"""

from __future__ import annotations

import math
from collections import Counter

from ..tensor import Tensor
from .matmul import matmul
from .reduction import sum as reduce_sum
from .shape import diagonal, permute, reshape

Label = str | int


def einsum(equation: str, operands: tuple) -> Tensor:
    """Sum the product of ``operands`` over the subscripts that ``equation`` leaves out."""
    if not operands:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    for i, x in enumerate(operands):
        if not isinstance(x, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, got {type(x).__name__}")
    inputs, output = _parse(equation, operands)
    _check_sizes(inputs, operands)
    pairs = zip(operands, inputs, strict=True)
    terms = [_reduce_alone(x, labels, inputs, output) for x, labels in pairs]
    result, labels = terms[0]
    for k in range(1, len(terms)):
        keep = set(output).union(*(term[1] for term in terms[k + 1 :]))
        result, labels = _contract(result, labels, *terms[k], keep)
    return permute(result, [labels.index(lab) for lab in output])


# ------------------------------------------------------------------------------ parsing
def _parse(equation: str, operands: tuple) -> tuple[list[list[Label]], list[Label]]:
    """Each operand's labels (one per dim) and the output's labels."""
    lhs, arrow, rhs = equation.partition("->")
    terms = _tokenize(lhs, 0, "operand")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    pairs = enumerate(zip(terms, operands, strict=True))
    covered = [_ellipsis_dims(term, x.ndim, k) for k, (term, x) in pairs]
    width = max(covered)
    inputs = [_expand(term, n, width) for term, n in zip(terms, covered, strict=True)]
    if not arrow:
        counts = Counter(lab for labels in inputs for lab in labels if isinstance(lab, str))
        return inputs, [*range(width), *sorted(lab for lab, n in counts.items() if n == 1)]
    (out_term,) = _tokenize(rhs, len(lhs) + 2, "output")
    output = _expand(out_term, width, width)
    seen = {lab for labels in inputs for lab in labels}
    for lab in output:
        if output.count(lab) > 1:
            raise RuntimeError(
                f"einsum(): output subscript {lab} appears more than once in the output"
            )
        if lab not in seen:
            raise RuntimeError(
                f"einsum(): output subscript {lab} does not appear in the equation for any input "
                "operand"
            )
    return inputs, output


def _tokenize(text: str, offset: int, what: str) -> list[list[str]]:
    """Split ``text`` into terms (at commas, for operands) of letters and '...' tokens."""
    terms: list[list[str]] = [[]]
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "," and what == "operand":
            terms.append([])
        elif ch == ".":
            name = f"{what} {len(terms) - 1}" if what == "operand" else what
            if text[i : i + 3] != "...":
                raise RuntimeError(
                    f"einsum(): found '.' for {name} that is not part of any ellipsis"
                )
            if "..." in terms[-1]:
                raise RuntimeError(
                    f"einsum(): found '.' for {name} for which an ellipsis was already found"
                )
            terms[-1].append("...")
            i += 2
        elif not ch.isspace() and not (ch.isascii() and ch.isalpha()):
            raise RuntimeError(
                f"einsum(): invalid subscript given at index {offset + i} in the equation string, "
                "subscripts must be in [a-zA-Z]"
            )
        elif not ch.isspace():
            terms[-1].append(ch)
        i += 1
    return terms


def _ellipsis_dims(term: list[str], ndim: int, k: int) -> int:
    """How many dims of operand ``k`` its ellipsis covers (0 without one)."""
    letters = len(term) - term.count("...")
    if "..." in term:
        if letters > ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({letters}) is more than the "
                f"number of dimensions ({ndim}) for operand {k}"
            )
        return ndim - letters
    if letters != ndim:
        raise RuntimeError(
            f"einsum(): the number of subscripts in the equation ({letters}) does not match the "
            f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given"
        )
    return 0


def _expand(term: list[str], covered: int, width: int) -> list[Label]:
    """Replace '...' by the integer labels of the rightmost ``covered`` of ``width`` dims."""
    labels: list[Label] = []
    for token in term:
        labels.extend(range(width - covered, width) if token == "..." else [token])
    return labels


def _describe(label: Label) -> str:
    return f"subscript {label}" if isinstance(label, str) else f"ellipsis dimension {label}"


def _check_sizes(inputs: list[list[Label]], operands: tuple) -> None:
    """A label's sizes must agree within an operand, and match or be 1 across operands."""
    seen: dict[Label, int] = {}
    for k, (labels, x) in enumerate(zip(inputs, operands, strict=True)):
        mine: dict[Label, int] = {}
        for lab, n in zip(labels, x.shape, strict=True):
            if lab in mine and mine[lab] != n:
                raise RuntimeError(
                    f"einsum(): subscript {lab} is repeated for operand {k} but the sizes don't "
                    f"match, {mine[lab]} != {n}"
                )
            mine[lab] = n
        for lab, n in mine.items():
            before = seen.get(lab, 1)
            if n != 1 and before not in (1, n):
                raise RuntimeError(
                    f"einsum(): {_describe(lab)} has size {n} for operand {k} which does not "
                    f"broadcast with previously seen size {before}"
                )
            seen[lab] = max(before, n)


# -------------------------------------------------------------------------- evaluation
def _reduce_alone(
    x: Tensor, labels: list[Label], inputs: list[list[Label]], output: list[Label]
) -> tuple[Tensor, list[Label]]:
    """Take the diagonals of repeated labels, then sum labels no other operand or the output
    uses."""
    labels = list(labels)
    while len(set(labels)) < len(labels):
        lab = next(lab for lab in labels if labels.count(lab) > 1)
        i = labels.index(lab)
        j = labels.index(lab, i + 1)
        x = diagonal(x, 0, i, j)
        labels = [other for k, other in enumerate(labels) if k not in (i, j)] + [lab]
    used_by_others = sum((Counter(set(other)) for other in inputs), Counter()) - Counter(
        set(labels)
    )
    alone = [lab for lab in labels if lab not in output and not used_by_others[lab]]
    return _sum_labels(x, labels, alone)


def _sum_labels(x: Tensor, labels: list[Label], drop: list[Label]) -> tuple[Tensor, list[Label]]:
    if not drop:
        return x, labels
    dims = tuple(labels.index(lab) for lab in drop)
    return reduce_sum(x, dims), [lab for lab in labels if lab not in drop]


def _contract(
    a: Tensor, a_labels: list[Label], b: Tensor, b_labels: list[Label], keep: set
) -> tuple[Tensor, list[Label]]:
    """Contract two operands with one batched matmul of (batch, left, summed) by
    (batch, summed, right), keeping the labels in ``keep``."""
    a, a_labels = _sum_labels(
        a, a_labels, [lab for lab in a_labels if _unused(lab, b_labels, keep)]
    )
    b, b_labels = _sum_labels(
        b, b_labels, [lab for lab in b_labels if _unused(lab, a_labels, keep)]
    )
    shared = [lab for lab in a_labels if lab in b_labels]
    # A summed label of size 1 on one side broadcasts: sum the other side over it first.
    stretched = [
        lab
        for lab in shared
        if lab not in keep and a.shape[a_labels.index(lab)] != b.shape[b_labels.index(lab)]
    ]
    a, a_labels = _sum_labels(a, a_labels, stretched)
    b, b_labels = _sum_labels(b, b_labels, stretched)
    batch = [lab for lab in a_labels if lab in b_labels and lab in keep]
    summed = [lab for lab in a_labels if lab in b_labels and lab not in keep]
    left = [lab for lab in a_labels if lab not in b_labels]
    right = [lab for lab in b_labels if lab not in a_labels]
    a_mat = _as_matrices(a, a_labels, batch, left, summed)
    b_mat = _as_matrices(b, b_labels, batch, summed, right)
    out = matmul(a_mat, b_mat)
    sizes = [*out.shape[: len(batch)], *_sizes(a, a_labels, left), *_sizes(b, b_labels, right)]
    return reshape(out, sizes), batch + left + right


def _unused(lab: Label, other: list[Label], keep: set) -> bool:
    return lab not in other and lab not in keep


def _sizes(x: Tensor, labels: list[Label], group: list[Label]) -> list[int]:
    return [x.shape[labels.index(lab)] for lab in group]


def _as_matrices(
    x: Tensor, labels: list[Label], batch: list[Label], rows: list[Label], cols: list[Label]
) -> Tensor:
    """Permute to (batch, rows, cols) and merge the row and the column dims."""
    x = permute(x, [labels.index(lab) for lab in batch + rows + cols])
    n_rows = math.prod(_sizes(x, batch + rows + cols, rows))
    n_cols = math.prod(_sizes(x, batch + rows + cols, cols))
    return reshape(x, [*x.shape[: len(batch)], n_rows, n_cols])
