"""The double-word seeds' reproductions (paper_repro.seed002_dagraca, seed000_warwick,
seed003_innocente) in quick mode: they run in seconds, read their anchors, and their figures are sane
(within the proven bounds where there are some)."""

import math

import numpy as np
import pytest

from paper_repro import seed000_warwick, seed002_dagraca, seed003_innocente


def test_seed002_table5_within_the_papers_bounds():
    res = seed002_dagraca.run(quick=True, n=2**14, backend="cpu")
    rows = {r["operation"]: r for r in res["rows"]}
    assert set(rows) == set(seed002_dagraca.OPERATIONS)
    assert rows["Add12"]["exact"] and rows["Mul12"]["exact"]  # error-free on IEEE hardware
    for r in rows.values():
        assert r["within_bound"], r
        assert r["paper_max_error_log2"]  # read from the anchors CSV
    # Mul22 within 2^-44 (Theorem 6) and, as DWTimesDW1, within 7u^2 = 7 * 2^-48
    assert rows["Mul22"]["max_relative_error"] <= 7 * 2.0**-48
    md = seed002_dagraca.markdown(res)
    assert "Table 5" in md and "Mul22" in md


def test_seed002_error_sums_are_accurate():
    """SumK recovers a tiny difference of large terms exactly."""
    a = np.array([1.0, 2.0**60])
    terms = [a, np.array([2.0**-60, 1.0]), -a]
    assert np.array_equal(seed002_dagraca.sum_k(terms), np.array([2.0**-60, 1.0]))


def test_seed000_table1_and_leibniz():
    res = seed000_warwick.run(quick=True, n=2**13)
    t1 = res["table1"]
    paper = res["paper_table1"]
    assert set(paper) == set(seed000_warwick.STATS)
    for op in seed000_warwick.OPS:
        assert t1[op]["min"] == 0
        assert 0 < t1[op]["median"] <= 16  # float-float carries ~48 of FP64's 53 bits
    # products and quotients have no cancellation: a few dozen ulps at most, as in the paper
    assert t1["mul"]["max"] < 256 and t1["div"]["max"] < 512
    lz = res["leibniz"]
    assert abs(lz["ep"] - math.pi) < 1e-3 and abs(lz["fp64"] - math.pi) < 1e-3
    assert abs(lz["ep"] - lz["fp64"]) < 2**-40  # float-float agrees with FP64 to ~2^-45 relative
    assert lz["paper_ep_vs_fp64_ulps"] == 5
    assert "Leibniz" in seed000_warwick.markdown(res)


def test_seed000_ulp_distance():
    x = np.array([1.0, -1.0, 0.0, 1.0])
    y = np.array([np.nextafter(1.0, 2.0), np.nextafter(-1.0, 0.0), -0.0, 1.0 + 2**-50])
    assert seed000_warwick.ulp_distance(x, y).tolist() == [1, 1, 0, 4]


def test_seed003_cholesky_precision_ordering():
    res = seed003_innocente.run(quick=True, n=2000)
    p = {r["system"]: r["precision_max"] for r in res["rows"]}
    assert set(p) == set(seed003_innocente.SYSTEMS)
    assert p["2double precise"] < p["2double sloppy"] * 10 < p["double"]
    assert p["double"] < p["2float precise"] * 1e3  # float-pair: ~48 bits, double: 53 bits
    assert p["2float sloppy"] < p["float"] * 1e-4
    assert all(r["matrices_per_second_cpu"] > 0 for r in res["rows"])
    assert "float" in res["paper_cpu"]
    assert "Cholesky" in seed003_innocente.markdown(res)


def test_seed003_inverse_is_an_inverse():
    A = seed003_innocente.random_spd(50, np.random.default_rng(0))
    S = seed003_innocente.system("double")
    inv = seed003_innocente.invert(S, [[A[:, i, j] for j in range(5)] for i in range(5)])
    X = np.stack([np.stack(row, axis=-1) for row in inv], axis=-2)
    assert np.allclose(X @ A, np.eye(5), atol=1e-8)
    with pytest.raises(KeyError):
        seed003_innocente.paper_cpu_table()["no such column"]
