"""tk.onnx: write a model's forward pass as an ONNX file, as ``torch.onnx.export`` does.

``export(model, args, path)`` runs ``model(*args)`` once under ``tk.no_grad()``, recording it
with tk.jit's tracer, and translates each recorded op into ONNX nodes (one small function per
op key, ``_ops_*.py``). The model runs in the mode it is in, as torch's does: call
``model.eval()`` first (dropout draws and training-mode BatchNorm's running-stat updates
cannot be exported). Parameters and buffers become initializers named by their qualified
names ("0.weight"); other tensors the call reads, and constants it makes, become
initializers too.

As with ``torch.onnx.export``'s tracing, the graph holds what this one call did: reading a
tensor's value into Python (``if x.sum() > 0:``, ``.item()``) warns with a
``tk.jit.TracerWarning`` and the export keeps the branch that was taken.

``dynamic_axes`` (torch's form: ``{"input_0": {0: "batch"}}`` or ``{"input_0": [0]}``) makes
input axes dynamic. The call is recorded once more per dynamic dim with that axis one longer;
sizes in the graph that follow it (reshape, view and expand shapes, of the form ``k * size +
c``) are computed from the input's shape at run time. A graph that cannot follow the dim (a
constant made at the traced size, a slice bound or a pooling window over that axis, different
ops at another size) raises :class:`ExportError` naming the op and its call site.

tk.library ops (keys "domain::name") become nodes of that domain, with an opset import for
it (version 1). Every other op without a translation, a random draw or a custom
``autograd.Function`` raises :class:`UnsupportedOperatorError` naming the op, its call site
and module path. The file is written atomically (no partial file on failure). Needs the
``onnx`` package (``pip install tensorkit[onnx]``, which adds onnxruntime to run the files).
"""

from __future__ import annotations

try:
    import onnx as _onnx  # noqa: F401
except ModuleNotFoundError as error:  # pragma: no cover - the onnx extra is missing
    raise ModuleNotFoundError(
        "tk.onnx needs the onnx package: pip install 'tensorkit[onnx]'"
    ) from error

from ._builder import ExportError, UnsupportedOperatorError
from ._export import export
from ._table import TABLE as _TABLE

__all__ = ["ExportError", "UnsupportedOperatorError", "export", "supported_ops"]


def supported_ops() -> list[str]:
    """The op keys tk.onnx translates (besides tk.library ops, "domain::name")."""
    return sorted(_TABLE)
