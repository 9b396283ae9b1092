"""Special functions: the ``tk.special`` namespace, PyTorch's ``torch.special``.

Gamma-family functions (``gammaln``, ``digamma``/``psi``, ``polygamma``, ``multigammaln``),
the incomplete gamma functions, the error function and its inverses and scaled forms, the
normal distribution's ``ndtr``/``ndtri``/``log_ndtr``, modified Bessel functions of order 0
and 1 (plain and exponentially scaled), ``entr``, ``xlog1py``, the Hurwitz ``zeta``, and the
Bessel functions of ``torch.special`` (``bessel_j0`` ... ``spherical_bessel_j0``). The
remaining names (``expit``, ``logit``, ``sinc``, ``softmax``, ...) are tensorkit's own
functions under PyTorch's ``special`` names.

The values come from SciPy on the CPU (an optional dependency: without it these functions
raise ``ModuleNotFoundError``) and from ``cupyx.scipy.special`` on CUDA. Gradients follow
PyTorch's formulas and have any order; as in PyTorch, ``gammainc``/``gammaincc`` and ``zeta``
are differentiable in their second argument only, and the Bessel functions ``bessel_*``,
``modified_bessel_*``, ``scaled_modified_bessel_*`` and ``spherical_bessel_j0`` not at all.
Integer and bool inputs compute in the default float dtype. ``out=`` is not supported.
"""

from __future__ import annotations

from .ops.binary import xlogy
from .ops.reduction import logsumexp
from .ops.softmax import log_softmax, softmax
from .ops.special import (
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    entr,
    erfcx,
    erfinv,
    i0,
    i0e,
    i1,
    i1e,
    log_ndtr,
    modified_bessel_i0,
    modified_bessel_i1,
    modified_bessel_k0,
    modified_bessel_k1,
    ndtr,
    ndtri,
    polygamma,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    spherical_bessel_j0,
    xlog1py,
    zeta,
)
from .ops.special import igamma as gammainc
from .ops.special import igammac as gammaincc
from .ops.special import lgamma as gammaln
from .ops.special import mvlgamma as multigammaln
from .ops.unary import erf, erfc, exp2, expm1, log1p, logit, round, sinc  # noqa: A004
from .ops.unary import sigmoid as expit

__all__ = [
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]

psi = digamma
