"""Explicit SIMD vectors for numba: the lanes of one vector hold one term of LANES expansions.

The fused engine (:mod:`expansions.engine.fused`) runs the GPU's lane-group algorithms with the layout
transposed (design decision 14): where a warp holds the terms of a few expansions on its lanes, a
vector here holds the same term of ``LANES`` expansions, so each lane step of the warp algorithm is
one vector instruction over ``LANES`` expansions.  Rather than hoping that LLVM's loop vectorizer
turns scalar loops into vector code (it does not, through the data-dependent loops of the
algorithms), the vectors are a numba type of their own, :class:`Vec`, whose values are LLVM vectors
(``<8 x double>``, ``<16 x float>``: one AVX-512 register), with the few operations the algorithms
need written as LLVM instructions:

* ``vload(a, k)`` / ``vstore(a, k, v)``: the LANES elements a[k : k + LANES] of a 1-D array or of
  memory behind a pointer (:func:`aligned_pointer`); :func:`gather_column` / :func:`scatter_column`:
  one term of LANES consecutive expansions of a 2-D array of terms;
* ``+ - * /`` and unary ``-`` on float vectors, one IEEE operation per lane rounded to nearest even
  (no fast-math flag, so no contraction or reassociation; ``-v`` flips the sign bit as NumPy does),
  :func:`fma` (``llvm.fma``: one rounding), :func:`vsqrt`;
* comparisons ``== != < <= > >=`` with Python's semantics on NaN (``!=`` is true for NaN) giving
  masks (``Vec`` of booleans); ``& | ^ ~`` on masks, :func:`where` (a select), :func:`any_lane`,
  :func:`mask_bits` (the lanes as the bits of an integer);
* :func:`to_bits` / :func:`from_bits` (bit casts to unsigned integers of the same width) and
  ``+ - & | ^ << >>`` and unsigned comparisons on those integer vectors;
* :func:`splat` (a constant in every lane) and :func:`lane` (one lane as a scalar).

Every operation is element-wise and IEEE, so a vector of LANES expansions computes what LANES
scalar runs compute, bit for bit.
"""

from __future__ import annotations

import operator

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, lower_builtin, models, register_model, type_callable

#: Expansions per vector: one 64-byte (AVX-512) register of float64 or float32 terms.
LANES = {64: 8, 32: 16}


class Vec(types.Type):
    """A SIMD vector of ``count`` values of the numba scalar type ``dtype`` (a float, an unsigned
    integer of a float's width, or a boolean: a mask)."""

    def __init__(self, dtype, count):
        self.dtype = dtype
        self.count = count
        super().__init__(name=f"Vec({dtype}, {count})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        element = ir.IntType(1) if fe_type.dtype == types.boolean else dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.count))


def _is_float(t):
    return isinstance(t, Vec) and isinstance(t.dtype, types.Float)


def _is_int(t):
    return isinstance(t, Vec) and isinstance(t.dtype, types.Integer)


def _is_mask(t):
    return isinstance(t, Vec) and t.dtype == types.boolean


def _lanes_of(dtype):
    return LANES[dtype.bitwidth]


def _vector_intrinsic(builder, name, vtype, args, ret=None):
    """Call the LLVM intrinsic ``name.<suffix of vtype>`` on args."""
    lty = args[0].type
    suffix = f"v{vtype.count}" + ("i1" if vtype.dtype == types.boolean else
                                  (f"f{vtype.dtype.bitwidth}" if isinstance(vtype.dtype, types.Float)
                                   else f"i{vtype.dtype.bitwidth}"))
    fnty = ir.FunctionType(ret if ret is not None else lty, [a.type for a in args])
    fn = cgutils.get_or_insert_function(builder.module, fnty, f"{name}.{suffix}")
    return builder.call(fn, args)


# ---------------------------------------------------------------------------------------------
# memory


def _vector_pointer(context, builder, memty, mem, offset, vty):
    data = mem if isinstance(memty, types.CPointer) else context.make_array(memty)(context, builder, mem).data
    return builder.bitcast(builder.gep(data, [offset]), context.get_value_type(vty).as_pointer())


def _is_memory(mem):
    """A 1-D float array or a pointer to floats (the engine's workspace)."""
    return ((isinstance(mem, types.Array) and mem.ndim == 1 and isinstance(mem.dtype, types.Float))
            or (isinstance(mem, types.CPointer) and isinstance(mem.dtype, types.Float)))


@intrinsic
def vload(typingctx, mem, offset):
    """The vector of mem[offset : offset + LANES] (a 1-D float array or a pointer to floats; no bounds
    check)."""
    if not _is_memory(mem):
        return None
    vty = Vec(mem.dtype, _lanes_of(mem.dtype))

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1], vty)
        return builder.load(ptr, align=mem.dtype.bitwidth // 8)

    return vty(mem, types.intp), codegen


@intrinsic
def vstore(typingctx, mem, offset, value):
    """mem[offset : offset + LANES] = value (no bounds check)."""
    if not (_is_memory(mem) and _is_float(value) and value.dtype == mem.dtype):
        return None

    def codegen(context, builder, sig, args):
        ptr = _vector_pointer(context, builder, sig.args[0], args[0], args[1], sig.args[2])
        builder.store(args[2], ptr, align=mem.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.none(mem, types.intp, value), codegen


@intrinsic
def aligned_pointer(typingctx, arr):
    """A pointer to the first element of the 1-D float array arr whose address is a multiple of 64
    bytes (the caller keeps arr alive and leaves LANES elements for the shift)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(arr.dtype, types.Float)):
        return None

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        i64 = ir.IntType(64)
        address = builder.ptrtoint(data, i64)
        aligned = builder.and_(builder.add(address, ir.Constant(i64, 63)), ir.Constant(i64, ~63))
        return builder.inttoptr(aligned, data.type)

    return types.CPointer(arr.dtype)(arr), codegen


@intrinsic
def pointer_at(typingctx, like, address):
    """The integer ``address`` as a pointer to floats of the dtype of the array ``like`` (an array
    that the caller passes by its address, ``a.ctypes.data``, and keeps alive)."""
    if not (isinstance(like, types.Array) and isinstance(like.dtype, types.Float)
            and isinstance(address, types.Integer)):
        return None
    pty = types.CPointer(like.dtype)

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[1], context.get_value_type(pty))

    return pty(like, address), codegen


def _column_pointers(context, builder, arrty, arr, first, t, count, lanes):
    """(pointers to a[first + j, t] for j < lanes, mask first + j < count) of a 2-D C-contiguous array."""
    i64 = ir.IntType(64)
    vi64 = ir.VectorType(i64, lanes)

    def spread(v):
        vec = ir.Constant(vi64, ir.Undefined)
        for k in range(lanes):
            vec = builder.insert_element(vec, v, ir.Constant(ir.IntType(32), k))
        return vec

    ary = context.make_array(arrty)(context, builder, arr)
    ncols = cgutils.unpack_tuple(builder, ary.shape)[1]
    rows = builder.add(spread(first), ir.Constant(vi64, [ir.Constant(i64, k) for k in range(lanes)]))
    mask = builder.icmp_signed("<", rows, spread(count))
    item = spread(ir.Constant(i64, arrty.dtype.bitwidth // 8))
    offsets = builder.mul(builder.add(builder.mul(rows, spread(ncols)), spread(t)), item)
    base = spread(builder.ptrtoint(ary.data, i64))
    element = context.get_value_type(arrty.dtype).as_pointer()
    return builder.inttoptr(builder.add(base, offsets), ir.VectorType(element, lanes)), mask


def _is_terms(arr):
    return (isinstance(arr, types.Array) and arr.ndim == 2 and arr.layout == "C"
            and isinstance(arr.dtype, types.Float))


@intrinsic
def gather_column(typingctx, arr, first, t, count, negate):
    """The vector (a[first + j, t] for j < LANES), negated (the sign flipped) with ``negate``, +0 in
    the lanes with first + j >= count: one masked gather from a 2-D C-contiguous float array (term t
    of LANES consecutive expansions: the transposed load of a block)."""
    if not (_is_terms(arr) and isinstance(negate, types.Boolean)):
        return None
    lanes = _lanes_of(arr.dtype)
    vty = Vec(arr.dtype, lanes)

    def codegen(context, builder, sig, args):
        ptrs, mask = _column_pointers(context, builder, sig.args[0], args[0], args[1], args[2], args[3], lanes)
        lty = context.get_value_type(vty)
        align = ir.Constant(ir.IntType(32), arr.dtype.bitwidth // 8)
        fnty = ir.FunctionType(lty, [ptrs.type, align.type, mask.type, lty])
        name = f"llvm.masked.gather.v{lanes}f{arr.dtype.bitwidth}.v{lanes}p0"
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        zero = ir.Constant(lty, None)
        v = builder.call(fn, [ptrs, align, mask, zero])
        flip = context.cast(builder, args[4], sig.args[4], types.boolean)
        return builder.select(mask, builder.select(flip, builder.fneg(v), v), zero)

    return vty(arr, types.intp, types.intp, types.intp, negate), codegen


@intrinsic
def scatter_column(typingctx, arr, first, t, count, value):
    """a[first + j, t] = value[j] for the j < LANES with first + j < count: one masked scatter (the
    transposed store of a block)."""
    if not (_is_terms(arr) and _is_float(value) and value.dtype == arr.dtype):
        return None
    lanes = _lanes_of(arr.dtype)

    def codegen(context, builder, sig, args):
        ptrs, mask = _column_pointers(context, builder, sig.args[0], args[0], args[1], args[2], args[3], lanes)
        align = ir.Constant(ir.IntType(32), arr.dtype.bitwidth // 8)
        fnty = ir.FunctionType(ir.VoidType(), [args[4].type, ptrs.type, align.type, mask.type])
        name = f"llvm.masked.scatter.v{lanes}f{arr.dtype.bitwidth}.v{lanes}p0"
        fn = cgutils.get_or_insert_function(builder.module, fnty, name)
        builder.call(fn, [args[4], ptrs, align, mask])
        return context.get_dummy_value()

    return types.none(arr, types.intp, types.intp, types.intp, value), codegen


# ---------------------------------------------------------------------------------------------
# constants and lanes


@intrinsic
def splat(typingctx, like, value):
    """A vector with ``value`` (converted to the element type) in every lane.  ``like``: a vector (its
    type) or a 1-D float array (a float vector of its dtype)."""
    if isinstance(like, types.Array):
        vty = Vec(like.dtype, _lanes_of(like.dtype))
    elif isinstance(like, Vec) and not _is_mask(like):
        vty = like
    else:
        return None
    if not isinstance(value, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        scalar = context.cast(builder, args[1], sig.args[1], vty.dtype)
        lty = context.get_value_type(vty)
        vec = ir.Constant(lty, ir.Undefined)
        for k in range(vty.count):
            vec = builder.insert_element(vec, scalar, ir.Constant(ir.IntType(32), k))
        return vec

    return vty(like, value), codegen


@intrinsic
def lane(typingctx, v, k):
    """Lane k of v as a scalar (a bool for a mask)."""
    if not isinstance(v, Vec) or not isinstance(k, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.extract_element(args[0], args[1])

    return v.dtype(v, k), codegen


@intrinsic
def iota(typingctx, like):
    """The unsigned integer vector (0, 1, ..., LANES-1) of the width of the float vector ``like``."""
    if not _is_float(like):
        return None
    ity = types.Integer.from_bitwidth(like.dtype.bitwidth, signed=False)
    vty = Vec(ity, like.count)

    def codegen(context, builder, sig, args):
        lty = context.get_value_type(vty)
        return ir.Constant(lty, [ir.Constant(lty.element, k) for k in range(vty.count)])

    return vty(like), codegen


# ---------------------------------------------------------------------------------------------
# bits


@intrinsic
def to_bits(typingctx, v):
    """The IEEE bits of each lane of a float vector, as unsigned integers of the same width."""
    if not _is_float(v):
        return None
    vty = Vec(types.Integer.from_bitwidth(v.dtype.bitwidth, signed=False), v.count)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(vty))

    return vty(v), codegen


def _float_of(ity):
    return types.float64 if ity.bitwidth == 64 else types.float32


@intrinsic
def from_bits(typingctx, u):
    """The floats whose IEEE bits are the lanes of an unsigned integer vector (64 or 32 bits)."""
    if not (_is_int(u) and u.dtype.bitwidth in (32, 64)):
        return None
    vty = Vec(_float_of(u.dtype), u.count)

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(vty))

    return vty(u), codegen


# ---------------------------------------------------------------------------------------------
# arithmetic


_BINARY = {  # Python operator: (LLVM instruction on float vectors, on integer vectors, on masks)
    operator.add: ("fadd", "add", None),
    operator.sub: ("fsub", "sub", None),
    operator.mul: ("fmul", "mul", None),
    operator.truediv: ("fdiv", None, None),
    operator.and_: (None, "and_", "and_"),
    operator.or_: (None, "or_", "or_"),
    operator.xor: (None, "xor", "xor"),
    operator.lshift: (None, "shl", None),
    operator.rshift: (None, "lshr", None),
}


def _instruction(pyop, vty):
    float_op, int_op, mask_op = _BINARY[pyop]
    return float_op if _is_float(vty) else (mask_op if _is_mask(vty) else int_op)


def _register_binary(pyop):
    @type_callable(pyop)
    def _typer(context):
        def typer(a, b):
            if isinstance(a, Vec) and a == b and _instruction(pyop, a) is not None:
                return a

        return typer

    @lower_builtin(pyop, Vec, Vec)
    def _lower(context, builder, sig, args):
        return getattr(builder, _instruction(pyop, sig.args[0]))(args[0], args[1])


for _op in _BINARY:
    _register_binary(_op)


@type_callable(operator.neg)
def _type_neg(context):
    def typer(a):
        if _is_float(a):
            return a

    return typer


@lower_builtin(operator.neg, Vec)
def _lower_neg(context, builder, sig, args):
    return builder.fneg(args[0])


@type_callable(operator.invert)
def _type_invert(context):
    def typer(a):
        if _is_mask(a) or _is_int(a):
            return a

    return typer


@lower_builtin(operator.invert, Vec)
def _lower_invert(context, builder, sig, args):
    return builder.not_(args[0])


@intrinsic
def fma(typingctx, a, b, c):
    """RN(a*b + c) with one rounding (``llvm.fma``: vfmadd on x86-64 with FMA), lane by lane on float
    vectors or on float64/float32 scalars (the operands of one type)."""
    if not (a == b == c and (_is_float(a) or isinstance(a, types.Float))):
        return None

    def codegen(context, builder, sig, args):
        if isinstance(a, types.Float):
            return builder.fma(*args)
        return _vector_intrinsic(builder, "llvm.fma", a, list(args))

    return a(a, b, c), codegen


@intrinsic
def vsqrt(typingctx, a):
    """The correctly rounded square root of each lane (``llvm.sqrt``)."""
    if not _is_float(a):
        return None

    def codegen(context, builder, sig, args):
        return _vector_intrinsic(builder, "llvm.sqrt", a, list(args))

    return a(a), codegen


# ---------------------------------------------------------------------------------------------
# comparisons and masks

_FLOAT_CMP = {operator.eq: ("ordered", "=="), operator.ne: ("unordered", "!="), operator.lt: ("ordered", "<"),
              operator.le: ("ordered", "<="), operator.gt: ("ordered", ">"), operator.ge: ("ordered", ">=")}


def _register_compare(pyop):
    kind, symbol = _FLOAT_CMP[pyop]

    @type_callable(pyop)
    def _typer(context):
        def typer(a, b):
            if isinstance(a, Vec) and a == b and not _is_mask(a):
                return Vec(types.boolean, a.count)

        return typer

    @lower_builtin(pyop, Vec, Vec)
    def _lower(context, builder, sig, args):
        a = sig.args[0]
        if _is_float(a):
            fn = builder.fcmp_ordered if kind == "ordered" else builder.fcmp_unordered
        else:
            fn = builder.icmp_signed if a.dtype.signed else builder.icmp_unsigned
        return fn(symbol, args[0], args[1])


for _op in _FLOAT_CMP:
    _register_compare(_op)


@intrinsic
def where(typingctx, mask, a, b):
    """Lane by lane: a where mask, else b."""
    if not (_is_mask(mask) and isinstance(a, Vec) and a == b and a.count == mask.count):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])

    return a(mask, a, b), codegen


@intrinsic
def any_lane(typingctx, mask):
    """Whether some lane of the mask is set (one vote over the vector)."""
    if not _is_mask(mask):
        return None

    def codegen(context, builder, sig, args):
        bits = builder.bitcast(args[0], ir.IntType(mask.count))
        return builder.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(mask.count), 0))

    return types.boolean(mask), codegen


@intrinsic
def mask_bits(typingctx, mask):
    """The lanes of a mask as the bits of an integer: bit k is lane k."""
    if not _is_mask(mask):
        return None

    def codegen(context, builder, sig, args):
        bits = builder.bitcast(args[0], ir.IntType(mask.count))
        return builder.zext(bits, ir.IntType(64))

    return types.uint64(mask), codegen


@intrinsic
def mask_of(typingctx, like, value):
    """A mask with ``value`` (a bool) in every lane, as wide as the vector ``like``."""
    if not (isinstance(like, Vec) and isinstance(value, types.Boolean)):
        return None
    mty = Vec(types.boolean, like.count)

    def codegen(context, builder, sig, args):
        bit = context.cast(builder, args[1], sig.args[1], types.boolean)
        vec = ir.Constant(ir.VectorType(ir.IntType(1), like.count), ir.Undefined)
        for k in range(like.count):
            vec = builder.insert_element(vec, bit, ir.Constant(ir.IntType(32), k))
        return vec

    return mty(like, value), codegen
