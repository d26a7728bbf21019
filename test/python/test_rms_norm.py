"""RMSNorm from Python through cv2: ONNX models made here with python3-onnx, loaded with
cv2.dnn.readNet (from a file and from memory), against numpy in float64."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import cv2 as cv


def make_model(op, domain, opset, x_shape, scale, axis=None, epsilon=None):
    attrs = {}
    if axis is not None:
        attrs["axis"] = axis
    if epsilon is not None:
        attrs["epsilon"] = epsilon
    node = helper.make_node(op, ["X", "scale"], ["Y"], domain=domain or None, **attrs)
    graph = helper.make_graph(
        [node], "rmsnorm",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor("scale", TensorProto.FLOAT, list(scale.shape), scale.ravel())])
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def reference(x, scale, axis, eps):
    axes = tuple(range(axis % x.ndim, x.ndim))
    x64 = x.astype(np.float64)
    inv = 1.0 / np.sqrt(np.mean(x64 * x64, axis=axes, keepdims=True) + eps)
    return x64 * inv * scale.astype(np.float64)


# Ranks 2 and 4: cv2 turns a 3-D numpy array whose last dimension is small into a 2-D Mat with
# channels, as for images (token ids, the input of LLM nets, are 2-D).
CASES = [
    ("RMSNormalization", "", 23, (1, 2, 3, 17), -1, 1e-5),
    ("RMSNormalization", "", 23, (2, 4099), -1, 1e-6),
    ("RMSNormalization", "", 23, (1, 2, 5, 6), 2, 0.1),
    ("SimplifiedLayerNormalization", "", 17, (3, 64), -1, 1e-6),
    ("SimplifiedLayerNormalization", "com.microsoft", 17, (1, 1, 4, 33), -1, 1e-5),
]


@pytest.mark.parametrize("op,domain,opset,shape,axis,eps", CASES)
def test_onnx_rmsnorm_matches_float64(tmp_path, op, domain, opset, shape, axis, eps):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(0, 2, size=shape).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, size=shape[axis % len(shape):]).astype(np.float32)
    path = tmp_path / "model.onnx"
    path.write_bytes(make_model(op, domain, opset, list(shape), scale, axis, eps))

    net = cv.dnn.readNet(str(path))
    net.setInput(x)
    y = net.forward()
    assert y.shape == x.shape
    np.testing.assert_allclose(y, reference(x, scale, axis, eps), rtol=2e-5, atol=1e-6)


def test_onnx_rmsnorm_from_memory_with_default_attributes():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 9)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, size=(9,)).astype(np.float32)
    data = np.frombuffer(make_model("RMSNormalization", "", 23, [2, 9], scale), np.uint8)
    net = cv.dnn.readNetFromONNX(data)
    net.setInput(x)
    np.testing.assert_allclose(net.forward(), reference(x, scale, -1, 1e-5), rtol=2e-5, atol=1e-6)


def test_scale_of_wrong_length_is_a_cv_error(tmp_path):
    scale = np.ones((5,), np.float32)
    path = tmp_path / "bad.onnx"
    path.write_bytes(make_model("RMSNormalization", "", 23, [2, 6], scale))
    with pytest.raises(cv.error, match="RMSNorm: scale has 5 elements"):
        net = cv.dnn.readNet(str(path))  # the importer checks shapes already
        net.setInput(np.ones((2, 6), np.float32))
        net.forward()
