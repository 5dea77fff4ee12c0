"""Every kernel instance compiles with NVRTC (no GPU needed), none with R <= 16 spills, and
expansions/cuda/resources.md matches what this NVRTC reports.

Skipped only when CuPy's NVRTC bindings or the NVRTC library are missing
(``pip install 'expansions[cuda12]'`` or ``'expansions[cuda13]'`` provides both).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from expansions.cuda import build

ROOT = Path(__file__).resolve().parents[1]
#: the tests that read the module fixture ``compiled`` run on one xdist worker (--dist loadgroup), so
#: that every instance is compiled once, not once per worker
EVERY_INSTANCE = pytest.mark.xdist_group("nvrtc_every_instance")


def _nvrtc_or_skip():
    try:
        from cupy.cuda import nvrtc  # noqa: F401

        return build.nvrtc_version()
    except Exception as exc:  # ImportError, or the NVRTC library cannot be loaded
        pytest.skip(f"CuPy NVRTC unavailable ({type(exc).__name__}: {exc}); install expansions[cuda12]")


def _resources_tool():
    spec = importlib.util.spec_from_file_location("nvrtc_resources", ROOT / "tools" / "nvrtc_resources.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def compiled():
    """(tool module, rows, notes): every instance of the resource check compiled once."""
    _nvrtc_or_skip()
    tool = _resources_tool()
    rows, notes = tool.collect()
    return tool, rows, notes


@pytest.mark.slow  # NVRTC compiles every instance (minutes on 2 cores)
@EVERY_INSTANCE
def test_every_instance_compiles(compiled):
    tool, rows, _ = compiled
    archs, _ = tool.target_archs()
    expected = sum(len(build.resource_instances(a)) for a in archs)
    assert len(rows) == expected
    assert {r[0] for r in rows} == set(archs)
    assert all(r[6] > 0 for r in rows), "ptxas reported no registers for some kernel"


@pytest.mark.slow  # NVRTC compiles every instance (minutes on 2 cores)
@EVERY_INSTANCE
def test_no_spills_up_to_16_terms(compiled):
    tool, rows, _ = compiled
    bad = tool.spilling(rows)
    assert not bad, "kernels with R <= 16 spill:\n" + "\n".join(" ".join(map(str, r)) for r in bad)


@pytest.mark.slow  # NVRTC compiles every instance (minutes on 2 cores)
@EVERY_INSTANCE
def test_resources_md_is_up_to_date(compiled):
    tool, rows, notes = compiled
    text = tool.OUTPUT.read_text()
    recorded = tool.recorded_version(text)
    if recorded != tool.version_string():
        pytest.skip(
            f"resources.md was made with NVRTC {recorded}, this is NVRTC {tool.version_string()}: "
            "register counts depend on the compiler version"
        )
    assert tool.parse(text) == tool.parse(tool.render(rows, notes)), (
        "expansions/cuda/resources.md is out of date: run python tools/nvrtc_resources.py"
    )


def test_name_expressions_cover_the_table():
    """Every operation of the table yields a distinct name expression for each dtype and size."""
    insts = build.resource_instances("sm_90")
    names = [i.name_expression for i in insts]
    assert len(set(names)) == len(names)
    assert {i.op for i in insts} == set(build.OPERATIONS)
    assert build.instance("add_safe", "float64", 4, 2, 3).name_expression == \
        "expansions::add_safe<double, 2, 3, 4, false>"
    assert build.instance("add_safe", "float64", 4, 2, 3, renormalize=True).name_expression == \
        "expansions::add_safe<double, 2, 3, 4, true>"
    assert build.instance("newton_div", "float32", 4, renormalize=True).name_expression == \
        "expansions::newton_div<float, 4, 4, 4, true, 2, 4>"  # the steps: the double-word start, then 4
    with pytest.raises(ValueError):
        build.instance("renormalize", "float64", 4, renormalize=True)
    # every operation with a renormalizing instance is in the resource check both ways on sm_90
    both = {(i.op, i.renormalize) for i in insts}
    assert all((op, flag) in both for op, info in build.OPERATIONS.items() if info.renormalizes
               for flag in (False, True))
    assert build.instance("renormalize", "float32", 8, 3).name_expression == "expansions::renormalize<float, 3, 8>"
    assert build.instance("negate", "float64", 5).name_expression == "expansions::negate<double, 5>"
    with pytest.raises(ValueError):
        build.instance("add_safe", "float64", 33)
    with pytest.raises(TypeError):
        build.instance("add_safe", "int32", 4)


def test_rounding_stays_explicit():
    """The PTX keeps float32 subnormals (no .ftz) and contracts nothing (no fma in the additions)."""
    _nvrtc_or_skip()
    adds = [build.instance(op, dt, 4) for op in ("add_safe", "add_fast") for dt in ("float64", "float32")]
    ptx = build.compile_instances(adds, "compute_90").binary.decode()
    assert ".ftz" not in ptx
    assert not re.search(r"\bfma\.", ptx)
    assert "add.rn.f32" in ptx and "add.rn.f64" in ptx
    mul = build.compile_instances([build.instance("mul_truncated", "float32", 4)], "compute_90").binary.decode()
    assert ".ftz" not in mul and "fma.rn.f32" in mul


def test_sources_are_self_contained():
    """Headers have #pragma once and include only each other (NVRTC has no system headers)."""
    cuda = ROOT / "expansions" / "cuda"
    files = sorted(cuda.glob("*.cuh")) + [cuda / "kernels.cu"]
    for f in files:
        text = f.read_text()
        assert "#pragma once" in text, f.name
        for inc in re.findall(r'#include\s+[<"]([^>"]+)[>"]', text):
            if inc == build.GENERATED_STEPS:  # generated by build.source (NewtonSteps of bounds.newton_steps)
                continue
            assert (cuda / inc).exists(), f"{f.name} includes {inc}, which is not a local header"
    assert "#include" not in build.source() and "struct NewtonSteps<double, 32>" in build.source()
    assert "#include" not in build.source()
