"""``tk.utils``: helpers around the core; ``tk.utils.data`` holds datasets and the DataLoader."""

from . import data

__all__ = ["data"]
