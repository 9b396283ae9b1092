"""``tk.utils``: helpers around the core. ``tk.utils.data`` holds datasets and the DataLoader,
``tk.utils.benchmark`` the Timer for measuring your own code."""

from . import benchmark, data

__all__ = ["benchmark", "data"]
