"""The documentation names only what exists, and its site is assembled from the repository's files.

- every dotted name ``expansions.a.b`` written in the README, ARCHITECTURE.md, the pages under docs/
  and the CUDA headers resolves: the longest importable module prefix, then attributes;
- every public name of ``expansions`` is documented in the API reference (docs/api/);
- the pages that render results files include them (no copies), and every results file has a page.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOTTED = re.compile(r"(?<![\w.])expansions(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def documents() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "ARCHITECTURE.md"]
    files += sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
    files += sorted((ROOT / "expansions" / "cuda").glob("*.cuh"))
    return files


def resolve(dotted: str):
    """Import the longest module prefix of ``dotted`` and getattr the rest; raise if any step fails."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name is None or not ".".join(parts[:cut]).startswith(exc.name):
                raise  # a module that exists but fails to import is an error, not a missing name
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def dotted_names(path: Path) -> list[str]:
    return sorted(set(DOTTED.findall(path.read_text())))


def test_the_pattern_finds_names():
    text = ("call expansions.cuda.user.source() or expansions.dispatch.R2_METHODS. Not expansions::Expansion, "
            "nor expansions/cuda/user.cuh, nor python -m expansions verify, nor xexpansions.foo")
    assert DOTTED.findall(text) == ["expansions.cuda.user.source", "expansions.dispatch.R2_METHODS"]


@pytest.mark.parametrize("name", ["expansions.cuda.include_dir", "expansions.cuda.user_source",
                                  "expansions.cuda.compile_user", "expansions.no_such_module.x"])
def test_missing_names_do_not_resolve(name):
    with pytest.raises((AttributeError, ModuleNotFoundError)):
        resolve(name)


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_name_exists(path):
    missing = []
    for name in dotted_names(path):
        try:
            resolve(name)
        except (AttributeError, ModuleNotFoundError) as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    assert not missing, f"{path.relative_to(ROOT)} names what does not exist:\n  " + "\n  ".join(missing)


def test_every_public_name_is_in_the_api_reference():
    import expansions

    text = "\n".join(p.read_text() for p in (ROOT / "docs" / "api").glob("*.md"))
    documented = set(re.findall(r"^\.\. auto\w+:: (expansions\.[\w.]+)", text, flags=re.M))
    missing = [n for n in expansions.__all__ if f"expansions.{n}" not in documented]
    assert not missing, f"public names without an entry in docs/api/: {missing}"


def test_results_files_are_pages_of_the_site():
    """Every committed results file matches the site's include patterns, and the results page globs
    each folder, so that a results file added later is rendered without an edit."""
    from fnmatch import fnmatch

    conf = (ROOT / "docs" / "conf.py").read_text()
    patterns = re.findall(r'"([^"]+\.md)"', conf.split("RESULTS = [", 1)[1].split("]", 1)[0])
    files = sorted(ROOT.glob("bench/results/*.md")) + sorted(ROOT.glob("paper_repro/results/**/*.md"))
    assert files
    for f in files:
        rel = str(f.relative_to(ROOT))
        assert any(fnmatch(rel, p.replace("**", "*")) for p in patterns), rel
    page = (ROOT / "docs" / "results" / "index.md").read_text()
    for glob in ("/paper_repro/results/**", "/bench/results/*"):
        assert glob in page
