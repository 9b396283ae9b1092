"""``tk.nn.utils``: gradient clipping, parameter/vector conversion, batch-norm fusion,
``skip_init``, parametrizations (``parametrize``, with ``weight_norm`` and ``spectral_norm``
in ``parametrizations``) and, in ``rnn``, packed sequences for the
recurrent layers."""

from . import parametrizations as parametrizations
from . import parametrize as parametrize
from . import rnn as rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init

__all__ = [
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "get_total_norm",
    "parameters_to_vector",
    "skip_init",
    "vector_to_parameters",
]
