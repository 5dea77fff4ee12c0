"""Sphinx configuration of the documentation site (``python -m expansions docs`` builds it).

The source folder is the repository's root, restricted by ``include_patterns`` to docs/ and the
committed results files: the benchmark tables (bench/results/*.md), the main job's results
(paper_repro/results/**.md) and the examples' README are pages of the site as they are, not copies,
so a results file added later appears without an edit (the toctrees glob them).  Every ```python
fence of a page is a test of the doctest builder (``python -m expansions docs --doctest``): it runs,
in order with the page's other fences, and fails the build if it raises; ```pycon fences (``>>>``
sessions) also check their printed output.  Code that must not run here (it needs a GPU, or is a
fragment) goes in a ```{code-block} python fence.
"""

from __future__ import annotations

import re
import sys
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))          # paper_repro, bench and examples, next to the package
sys.path.insert(0, str(Path(__file__).resolve().parent))

import expansions  # noqa: E402

project = "expansions"
author = "the expansions developers"
release = version = expansions.__version__
copyright = "the expansions developers"  # noqa: A001 - Sphinx's name

root_doc = "docs/index"
RESULTS = ["bench/results/*.md", "paper_repro/results/**.md", "expansions/cuda/resources.md"]
include_patterns = ["docs/**", "examples/README.md", "ARCHITECTURE.md", *RESULTS]
exclude_patterns = ["docs/_build/**", "**/.venv*/**", "docs/README.md"]

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "_ext.examples",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}

myst_enable_extensions = ["dollarmath", "colon_fence", "attrs_inline"]
myst_heading_anchors = 3
myst_fence_as_directive = ["python", "pycon"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {"undoc-members": False}
napoleon_numpy_docstring = True
napoleon_google_docstring = False

doctest_global_setup = """
import numpy as np
import expansions as ex
from expansions.backends import gpu_environment
GPU = bool(gpu_environment().get("gpu_available"))
"""
doctest_test_doctest_blocks = "default"

html_theme = "alabaster"
html_title = f"expansions {release}"
html_extra_path = ["_static_root"]
html_theme_options = {"description": "floating-point expansions on GPUs and CPUs", "page_width": "1200px",
                      "body_max_width": "none"}


LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s#]+)\)")


def _adapt(app, docname, source):
    """What GitHub shows well and a site cannot, adapted in the text Sphinx reads (the files are left
    as they are): a results file written by a program may start without a title (a summary table),
    its page gets its path as title; a link to a folder of the repository becomes its text."""
    path = docname + ".md"
    if any(fnmatch(path, pattern.replace("**", "*")) for pattern in RESULTS):
        if not source[0].lstrip().startswith("# "):
            source[0] = f"# {path}\n\n" + source[0]
    here = (ROOT / path).parent

    def unlink_folder(m):
        target = m.group(2)
        if "://" not in target and (here / target).is_dir():
            return m.group(1)
        return m.group(0)

    source[0] = LINK.sub(unlink_folder, source[0])


def _plain_bars(app, what, name, obj, options, lines):
    """The docstrings write absolute values and norms as |x| and ||x||, which reStructuredText reads as
    substitutions (the project defines none): escape every bar outside ``literals`` and literal blocks,
    in the lines autodoc renders (the docstrings are unchanged)."""
    literal_indent = None
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not line.strip() or indent > literal_indent:
                continue
            literal_indent = None
        parts = line.split("``")
        for k in range(0, len(parts), 2):
            parts[k] = parts[k].replace("|", "\\|")
        lines[i] = "``".join(parts)
        if line.rstrip().endswith("::"):
            literal_indent = indent


def setup(app):
    app.connect("source-read", _adapt)
    app.connect("autodoc-process-docstring", _plain_bars)
