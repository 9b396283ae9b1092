"""Plain, JSON-serializable data models for notebook views of the autograd machinery.

Each view is a data model built here plus a thin front end elsewhere; nothing in this package
imports ipywidgets, anywidget or matplotlib.
"""

from .check import check_graph, check_node
from .graph_model import build_graph, to_text
from .stepper import BackwardStepper

__all__ = ["BackwardStepper", "build_graph", "check_graph", "check_node", "to_text"]
