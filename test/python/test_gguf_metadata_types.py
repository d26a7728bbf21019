"""Every GGUF metadata value type (nested arrays included), written by the project's own
tools/gguf/gguf_writer.py in v2 and v3, read back through cv2.dnn.GGUFFile."""
import sys

import numpy as np
import pytest

import cv2 as cv
from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "tools" / "gguf"))
from gguf_writer import GGUFWriter, TypedArray, ValueType  # noqa: E402


@pytest.mark.parametrize("version", [2, 3])
def test_every_value_type_round_trips(tmp_path, version):
    w = GGUFWriter(version=version, alignment=64)
    scalars = [("u8", ValueType.UINT8, 255, "uint8"), ("i8", ValueType.INT8, -128, "int8"),
               ("u16", ValueType.UINT16, 65535, "uint16"), ("i16", ValueType.INT16, -32768, "int16"),
               ("u32", ValueType.UINT32, 4294967295, "uint32"), ("i32", ValueType.INT32, -2147483648, "int32"),
               ("u64", ValueType.UINT64, 2**53, "uint64"), ("i64", ValueType.INT64, -(2**53), "int64"),
               ("f32", ValueType.FLOAT32, 0.5, "float32"), ("f64", ValueType.FLOAT64, 1e300, "float64")]
    for key, vtype, value, _ in scalars:
        w.add_kv(key, value, vtype)
    w.add_bool("flag", True)
    w.add_string("text", "héllo\nwörld ✓")
    w.add_array("strings", ["a", "", "ü" * 100], ValueType.STRING)
    w.add_array("floats", [1.5, -2.25, 0.0], ValueType.FLOAT32)
    w.add_array("bools", [True, False], ValueType.BOOL)
    w.add_array("empty", [], ValueType.INT32)
    w.add_array("nested", [TypedArray(ValueType.INT32, [1, 2]), TypedArray(ValueType.INT32, [3])], ValueType.ARRAY)
    w.add_tensor("t", [64, 2], "F32", np.arange(128, dtype=np.float32).reshape(2, 64))
    path = tmp_path / f"types_v{version}.gguf"
    w.write(str(path))

    f = cv.dnn.GGUFFile.open(str(path))
    assert f.getVersion() == version
    for key, _, value, type_name in scalars:
        assert f.getMetadataType(key) == type_name
        assert f.getNumber(key) == pytest.approx(value)
    assert f.getBool("flag") is True
    assert f.getString("text") == "héllo\nwörld ✓"
    assert list(f.getStringArray("strings")) == ["a", "", "ü" * 100]
    assert list(f.getNumberArray("floats")) == [1.5, -2.25, 0.0]
    assert list(f.getNumberArray("bools")) == [1.0, 0.0]
    assert f.getMetadataType("empty") == "array[int32]" and len(f.getNumberArray("empty")) == 0
    assert f.getMetadataType("nested") == "array[array[int32]]"
    assert f.getTensorType("t") == "F32" and list(f.getTensorShape("t")) == [64, 2]
    with pytest.raises(cv.error, match="not a string"):
        f.getString("u8")
    with pytest.raises(cv.error, match="not an array of strings"):
        f.getStringArray("floats")
