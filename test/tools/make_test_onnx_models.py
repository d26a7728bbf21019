#!/usr/bin/python3
"""Writes the small ONNX models the C++ tests load, and a manifest describing them.

Usage: make_test_onnx_models.py OUTPUT_DIR

Made with Debian's python3-onnx (1.12, which predates opset 23: models are assembled with
onnx.helper and not passed through the checker, which would reject RMSNormalization).
Scale values follow test_scale_value() so that the C++ test can recompute them.
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper


def test_scale_value(j):
    """Deterministic scale values in [0.5, 1.5], exact in float32. Mirrored in test_rms_norm.cpp."""
    return 1.0 + ((j * 37) % 101 - 50) / 100.0


# (name, op_type, domain, opset, input_shape, axis, epsilon, scale_shape, scale_as_input, outputs)
CASES = [
    ("rmsnorm_last_axis", "RMSNormalization", "", 23, [2, 3, 17], None, None, [17], False, 1),
    ("rmsnorm_long_row", "RMSNormalization", "", 23, [1, 4, 4099], -1, 1e-6, [4099], False, 1),
    ("rmsnorm_two_axes", "RMSNormalization", "", 23, [2, 5, 6], 1, 0.1, [5, 6], False, 1),
    ("rmsnorm_suffix_scale", "RMSNormalization", "", 23, [2, 3, 8], -2, 1e-5, [8], False, 1),
    ("rmsnorm_scale_input", "RMSNormalization", "", 23, [3, 8], -1, 1e-5, [8], True, 1),
    ("simplified_ln", "SimplifiedLayerNormalization", "", 17, [2, 7, 64], -1, 1e-6, [64], False, 1),
    ("simplified_ln_ms_inv_std", "SimplifiedLayerNormalization", "com.microsoft", 17,
     [1, 3, 33], -1, 1e-5, [33], False, 2),
]


def make_case(out_dir, case):
    name, op, domain, opset, x_shape, axis, eps, scale_shape, scale_as_input, n_out = case
    scale = np.array([test_scale_value(j) for j in range(int(np.prod(scale_shape)))],
                     dtype=np.float32).reshape(scale_shape)
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    initializers = []
    if scale_as_input:
        inputs.append(helper.make_tensor_value_info("scale", TensorProto.FLOAT, scale_shape))
    else:
        initializers.append(helper.make_tensor("scale", TensorProto.FLOAT, scale_shape, scale.ravel()))
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if eps is not None:
        attrs["epsilon"] = eps
    out_names = ["Y", "inv_std_var"][:n_out]
    node = helper.make_node(op, ["X", "scale"], out_names, domain=domain or None, **attrs)
    rank = len(x_shape)
    a = (axis if axis is not None else -1) % rank
    inv_shape = x_shape[:a] + [1] * (rank - a)
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, x_shape)]
    if n_out > 1:
        outputs.append(helper.make_tensor_value_info("inv_std_var", TensorProto.FLOAT, inv_shape))
    graph = helper.make_graph([node], name, inputs, outputs, initializers)
    opsets = [helper.make_opsetid("", opset)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="opencv-dnn-llm tests")
    path = os.path.join(out_dir, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return {"file": name + ".onnx", "input_shape": x_shape, "axis": a,
            "epsilon": eps if eps is not None else 1e-5, "scale_size": int(scale.size),
            "scale_as_input": int(scale_as_input), "outputs": n_out}


def make_short_tensor_data(out_dir):
    """The input fuzz_onnx found (heap overflow in OpenCV's importer before patch 0007): an
    initializer whose dims claim 4096 floats but whose raw data holds 4."""
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [1], vals=b"\0\0\x80?", raw=True)
    scale.dims[0] = 4096  # after make_tensor, which would refuse the mismatch
    node = helper.make_node("SimplifiedLayerNormalization", ["X", "scale"], ["Y"])
    graph = helper.make_graph([node], "short_tensor_data",
                              [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4096])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4096])], [scale])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with open(os.path.join(out_dir, "fuzz_tensor_data_shorter_than_dims.onnx"), "wb") as f:
        f.write(model.SerializeToString())


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    make_short_tensor_data(out_dir)
    manifest = [make_case(out_dir, c) for c in CASES]
    with open(os.path.join(out_dir, "rms_norm_cases.json"), "w") as f:
        json.dump({"cases": manifest}, f, indent=1)


if __name__ == "__main__":
    main()
