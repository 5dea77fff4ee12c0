"""Code fences of the documentation as tests of Sphinx's doctest builder.

MyST hands ```python and ```pycon fences to the directives below (``myst_fence_as_directive`` in
conf.py).  Both render as highlighted code, as a plain fence would, and both are tests:

- ```pycon: a ``>>>`` session, a ``doctest`` directive: its output is compared with what it prints;
- ```python: a ``testcode`` directive whose printed output is not compared (pages show code that
  prints long digit strings): the code runs, in order with the page's other fences and in their
  namespace, and an exception fails the doctest build.

Display-only code (it needs a GPU, or it is a fragment) goes in a ```{code-block} python fence.
"""

from __future__ import annotations

from sphinx.ext.doctest import DoctestDirective, TestcodeDirective

QUIET = """import contextlib as _contextlib, io as _io
with _contextlib.redirect_stdout(_io.StringIO()):
    exec(compile({code!r}, {where!r}, "exec"), globals())
"""


class PythonExample(TestcodeDirective):
    """```python: runs as a ``testcode`` test with its output discarded."""

    def run(self):
        self.name = "testcode"
        nodes = super().run()
        for node in nodes:
            if node.get("testnodetype") == "testcode":
                where = f"{self.env.docname}:{self.lineno}"
                node["test"] = QUIET.format(code=node.astext(), where=where)
        return nodes


class PyconExample(DoctestDirective):
    """```pycon: a ``>>>`` session whose output is checked."""

    def run(self):
        self.name = "doctest"
        return super().run()


def setup(app):
    app.setup_extension("sphinx.ext.doctest")
    app.add_directive("python", PythonExample)
    app.add_directive("pycon", PyconExample)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
