"""``tk.utils``: helpers around the core. ``tk.utils.data`` holds datasets and the DataLoader,
``tk.utils.benchmark`` the Timer for measuring your own code, ``tk.utils.cpp_extension``
(imported on first use) compiles C/C++/CUDA sources into functions that take tensors."""

from . import benchmark, data

__all__ = ["benchmark", "cpp_extension", "data"]


def __getattr__(name: str) -> object:
    if name == "cpp_extension":
        import importlib

        return importlib.import_module(f"{__name__}.cpp_extension")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
