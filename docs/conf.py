"""Sphinx configuration: the user guide (MyST), the API reference (autodoc) and the notebooks
(MyST-NB, executed at build time). ``make docs`` builds it with warnings as errors."""

from __future__ import annotations

project = "tensorkit"
author = "tensorkit contributors"
copyright = "tensorkit contributors"  # noqa: A001 - Sphinx's name for the setting
release = version = "0.1.0"

# Docstrings are reST prose (``code``, :func: roles), so autodoc needs no napoleon.
extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]

exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "furo"
html_title = "tensorkit"

# ---------------------------------------------------------------------------------- MyST
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# ------------------------------------------------------------------------------ notebooks
# docs/notebooks/*.ipynb are symlinks to notebooks/, which are committed without outputs:
# every build runs them, so the site shows current outputs. A cell error fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 180
nb_execution_raise_on_error = True
nb_execution_show_tb = True
# The workbench widgets (anywidget) need a live kernel; on a static page they show the SVG
# each widget puts in its mimebundle as text/html. The widget-view output is not rendered, so
# no ipywidgets manager script is loaded from a CDN.
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}
# Widget outputs also carry their recording (application/vnd.tensorkit.recording+json) for the
# JupyterLab extension; the page shows the text/html beside it, the same recorded view.
suppress_warnings = ["mystnb.unknown_mime_type"]

# -------------------------------------------------------------------------------- autodoc
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
# Type hints name classes from NumPy, CuPy and the standard library that this site does not
# document; unresolved cross-references are not warnings unless nitpicky is on (it is off).
nitpicky = False
