"""Sphinx configuration for the sklearn_ibp documentation."""

import os
import re
import socket
import sys
from importlib import metadata

import matplotlib

# Examples are executed by sphinx-gallery during the build; they must run headless.
matplotlib.use("Agg")

# The gallery links the names the examples use to their API pages; with
# ``-D plot_gallery=0`` the examples are not run, so IterativeImputer (experimental in
# scikit-learn) must be enabled here for its name to resolve.
from sklearn.experimental import enable_iterative_imputer  # noqa: E402, F401

# Let autodoc find the package when it is not installed (an editable install also works).
sys.path.insert(0, os.path.abspath(".."))

project = "sklearn-ibp"
author = "sklearn-ibp developers"
copyright = "sklearn-ibp developers"

try:
    release = metadata.version("sklearn-ibp")
except metadata.PackageNotFoundError:
    release = "unknown"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
]

templates_path = []
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
source_suffix = {".rst": "restructuredtext"}
root_doc = "index"

# autodoc / autosummary / numpydoc
autosummary_generate = True
# Inherited members are documented: DistanceDependentIBP takes transform and score from
# IBPFactorAnalysis, every estimator get_params and set_output from scikit-learn.
autodoc_default_options = {"members": True, "inherited-members": True}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {
    "python": ("https://docs.python.org/3", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
}
intersphinx_timeout = 5


def _online(host="docs.python.org", port=443, timeout=3.0):
    """Whether the intersphinx inventories can be reached from here."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True


# Offline (or with SKLEARN_IBP_DOCS_OFFLINE=1) the build skips intersphinx instead of
# warning once per unreachable inventory; links to Python, NumPy, SciPy and scikit-learn
# then render as plain text.
if os.environ.get("SKLEARN_IBP_DOCS_OFFLINE") == "1" or not _online():
    print("intersphinx: inventories not reachable, links to other projects are off")
    intersphinx_mapping = {}

_REF_ROLE = re.compile(r":ref:`([^`<]*?)\s*<[^`>]+>`|:ref:`([^`]+)`")


def _unlink_sklearn_refs(app, what, name, obj, options, lines):
    """Turn ``:ref:`` roles in docstrings inherited from scikit-learn into plain text.

    Their labels (``metadata_routing``, ...) live in scikit-learn's documentation, which
    only intersphinx can reach: offline they would each be an "undefined label" warning.
    """
    if intersphinx_mapping or not getattr(obj, "__module__", "").startswith("sklearn."):
        return
    lines[:] = [_REF_ROLE.sub(lambda m: m.group(1) or m.group(2), line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _unlink_sklearn_refs)

html_theme = "pydata_sphinx_theme"
html_title = "sklearn-ibp"
html_static_path = []

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "download_all_examples": False,
    "within_subsection_order": "FileNameSortKey",
}
