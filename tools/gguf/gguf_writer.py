#!/usr/bin/env python3
"""Small GGUF (v2/v3) writer and reader.

Written from the GGUF format description (ggml docs/gguf.md).  File layout, all little endian:

    magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
    n_kv x       (string key, u32 value_type, value)
    n_tensors x  (string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset)
    padding to `alignment`
    tensor data, each tensor at data_start + offset, offset a multiple of `alignment`,
    zero padding after every tensor (including the last one) up to `alignment`.

A string is u64 byte length + UTF-8 bytes (no terminator).  An array is u32 element type +
u64 count + elements; elements may themselves be arrays (nested).  v2 and v3 share this
layout (v1, with 32-bit counts, is not supported); v3 only adds the big-endian convention,
which this module does not produce.

Dimensions are in ggml order: ne[0] is the contiguous (fastest varying) dimension, so a
PyTorch/NumPy weight of shape [out, in] is described with dims [in, out].  Numpy arrays passed
as tensor data are taken in C order, i.e. `ggml_dims == reversed(array.shape)`.

Only numpy is needed (and only for array data / the reader's convenience).
"""
from __future__ import annotations

import enum
import mmap
import struct
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Union

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_DEFAULT_ALIGNMENT = 32


class ValueType(enum.IntEnum):
    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


# struct codes of the fixed-size scalar value types
_SCALAR_FMT = {
    ValueType.UINT8: "B", ValueType.INT8: "b", ValueType.UINT16: "H", ValueType.INT16: "h",
    ValueType.UINT32: "I", ValueType.INT32: "i", ValueType.FLOAT32: "f", ValueType.BOOL: "?",
    ValueType.UINT64: "Q", ValueType.INT64: "q", ValueType.FLOAT64: "d",
}
_SCALAR_NP = {
    ValueType.UINT8: "<u1", ValueType.INT8: "<i1", ValueType.UINT16: "<u2", ValueType.INT16: "<i2",
    ValueType.UINT32: "<u4", ValueType.INT32: "<i4", ValueType.FLOAT32: "<f4", ValueType.BOOL: "<u1",
    ValueType.UINT64: "<u8", ValueType.INT64: "<i8", ValueType.FLOAT64: "<f8",
}


class GGMLType(enum.IntEnum):
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    BF16 = 30
    MXFP4 = 39


# ggml type -> (elements per block, bytes per block)
BLOCK_LAYOUT = {
    GGMLType.F32: (1, 4), GGMLType.F16: (1, 2), GGMLType.BF16: (1, 2), GGMLType.F64: (1, 8),
    GGMLType.I8: (1, 1), GGMLType.I16: (1, 2), GGMLType.I32: (1, 4), GGMLType.I64: (1, 8),
    GGMLType.Q4_0: (32, 18), GGMLType.Q4_1: (32, 20), GGMLType.Q5_0: (32, 22),
    GGMLType.Q5_1: (32, 24), GGMLType.Q8_0: (32, 34), GGMLType.Q8_1: (32, 36),
    GGMLType.Q2_K: (256, 84), GGMLType.Q3_K: (256, 110), GGMLType.Q4_K: (256, 144),
    GGMLType.Q5_K: (256, 176), GGMLType.Q6_K: (256, 210), GGMLType.Q8_K: (256, 292),
    GGMLType.MXFP4: (32, 17),
}

_NP_TO_GGML = {np.dtype("float32"): GGMLType.F32, np.dtype("float16"): GGMLType.F16,
               np.dtype("float64"): GGMLType.F64, np.dtype("int8"): GGMLType.I8,
               np.dtype("int16"): GGMLType.I16, np.dtype("int32"): GGMLType.I32,
               np.dtype("int64"): GGMLType.I64}


def ggml_type(t: Union[int, str, GGMLType]) -> GGMLType:
    """GGMLType from an id, a name ("Q4_K", case-insensitive) or a GGMLType."""
    if isinstance(t, str):
        return GGMLType[t.upper()]
    return GGMLType(int(t))


def tensor_nbytes(dims: Sequence[int], gtype: Union[int, str, GGMLType]) -> int:
    """Bytes of a tensor with ggml dims (ne[0] first).  ne[0] must be a multiple of the block size."""
    gtype = ggml_type(gtype)
    blk, bsz = BLOCK_LAYOUT[gtype]
    dims = [int(d) for d in dims]
    if not dims:
        dims = [1]
    if dims[0] % blk:
        raise ValueError("ne[0]=%d is not a multiple of the %s block size %d" % (dims[0], gtype.name, blk))
    n = 1
    for d in dims[1:]:
        n *= d
    return dims[0] // blk * bsz * n


def pad_to(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


@dataclass
class TypedArray:
    """A GGUF array with an explicit element type.  For nested arrays use
    elem_type=ValueType.ARRAY and items = a list of TypedArray."""
    elem_type: ValueType
    items: Any  # list, tuple or numpy array


@dataclass
class KV:
    key: str
    vtype: ValueType
    value: Any  # scalar, str, or TypedArray when vtype == ARRAY


def _infer_scalar_type(v: Any) -> ValueType:
    if isinstance(v, (bool, np.bool_)):
        return ValueType.BOOL
    if isinstance(v, np.generic):
        m = {np.dtype("u1"): ValueType.UINT8, np.dtype("i1"): ValueType.INT8,
             np.dtype("u2"): ValueType.UINT16, np.dtype("i2"): ValueType.INT16,
             np.dtype("u4"): ValueType.UINT32, np.dtype("i4"): ValueType.INT32,
             np.dtype("u8"): ValueType.UINT64, np.dtype("i8"): ValueType.INT64,
             np.dtype("f4"): ValueType.FLOAT32, np.dtype("f8"): ValueType.FLOAT64}
        return m[v.dtype]
    if isinstance(v, int):
        # GGUF readers such as llama.cpp check key types strictly; non-negative ints default
        # to UINT32 (what llama.cpp's hparams use), negative ones to INT32.
        if 0 <= v < 2 ** 32:
            return ValueType.UINT32
        if -2 ** 31 <= v < 0:
            return ValueType.INT32
        return ValueType.UINT64 if v > 0 else ValueType.INT64
    if isinstance(v, float):
        return ValueType.FLOAT32
    if isinstance(v, str):
        return ValueType.STRING
    if isinstance(v, (list, tuple, np.ndarray, TypedArray)):
        return ValueType.ARRAY
    raise TypeError("cannot infer a GGUF type for %r" % (v,))


def _to_typed_array(v: Any, elem_type: Optional[ValueType] = None) -> TypedArray:
    if isinstance(v, TypedArray):
        return v
    if elem_type is None:
        if isinstance(v, np.ndarray):
            elem_type = ValueType.BOOL if v.dtype == np.bool_ else _infer_scalar_type(v.dtype.type(0))
        elif len(v) == 0:
            elem_type = ValueType.INT32
        else:
            elem_type = _infer_scalar_type(v[0])
            if elem_type in (ValueType.UINT32, ValueType.INT32) and any(
                    isinstance(x, int) and x < 0 for x in v):
                elem_type = ValueType.INT32
            if elem_type == ValueType.FLOAT32 or (
                    elem_type in (ValueType.UINT32, ValueType.INT32) and any(isinstance(x, float) for x in v)):
                elem_type = ValueType.FLOAT32
    elem_type = ValueType(elem_type)
    if elem_type == ValueType.ARRAY:
        v = [_to_typed_array(x) for x in v]
    return TypedArray(elem_type, v)


class _Out:
    """Byte sink with a running position."""

    def __init__(self, f):
        self.f, self.pos = f, 0

    def write(self, b: bytes):
        self.f.write(b)
        self.pos += len(b)

    def pad(self, alignment: int):
        n = pad_to(self.pos, alignment) - self.pos
        if n:
            self.write(b"\0" * n)


def _enc_string(s: Union[str, bytes]) -> bytes:
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _enc_value(vtype: ValueType, v: Any) -> bytes:
    vtype = ValueType(vtype)
    if vtype == ValueType.STRING:
        return _enc_string(v)
    if vtype == ValueType.ARRAY:
        arr = _to_typed_array(v)
        et = ValueType(arr.elem_type)
        items = arr.items
        head = struct.pack("<IQ", int(et), len(items))
        if et == ValueType.STRING:
            return head + b"".join(_enc_string(s) for s in items)
        if et == ValueType.ARRAY:
            return head + b"".join(_enc_value(ValueType.ARRAY, x) for x in items)
        a = np.asarray(items)
        if et == ValueType.BOOL:
            a = a.astype(bool)
        elif et in (ValueType.FLOAT32, ValueType.FLOAT64):
            pass
        elif a.size and (a.min() < np.iinfo(_SCALAR_NP[et]).min or a.max() > np.iinfo(_SCALAR_NP[et]).max):
            raise ValueError("array value out of range for %s" % et.name)
        return head + a.astype(_SCALAR_NP[et]).tobytes()
    fmt = _SCALAR_FMT[vtype]
    if vtype == ValueType.BOOL:
        v = bool(v)
    return struct.pack("<" + fmt, v)


@dataclass
class TensorInfo:
    name: str
    dims: List[int]            # ggml order, ne[0] first
    gtype: GGMLType
    nbytes: int
    data: Any                  # bytes / numpy array / callable returning either
    offset: int = 0            # relative to the data section


class GGUFWriter:
    """Collect metadata and tensors, then write().

        w = GGUFWriter(version=3, alignment=32)
        w.add_string("general.architecture", "llama")
        w.add_uint32("llama.block_count", 2)
        w.add_array("tokenizer.ggml.tokens", ["<unk>", "<s>"], ValueType.STRING)
        w.add_tensor("token_embd.weight", [n_embd, n_vocab], "F32", np_array_of_shape_vocab_x_embd)
        w.add_tensor("blk.0.attn_q.weight", [256, 256], "Q4_K", raw_block_bytes)
        w.add_tensor("big.weight", dims, "Q8_0", lambda: produce_bytes())   # produced at write time
        w.write("model.gguf")

    Key order and tensor order are kept as added.  `general.alignment` is written (UINT32) when
    alignment != 32 or write_alignment_key=True; adding the key explicitly also sets the alignment.
    """

    def __init__(self, version: int = 3, alignment: int = GGUF_DEFAULT_ALIGNMENT,
                 write_alignment_key: bool = False):
        if version not in (2, 3):
            raise ValueError("only GGUF v2 and v3 are supported")
        if alignment <= 0 or alignment & (alignment - 1):
            raise ValueError("alignment must be a power of two")
        self.version = version
        self.alignment = alignment
        self.kvs: List[KV] = []
        self.tensors: List[TensorInfo] = []
        self._keys = set()
        self._names = set()
        if alignment != GGUF_DEFAULT_ALIGNMENT or write_alignment_key:
            self.add_uint32("general.alignment", alignment)

    # ---- metadata -------------------------------------------------------------------------
    def add_kv(self, key: str, value: Any, vtype: Optional[Union[int, ValueType]] = None,
               elem_type: Optional[Union[int, ValueType]] = None) -> None:
        """Add a key; vtype inferred when None (int -> UINT32 if non-negative else INT32,
        float -> FLOAT32, bool -> BOOL, str -> STRING, list/ndarray -> ARRAY)."""
        if key in self._keys:
            raise KeyError("duplicate key %s" % key)
        vtype = _infer_scalar_type(value) if vtype is None else ValueType(vtype)
        if vtype == ValueType.ARRAY:
            value = _to_typed_array(value, None if elem_type is None else ValueType(elem_type))
        if key == "general.alignment":
            if vtype != ValueType.UINT32:
                raise TypeError("general.alignment must be UINT32")
            if value <= 0 or value & (value - 1):
                raise ValueError("alignment must be a power of two")
            self.alignment = int(value)
        self._keys.add(key)
        self.kvs.append(KV(key, vtype, value))

    def add_uint8(self, k, v): self.add_kv(k, v, ValueType.UINT8)
    def add_int8(self, k, v): self.add_kv(k, v, ValueType.INT8)
    def add_uint16(self, k, v): self.add_kv(k, v, ValueType.UINT16)
    def add_int16(self, k, v): self.add_kv(k, v, ValueType.INT16)
    def add_uint32(self, k, v): self.add_kv(k, v, ValueType.UINT32)
    def add_int32(self, k, v): self.add_kv(k, v, ValueType.INT32)
    def add_uint64(self, k, v): self.add_kv(k, v, ValueType.UINT64)
    def add_int64(self, k, v): self.add_kv(k, v, ValueType.INT64)
    def add_float32(self, k, v): self.add_kv(k, v, ValueType.FLOAT32)
    def add_float64(self, k, v): self.add_kv(k, v, ValueType.FLOAT64)
    def add_bool(self, k, v): self.add_kv(k, v, ValueType.BOOL)
    def add_string(self, k, v): self.add_kv(k, v, ValueType.STRING)

    def add_array(self, key: str, items: Any, elem_type: Optional[Union[int, ValueType]] = None) -> None:
        """Array of `elem_type`; for nested arrays pass elem_type=ARRAY and a list of TypedArray
        (or lists, whose element types are then inferred)."""
        self.add_kv(key, items, ValueType.ARRAY, elem_type)

    # ---- tensors --------------------------------------------------------------------------
    def add_tensor(self, name: str, dims: Optional[Sequence[int]], gtype: Union[int, str, GGMLType, None],
                   data: Any) -> None:
        """dims in ggml order (ne[0] first).  data: bytes-like of exactly the tensor's size, a numpy
        array (its raw C-order bytes are written; for F32/F16/F64/I* arrays dims and gtype may be
        None and are taken from the array), or a zero-argument callable returning one of those,
        called during write() (lets big models be produced tensor by tensor)."""
        if name in self._names:
            raise KeyError("duplicate tensor %s" % name)
        if len(name.encode("utf-8")) >= 64:
            raise ValueError("tensor name too long for ggml (max 63 bytes): %s" % name)
        if gtype is None or dims is None:
            if not isinstance(data, np.ndarray):
                raise ValueError("dims/gtype may only be omitted for numpy data")
            if gtype is None:
                gtype = _NP_TO_GGML[data.dtype]
            if dims is None:
                dims = list(reversed(data.shape)) or [1]
        gtype = ggml_type(gtype)
        dims = [int(d) for d in dims]
        if not 1 <= len(dims) <= 4:
            raise ValueError("ggml tensors have 1..4 dims")
        nbytes = tensor_nbytes(dims, gtype)
        if not callable(data):
            got = _as_bytes(data)
            if len(got) != nbytes:
                raise ValueError("%s: %d data bytes, expected %d for %s %s" % (name, len(got), nbytes, gtype.name, dims))
            data = got
        self._names.add(name)
        self.tensors.append(TensorInfo(name, dims, gtype, nbytes, data))

    # ---- output ---------------------------------------------------------------------------
    def _header_bytes(self) -> bytes:
        parts = [GGUF_MAGIC, struct.pack("<IQQ", self.version, len(self.tensors), len(self.kvs))]
        for kv in self.kvs:
            parts.append(_enc_string(kv.key))
            parts.append(struct.pack("<I", int(kv.vtype)))
            parts.append(_enc_value(kv.vtype, kv.value))
        off = 0
        for t in self.tensors:
            t.offset = off
            parts.append(_enc_string(t.name))
            parts.append(struct.pack("<I", len(t.dims)))
            parts.append(struct.pack("<%dQ" % len(t.dims), *t.dims))
            parts.append(struct.pack("<IQ", int(t.gtype), off))
            off += pad_to(t.nbytes, self.alignment)
        return b"".join(parts)

    def write(self, path_or_file) -> int:
        """Write the file; returns its size in bytes."""
        own = isinstance(path_or_file, (str, bytes)) or hasattr(path_or_file, "__fspath__")
        f = open(path_or_file, "wb") if own else path_or_file
        try:
            out = _Out(f)
            out.write(self._header_bytes())
            out.pad(self.alignment)
            data_start = out.pos
            for t in self.tensors:
                assert out.pos - data_start == t.offset
                b = t.data() if callable(t.data) else t.data
                b = _as_bytes(b)
                if len(b) != t.nbytes:
                    raise ValueError("%s: produced %d bytes, expected %d" % (t.name, len(b), t.nbytes))
                out.write(b)
                out.pad(self.alignment)
            return out.pos
        finally:
            if own:
                f.close()


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, np.ndarray):
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
        return np.ascontiguousarray(data).tobytes()
    return bytes(data)


# ==== reader =================================================================================

@dataclass
class ReadTensor:
    name: str
    dims: List[int]
    gtype: GGMLType
    offset: int          # relative to data_offset
    nbytes: int


@dataclass
class GGUFFile:
    path: str
    version: int
    alignment: int
    kvs: List[KV]
    tensors: List[ReadTensor]
    data_offset: int
    size: int
    _buf: Any = field(default=None, repr=False)

    def kv(self, key: str, default: Any = None) -> Any:
        """Plain value of a key (arrays as list / numpy array)."""
        for kv in self.kvs:
            if kv.key == key:
                return kv.value.items if kv.vtype == ValueType.ARRAY else kv.value
        return default

    def get_kv(self, key: str) -> Optional[KV]:
        for kv in self.kvs:
            if kv.key == key:
                return kv
        return None

    def tensor(self, name: str) -> ReadTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def tensor_bytes(self, name: str) -> np.ndarray:
        """Raw bytes of a tensor as a read-only uint8 array (memory mapped)."""
        t = self.tensor(name)
        start = self.data_offset + t.offset
        return np.frombuffer(self._buf, dtype=np.uint8, count=t.nbytes, offset=start)


class _Reader:
    def __init__(self, buf):
        self.b, self.o = buf, 0

    def u(self, fmt: str):
        v = struct.unpack_from("<" + fmt, self.b, self.o)
        self.o += struct.calcsize("<" + fmt)
        return v[0]

    def s(self) -> str:
        n = self.u("Q")
        v = bytes(self.b[self.o:self.o + n])
        self.o += n
        return v.decode("utf-8", "surrogateescape")

    def value(self, vt: ValueType):
        vt = ValueType(vt)
        if vt == ValueType.STRING:
            return self.s()
        if vt == ValueType.ARRAY:
            et = ValueType(self.u("I"))
            n = self.u("Q")
            if et == ValueType.STRING:
                items = [self.s() for _ in range(n)]
            elif et == ValueType.ARRAY:
                items = [self.value(ValueType.ARRAY) for _ in range(n)]
            else:
                dt = np.dtype(_SCALAR_NP[et])
                items = np.frombuffer(self.b, dtype=dt, count=n, offset=self.o).copy()
                if et == ValueType.BOOL:
                    items = items.astype(bool)
                self.o += n * dt.itemsize
            return TypedArray(et, items)
        v = self.u(_SCALAR_FMT[vt])
        return v


def read_gguf(path: str) -> GGUFFile:
    """Parse a GGUF v2/v3 file (little endian).  Tensor data stays memory mapped."""
    with open(path, "rb") as f:
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    r = _Reader(buf)
    if bytes(buf[:4]) != GGUF_MAGIC:
        raise ValueError("%s: not a GGUF file" % path)
    r.o = 4
    version = r.u("I")
    if version not in (2, 3):
        raise ValueError("%s: unsupported GGUF version %d" % (path, version))
    n_tensors, n_kv = r.u("Q"), r.u("Q")
    kvs = []
    alignment = GGUF_DEFAULT_ALIGNMENT
    for _ in range(n_kv):
        key = r.s()
        vt = ValueType(r.u("I"))
        val = r.value(vt)
        if key == "general.alignment":
            alignment = int(val)
        kvs.append(KV(key, vt, val))
    tensors = []
    for _ in range(n_tensors):
        name = r.s()
        nd = r.u("I")
        dims = [r.u("Q") for _ in range(nd)]
        gt = GGMLType(r.u("I"))
        off = r.u("Q")
        tensors.append(ReadTensor(name, dims, gt, off, tensor_nbytes(dims, gt)))
    data_offset = pad_to(r.o, alignment)
    for t in tensors:
        if t.offset % alignment or data_offset + t.offset + t.nbytes > len(buf):
            raise ValueError("%s: tensor %s out of bounds or misaligned" % (path, t.name))
    return GGUFFile(path, version, alignment, kvs, tensors, data_offset, len(buf), buf)


def copy_kv(dst: GGUFWriter, kv: KV) -> None:
    """Copy a key read by read_gguf() into a writer, keeping its exact types."""
    dst.add_kv(kv.key, kv.value, kv.vtype)


if __name__ == "__main__":
    import sys
    g = read_gguf(sys.argv[1])
    print("GGUF v%d, %d kv, %d tensors, alignment %d, data at %d, size %d"
          % (g.version, len(g.kvs), len(g.tensors), g.alignment, g.data_offset, g.size))
    for kv in g.kvs:
        v = kv.value
        if kv.vtype == ValueType.ARRAY:
            v = "%s[%d] %s" % (ValueType(v.elem_type).name, len(v.items), list(v.items[:6]))
        print("  %-45s %-8s %s" % (kv.key, kv.vtype.name, v))
    for t in g.tensors:
        print("  %-40s %-5s %s" % (t.name, t.gtype.name, t.dims))
