"""Embedding: a lookup table of learned vectors; EmbeddingBag: sums, means or maxes of bags
of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...autograd.grad_mode import no_grad
from ...ops.creation import empty
from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


class _EmbeddingTable(Module):
    """What Embedding and EmbeddingBag share: the (num_embeddings, embedding_dim) weight, its
    optional all-zero ``padding_idx`` row, and ``from_pretrained``'s shape check."""

    def _init_table(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None,
        padding_message: str,
        _weight: Tensor | None,
        requires_grad: bool,
        device: Any,
        dtype: Any,
    ) -> None:
        """Set the sizes, ``padding_idx`` (made non-negative) and the weight: ``_weight`` when
        given, else a new one filled by ``reset_parameters``."""
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError(padding_message)
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            shape = (num_embeddings, embedding_dim)
            self.weight = Parameter(empty(shape, device=device, dtype=dtype), requires_grad)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=requires_grad)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def _norm_repr(self, show: Callable[[Any], str]) -> str:
        """``extra_repr``'s part for a non-default ``max_norm``, ``norm_type`` and
        ``scale_grad_by_freq``, each value shown by ``show`` (``str`` or ``repr``)."""
        text = ""
        if self.max_norm is not None:
            text += f", max_norm={show(self.max_norm)}"
        if self.norm_type != 2:
            text += f", norm_type={show(self.norm_type)}"
        if self.scale_grad_by_freq:
            text += f", scale_grad_by_freq={show(self.scale_grad_by_freq)}"
        return text


def _pretrained_shape(embeddings: Tensor) -> tuple[int, int]:
    """``from_pretrained``'s (num_embeddings, embedding_dim), once ``embeddings`` is 2-D."""
    if embeddings.ndim != 2:
        raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
    rows, cols = embeddings.shape
    return rows, cols


class Embedding(_EmbeddingTable):
    """``num_embeddings`` vectors of size ``embedding_dim`` (initialized from N(0, 1)),
    looked up by index. Row ``padding_idx`` starts at zero and never gets a gradient."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight: Tensor | None = None,
        _freeze: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self._init_table(
            num_embeddings,
            embedding_dim,
            padding_idx,
            "Padding_idx must be within num_embeddings",
            _weight,
            not _freeze,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        text += self._norm_repr(str)
        if self.sparse:
            text += ", sparse=True"
        return text

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding whose weight is ``embeddings`` (frozen unless ``freeze=False``)."""
        rows, cols = _pretrained_shape(embeddings)
        return cls(
            rows,
            cols,
            padding_idx=padding_idx,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            sparse=sparse,
            _weight=embeddings,
            _freeze=freeze,
        )


class EmbeddingBag(_EmbeddingTable):
    """``num_embeddings`` vectors of size ``embedding_dim`` (initialized from N(0, 1)),
    reduced per bag of indices by ``mode`` (``"sum"``, ``"mean"`` or ``"max"``) without
    materializing the looked-up rows' batch. Row ``padding_idx`` starts at zero and is left
    out of every bag."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight: Tensor | None = None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self._init_table(
            num_embeddings,
            embedding_dim,
            padding_idx,
            "padding_idx must be within num_embeddings",
            _weight,
            True,
            device,
            dtype,
        )
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset

    def forward(
        self,
        input: Tensor,
        offsets: Tensor | None = None,
        per_sample_weights: Tensor | None = None,
    ) -> Tensor:
        return F.embedding_bag(
            input,
            self.weight,
            offsets,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.mode,
            self.sparse,
            per_sample_weights,
            self.include_last_offset,
            self.padding_idx,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}" + self._norm_repr(repr)
        text += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx!r}"
        return text

    @classmethod
    def from_pretrained(
        cls,
        embeddings: Tensor,
        freeze: bool = True,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
    ) -> EmbeddingBag:
        """An EmbeddingBag whose weight is ``embeddings`` (frozen unless ``freeze=False``)."""
        rows, cols = _pretrained_shape(embeddings)
        bag = cls(
            rows,
            cols,
            _weight=embeddings,
            max_norm=max_norm,
            norm_type=norm_type,
            scale_grad_by_freq=scale_grad_by_freq,
            mode=mode,
            sparse=sparse,
            include_last_offset=include_last_offset,
            padding_idx=padding_idx,
        )
        bag.weight.requires_grad = not freeze
        return bag
