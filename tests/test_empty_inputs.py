"""Every public function of expansions on empty (shapes (0,), (2, 0)) and 0-d inputs does what NumPy
does for float64 of the same shape: the same result shape and kind of value, or the same kind of error."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import expansions as ex
import expansions.dask as exd

SHAPES = [(0,), (2, 0), ()]
VALUE = 0.5  # the value of a 0-d operand: inside every function's domain

# expansions' names whose NumPy counterpart has another name (the rest: the same name in numpy)
NUMPY_NAME = {"acos": "arccos", "asin": "arcsin", "atan": "arctan", "atan2": "arctan2", "pow": "power",
              "div": "divide", "mul": "multiply", "sub": "subtract", "tolist": None, "renormalize": None,
              "astype": None}

# how each function that takes more than its array operands is called, with NumPy's call beside it
CALLS = {
    "broadcast_to": (lambda f, a: f(a, a.shape)),
    "expand_dims": (lambda f, a: f(a, 0)),
    "moveaxis": (lambda f, a: f(a, 0, -1)),
    "swapaxes": (lambda f, a: f(a, 0, -1)),
    "take": (lambda f, a: f(a, np.zeros(0, dtype=np.intp))),
    "concatenate": (lambda f, a: f([a, a])),
    "stack": (lambda f, a: f([a, a])),
    "where": (lambda f, a: f(np.ones(np.shape(a), dtype=bool), a, a)),
    "full_like": (lambda f, a: f(a, 2.0)),
    "power": (lambda f, a: f(a, 3)),
}

# not functions of an array operand: creation from other objects, the backend switch, tracing, tuning
NOT_ARRAY_FUNCTIONS = {"array", "empty", "zeros", "ones", "full", "random", "from_dlpack", "from_terms",
                       "set_cpu_backend", "fuse", "tune"}
# results whose values NumPy leaves unspecified (only their shape is compared)
UNSPECIFIED_VALUES = {"empty_like"}
BINARY = {"atan2", "pow", "add", "sub", "mul", "div", "dot", "inner", "vdot", "matmul", "tensordot",
          "maximum", "minimum", "floor_divide", "remainder", "fmod"}


def _public_functions():
    names = []
    for name in ex.__all__:
        f = getattr(ex, name)
        if callable(f) and not inspect.isclass(f) and not inspect.ismodule(f) and name not in NOT_ARRAY_FUNCTIONS:
            names.append(name)
    return names


def _numpy_function(name):
    if name in ("tolist", "renormalize", "astype"):
        return {"tolist": lambda a: np.asarray(a).tolist(), "renormalize": lambda a: a,
                "astype": lambda a: a}[name]
    return getattr(np, NUMPY_NAME.get(name) or name)


def _call(name, f, a):
    if name in CALLS:
        return CALLS[name](f, a)
    return f(a, a) if name in BINARY else f(a)


def _outcome(fn):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except (ValueError, TypeError, IndexError, ZeroDivisionError, np.exceptions.AxisError) as e:
            return None, e


def _value_class(v):
    v = float(v)
    return "nan" if math.isnan(v) else "inf" if math.isinf(v) else "zero" if v == 0 else "finite"


def test_every_public_function_is_covered():
    unknown = [n for n in _public_functions() if n not in NUMPY_NAME and not hasattr(np, n)]
    assert unknown == []


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", _public_functions())
def test_empty_and_zero_d_as_numpy(name, shape):
    a = np.full(shape, VALUE)
    x = ex.array(a, terms=3)
    want, want_error = _outcome(lambda: _call(name, _numpy_function(name), a))
    got, got_error = _outcome(lambda: _call(name, getattr(ex, name), x))
    if want_error is not None:
        assert got_error is not None and isinstance(got_error, (type(want_error), ValueError, TypeError)), \
            (name, shape, want_error, got)
        return
    assert got_error is None, (name, shape, got_error)
    if name == "tolist":
        assert np.shape(got) == np.shape(want)
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        want, got = want[0], got[0]
    assert np.shape(got) == np.shape(want), (name, shape)
    if isinstance(got, ex.ExpansionArray):
        assert np.asarray(want).dtype.kind == "f", name
        if got.ndim == 0 and name not in UNSPECIFIED_VALUES:
            assert _value_class(got.terms.sum()) == _value_class(want), (name, shape, got, want)
    else:
        assert np.asarray(got).dtype.kind == np.asarray(want).dtype.kind, (name, shape, got, want)
        if np.ndim(want) == 0:
            assert got == want, (name, shape, got, want)


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3)], ids=str)
@pytest.mark.parametrize("axis", [None, 0, -1])
def test_dask_sum_of_empty(shape, axis):
    x = ex.zeros(shape, terms=2)
    d = exd.from_array(x, chunks=1)
    r = exd.sum(d, axis=axis).compute()
    assert r.shape == np.sum(np.zeros(shape), axis=axis).shape
    assert np.array_equal(r.terms, ex.sum(x, axis=axis).terms)
    assert not r.terms.any()
