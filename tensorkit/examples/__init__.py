"""Runnable examples (``python -m tensorkit.examples.<name>``)."""
