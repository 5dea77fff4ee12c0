"""Double-word algorithms (expansions.dw): twins against the exact reference, bounds, exhaustive tiny
precisions, operation counts, special values.

* twin vs reference: bit-identical (NaN compared as NaN) on the verification's random and
  adversarial inputs, float64 and float32;
* bounds: the exact error of every case of a small verification run (random, adversarial, hill
  climb) is within the proven bound (`expansions.dw.bounds`);
* exhaustive in the reference at p = 4..8: every xh in [1, 2) (in [1, 4) for the square root), yh in
  ±[1, 2) (also ±[1/2, 1) for p <= 5) with every p-bit significand for p <= 6 and every 8th (p = 7)
  or 16th (p = 8) significand; tails from the boundary set {0, ±ulp/2 (where the pair stays a
  double-word), ±(1 - 2^-p) ulp/2, ±ulp/4, ±3ulp/8, ±2^-p ulp/2}: every tail combination at p = 4 for
  a floating-point second operand and the square root, else 8 (p = 4), 2 (p = 5) or 1 (p >= 6)
  combinations per leading pair, taken in turn;
* operation counts: the reference instrumented, against the `fp_ops` column of JMP's Table 1;
* NaN and infinities: never a finite high word, and twin = reference.
"""

import csv
import itertools
import re
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from expansions.dw import ALGORITHMS, cpu
from expansions.dw import bounds as DB
from expansions.dw import reference as R
from expansions.dw import verify as V
from expansions.formats import FLOAT32, FLOAT64, format_of, tiny_format
from expansions.reference import eft as ref_eft
from expansions.reference import fp
from expansions.reference.fp import exact, from_float, to_float

DTYPES = ("float64", "float32")
NAMES = tuple(ALGORITHMS)
ANCHOR = Path(__file__).resolve().parents[1] / "paper_repro" / "anchors" / "jmp2017_double_word_bounds.csv"


def _bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


def _same(a, b):
    return (_bits(a) == _bits(b)) | (np.isnan(a) & np.isnan(b))


def _reference(name, words, dtype):
    fmt = format_of(dtype)
    f = getattr(R, name)
    zh, zl = [], []
    for row in zip(*words):
        a, b = f(*[from_float(v) for v in row], fmt)
        zh.append(to_float(a))
        zl.append(to_float(b))
    return np.array(zh, dtype=dtype), np.array(zl, dtype=dtype)


def _table(words, got, want, limit=4):
    bad = np.flatnonzero(~(_same(got[0], want[0]) & _same(got[1], want[1])))
    lines = [f"{bad.size} of {got[0].size} rows differ; first {min(limit, bad.size)}:"]
    for i in bad[:limit]:
        lines.append("  inputs: " + " ".join(float(w[i]).hex() for w in words))
        lines.append(f"  got   : {float(got[0][i]).hex()} {float(got[1][i]).hex()}")
        lines.append(f"  want  : {float(want[0][i]).hex()} {float(want[1][i]).hex()}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# twins


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_twin_equals_reference(name, dtype):
    words = V.families(name, 240, dtype, np.random.default_rng(sorted(NAMES).index(name)))
    got = V.twin(name, words)
    want = _reference(name, words, dtype)
    ok = _same(got[0], want[0]) & _same(got[1], want[1])
    assert ok.all(), _table(words, got, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_fma_twin_is_correctly_rounded(dtype):
    """The emulated FMA against the exact one: random, cancelling (c = -RN(ab) + k ulp), near-tie
    (c = ±ulp(ab)/2, ±ulp/4) and small-integer triples."""
    rng = np.random.default_rng(7)
    fmt = format_of(dtype)
    N = 3000
    a = (rng.standard_normal(N) * 2.0 ** rng.integers(-30, 30, N)).astype(dtype)
    b = (rng.standard_normal(N) * 2.0 ** rng.integers(-30, 30, N)).astype(dtype)
    ab = a.astype(np.float64) * b.astype(np.float64)
    sp = np.spacing(np.abs(ab.astype(dtype))).astype(np.float64)
    c = np.choose(rng.integers(0, 5, N), (
        (rng.standard_normal(N) * 2.0 ** rng.integers(-30, 30, N)),
        -ab,
        sp * rng.choice([0.5, -0.5, 0.25, -0.25], N),
        -ab.astype(dtype).astype(np.float64) + sp * rng.integers(-3, 4, N),
        np.zeros(N),
    )).astype(dtype)
    m = rng.random(N) < 0.2
    a[m] = rng.integers(-(2**12), 2**12, m.sum())
    b[m] = rng.integers(-(2**12), 2**12, m.sum())
    c[m] = rng.integers(-(2**12), 2**12, m.sum()) * rng.choice([0.5, 1.0, 2.0 ** (12 - fmt.p)], m.sum())
    got = cpu.fma(a, b, c)
    want = np.array([to_float(fp.fma(from_float(x), from_float(y), from_float(z), fmt))
                     for x, y, z in zip(a, b, c)], dtype=dtype)
    bad = np.flatnonzero(~_same(got, want))
    assert bad.size == 0, [(float(a[i]).hex(), float(b[i]).hex(), float(c[i]).hex()) for i in bad[:4]]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_div_and_sqrt_are_correctly_rounded(dtype):
    """The reference's division and square root against IEEE hardware (NumPy), random and exact cases."""
    rng = np.random.default_rng(11)
    fmt = format_of(dtype)
    N = 1500
    a = (rng.standard_normal(N) * 2.0 ** rng.integers(-40, 40, N)).astype(dtype)
    b = (rng.standard_normal(N) * 2.0 ** rng.integers(-40, 40, N)).astype(dtype)
    a[:100] = (b[:100].astype(np.float64) * rng.integers(-50, 50, 100)).astype(dtype)  # exact quotients
    sq = np.abs(a)
    sq[:100] = (np.abs(b[:100]).astype(np.float64) ** 2).astype(dtype)  # (near) squares
    sq[100:110] = [0.0, -0.0, np.inf, 4.0, 2.0**-140, 0.25, 1.0, 2.0, 9.0, 2.0**-149]
    with np.errstate(all="ignore"):
        want_q, want_s = a / b, np.sqrt(sq)
    got_q = np.array([to_float(R.div(from_float(x), from_float(y), fmt)) for x, y in zip(a, b)], dtype=dtype)
    got_s = np.array([to_float(R.sqrt(from_float(x), fmt)) for x in sq], dtype=dtype)
    assert _same(got_q, want_q).all()
    assert _same(got_s, want_s).all()


def test_div_special_values():
    f = FLOAT64
    assert R.div(1.0, 0.0, f) == np.inf and R.div(-0.0, 0.0, f) != R.div(-0.0, 0.0, f)
    assert R.div(Fraction(1), -np.inf, f) == 0.0 and np.signbit(R.div(Fraction(1), -np.inf, f))
    assert np.isnan(R.sqrt(Fraction(-1), f)) and np.signbit(R.sqrt(-0.0, f))


def test_equivalent_algorithms_give_identical_bits():
    """QD's sloppy_add / ieee_add are JMP's Algorithms 5 / 6 operation for operation; Mul22 (with
    Add12(t1, t3)) gives the values of DWTimesDW1; Add12 is 2Sum."""
    for dtype in DTYPES:
        rng = np.random.default_rng(3)
        w = V.families("dw_add_accurate", 3000, dtype, rng)
        for a, b in (("qd_add_sloppy", "dw_add_sloppy"), ("qd_add_ieee", "dw_add_accurate")):
            x, y = V.twin(a, w), V.twin(b, w)
            assert (_same(x[0], y[0]) & _same(x[1], y[1])).all()
        w = V.families("dw_times_dw1", 3000, dtype, rng)
        x, y = V.twin("dg_mul22", w), V.twin("dw_times_dw1", w)
        assert (_same(x[0], y[0]) & _same(x[1], y[1])).all()
        s = cpu.dg_add12(w[0], w[2])
        t = cpu.two_sum(w[0], w[2])
        assert (_same(s[0], t[0]) & _same(s[1], t[1])).all()


def test_mul22_as_printed_would_drop_the_cross_products():
    """da Graça and Defour print Add12(t1, t2) on Mul22's line 3; that pair is exactly ah*bh, an error
    of |ah*bl + al*bh| ~ 2^-24 relative, far above their Theorem 6 (2^-44): t3 is meant."""
    f = FLOAT32
    ah, al, bh, bl = Fraction(3, 2), Fraction(1, 2**26), Fraction(5, 4), Fraction(-1, 2**27)
    t1, t2 = R.dg_mul12(ah, bh, f)
    printed = R.dg_add12(t1, t2, f)
    ours = R.dg_mul22(ah, al, bh, bl, f)
    z = (ah + al) * (bh + bl)
    err_printed = abs(exact(printed[0]) + exact(printed[1]) - z) / z
    err_ours = abs(exact(ours[0]) + exact(ours[1]) - z) / z
    assert err_printed > Fraction(1, 2**30)
    assert err_ours <= Fraction(1, 2**44)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_twins_run_on_cupy(dtype):
    """The twins are array-module generic: CuPy results equal NumPy results bit for bit."""
    cupy = pytest.importorskip("cupy")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no driver or no device
        pytest.skip("no CUDA device")
    for name in NAMES:
        w = V.families(name, 2000, dtype, np.random.default_rng(1))
        want = V.twin(name, w)
        with np.errstate(all="ignore"):
            got = getattr(cpu, name)(*[cupy.asarray(x) for x in w])
        got = [g.get() for g in got]
        assert (_same(got[0], want[0]) & _same(got[1], want[1])).all(), name


# ---------------------------------------------------------------------------------------------
# bounds


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_bound_never_violated(name, dtype):
    row = V.verify_one(name, dtype, samples=600, climb=4, seed=1)
    assert row.cases >= 600
    assert row.violations == 0, row.worst_case.get("violation")
    if row.bound_u2 is not None:
        assert row.max_observed_u2 <= row.bound_u2


def _csv_rows():
    with open(ANCHOR) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _parse_u(text):
    """'3u^2+13u^3' -> {2: 3, 3: 13}."""
    out = {}
    for sign, coef, power in re.findall(r"([+-]?)([\d.]+)u\^(\d)", text.replace(" ", "")):
        out[int(power)] = (-1 if sign == "-" else 1) * Fraction(coef)
    return out


def test_bounds_match_jmp_table():
    """The rationals typed in expansions.dw.bounds are the `proven_bound` column of JMP's Table 1."""
    names = {a.jmp: a.name for a in ALGORITHMS.values() if a.jmp}
    seen = set()
    for r in _csv_rows():
        n = int(re.match(r"\d+", r["algorithm"]).group())
        seen.add(n)
        b = DB.bound(names[n], 53)
        if r["proven_bound"].startswith("N/A"):
            assert b is None
            continue
        terms = _parse_u(r["proven_bound"])
        u = Fraction(1, 2**53)
        assert b.value == sum(c * u**k for k, c in terms.items()), (n, r["proven_bound"])
    assert seen == set(range(4, 19))
    assert DB.bound("dw_div_dw3", 24).value == Fraction(49, 5) / 2**48


def test_tight_witnesses():
    """Inputs found by the hill climb of the verification, where the bound is (almost) attained:
    DWPlusFP 2u^2, DWTimesFP1 1.5u^2, DWTimesDW1/2 5u^2 (above JMP's 4.99u^2, as Muller and Rideau
    show possible), SQRTDWtoDW 25/8 u^2 (float64)."""
    cases = {
        "dw_plus_fp": (["-0x1p-3", "-0x1.ffffffffffff7p-57", "0x1.fffffffffffffp-5"], Fraction(1999, 1000)),
        "dw_times_fp1": (["-0x1.ffffffffffffdp+4", "0x1.fffffffffffffp-50", "-0x1.0000000000002p-3"],
                         Fraction(1499, 1000)),
        "dw_times_dw1": (["-0x1.0000000000002p-1", "-0x1.fffffffffffffp-55", "0x1.0000000000001p+0",
                          "0x1.fffffffffffffp-54"], Fraction(4999, 1000)),
        "dw_times_dw2": (["0x1.0000000000001p+3", "0x1.ffffffffffffdp-51", "0x1.0000000000001p+3",
                          "0x1.fffffffffffffp-51"], Fraction(4999, 1000)),
        "dw_sqrt": (["0x1.0000000000003p+2", "0x1.ffffffffffffap-52"], Fraction(3124, 1000)),
    }
    for name, (hexes, at_least) in cases.items():
        words = [np.array([float.fromhex(h)]) for h in hexes]
        zh, zl = V.twin(name, words)
        b = DB.bound(name, 53).value
        [(_, rel, viol)] = V.exact_errors(name, words, zh, zl, 53, b)
        assert not viol
        assert rel * 2**106 >= at_least, (name, float(rel * 2**106))


# ---------------------------------------------------------------------------------------------
# exhaustive runs in tiny precisions (reference only)


def _binade_of(v):
    e = 0
    a = abs(v)
    while a >= 2:
        a /= 2
        e += 1
    while a < 1:
        a *= 2
        e -= 1
    return e


def _tails(h, fmt):
    half = Fraction(2) ** (_binade_of(h) - fmt.p)  # ulp(h) / 2
    mags = [half, half * (1 - Fraction(1, 2**fmt.p)), half / 2, half * Fraction(3, 4), half / 2**fmt.p]
    out = [0.0]
    for m in mags:
        for s in (1, -1):
            if fp.add(h, s * m, fmt) == h:  # (h, t) is a double-word
                out.append(s * m)
    return out


def _leads(p, binades, signs, step=1):
    half = 2 ** (p - 1)
    return [s * Fraction(m, half) * Fraction(2) ** e for e in binades for m in range(half, 2 * half, step)
            for s in signs]


def _exhaustive_cases(name, p):
    fmt = tiny_format(p, -60, 60)
    alg = ALGORITHMS[name]
    positive = alg.operation == "sqrt"
    xs = _leads(p, (0, 1) if positive else (0,), (1,))
    if alg.operands == ("dw",):
        for h in xs:
            for t in _tails(h, fmt):
                yield (h, t)
        return
    ys = _leads(p, (-1, 0) if p <= 5 else (0,), (1, -1), step=2 ** (p - 4) if p >= 7 else 1)
    tails = {}
    combos = {4: 8, 5: 2}.get(p, 1)
    if p == 4 and alg.operands[1] == "fp":
        combos = None  # every combination
    k = 0
    for xh, yh in itertools.product(xs, ys):
        for v in (xh, yh):
            if v not in tails:
                tails[v] = _tails(v, fmt)
        tx = tails[xh]
        ty = tails[yh] if alg.operands[1] == "dw" else [None]
        pairs = list(itertools.product(tx, ty))
        if combos is not None:
            pairs = [pairs[(k + j * 7) % len(pairs)] for j in range(combos)]
            k += 1
        for xt, yt in pairs:
            yield (xh, xt, yh) if yt is None else (xh, xt, yh, yt)


def _check_exhaustive(name, p):
    fmt = tiny_format(p, -60, 60)
    f = getattr(R, name)
    alg = ALGORITHMS[name]
    b = DB.bound(name, p).value
    n = 0
    worst = Fraction(0)
    for args in _exhaustive_cases(name, p):
        zh, zl = f(*args, fmt)
        z = exact(zh) + exact(zl)
        x = args[0] + exact(args[1])
        n += 1
        if alg.operation == "sqrt":
            assert (1 - b) ** 2 * x <= z * z <= (1 + b) ** 2 * x, args
            continue
        y = args[2] + (exact(args[3]) if len(args) == 4 else 0)
        if alg.operation == "add":
            want = x + y
        elif alg.operation == "mul":
            want = x * y
        else:
            want = x / y
        err = abs(z - want)
        assert err <= b * abs(want), (name, p, args, float(err / abs(want) * 4**p))
        if want:
            worst = max(worst, err / abs(want))
    return n, worst


TINY = [n for n, a in ALGORITHMS.items() if DB.bound(n, 24) is not None and DB.bound(n, 24).value > 0
        and n not in ("qd_add_ieee", "dg_mul22")]  # those two repeat Algorithms 6 and 10


@pytest.mark.parametrize("p", [4, 5, 6, 7, 8])
@pytest.mark.parametrize("name", TINY)
def test_exhaustive_tiny_precision(name, p):
    n, worst = _check_exhaustive(name, p)
    assert n > 0


# ---------------------------------------------------------------------------------------------
# operation counts


class _Counter:
    def __init__(self, monkeypatch):
        self.n = 0
        for mod, names in ((R, ("add", "sub", "mul", "fma", "div", "sqrt")), (ref_eft, ("add", "sub", "mul", "fma"))):
            for nm in names:
                monkeypatch.setattr(mod, nm, self._wrap(getattr(mod, nm)))

    def _wrap(self, f):
        def counted(*args):
            self.n += 1
            return f(*args)

        return counted


def _sample_args(name):
    words = V.families(name, 3, "float64", np.random.default_rng(0))
    return [from_float(w[0]) for w in words]


def test_operation_counts_match_jmp_table(monkeypatch):
    """Counting every rounded operation of the reference (negations are free) gives the `fp_ops`
    column of JMP's Table 1; QD's additions count as Algorithms 5 and 6."""
    counter = _Counter(monkeypatch)
    by_jmp = {a.jmp: a.name for a in ALGORITHMS.values() if a.jmp}
    expected = {by_jmp[int(re.match(r"\d+", r["algorithm"]).group())]: int(r["fp_ops"]) for r in _csv_rows()}
    expected["qd_add_sloppy"] = expected["dw_add_sloppy"]
    expected["qd_add_ieee"] = expected["dw_add_accurate"]
    for name, ops in expected.items():
        args = _sample_args(name)
        counter.n = 0
        getattr(R, name)(*args, FLOAT64)
        assert counter.n == ops, (name, counter.n, ops)


# ---------------------------------------------------------------------------------------------
# special values


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", NAMES)
def test_nonfinite_inputs_never_give_finite_garbage(name, dtype):
    """An infinite or NaN word anywhere: the high word of the result is not finite (NaN or inf), and
    the twin returns what the reference returns."""
    alg = ALGORITHMS[name]
    k = V.n_words(name)
    finite = [1.5, 2.0**-30, -0.75, 2.0**-31] if alg.operands[0] == "dw" else [1.5, -0.75]
    finite = finite[:k]
    rows = []
    for j in range(k):
        for s in (np.inf, -np.inf, np.nan):
            r = list(finite)
            r[j] = s
            rows.append(r)
    rows += [[s] * k for s in (np.inf, -np.inf, np.nan)]
    words = [np.array([r[j] for r in rows], dtype=dtype) for j in range(k)]
    got = V.twin(name, words)
    want = _reference(name, words, dtype)
    assert (_same(got[0], want[0]) & _same(got[1], want[1])).all(), _table(words, got, want)
    assert not np.isfinite(got[0]).any()


@pytest.mark.parametrize("dtype", DTYPES)
def test_signed_zeros_and_zero_operands(dtype):
    """Zero operands: twin = reference (signs of zeros included), and sqrt(0) = (0, 0)."""
    vals = [0.0, -0.0, 1.0, -3.0]
    for name, alg in ALGORITHMS.items():
        k = V.n_words(name)
        rows = [r for r in itertools.product(vals, repeat=k)
                if all(abs(r[i + 1]) <= abs(r[i]) for i in range(0, k - 1, 2)) or alg.operands[0] == "fp"]
        words = [np.array([r[j] for r in rows], dtype=dtype) for j in range(k)]
        got = V.twin(name, words)
        want = _reference(name, words, dtype)
        assert (_same(got[0], want[0]) & _same(got[1], want[1])).all(), (name, _table(words, got, want))
    with np.errstate(all="ignore"):
        zh, zl = cpu.dw_sqrt(np.array([0.0, -0.0], dtype=dtype), np.zeros(2, dtype=dtype))
    assert (zh == 0).all() and (zl == 0).all() and np.signbit(zh[1])
