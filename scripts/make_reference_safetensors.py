"""Writes tests/data/reference.safetensors with the reference `safetensors` package
(pip install safetensors numpy), so the C++ reader is tested on bytes another
implementation wrote. The expected values are simple formulas the test recomputes."""
import numpy as np
from safetensors import TensorSpec, serialize


def bf16_bits(values):
    f = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (f + 0x7FFF + ((f >> 16) & 1)) >> 16  # round to nearest even
    return rounded.astype(np.uint16)


keep_alive = []


def entry(dtype, shape, array):
    array = np.ascontiguousarray(array)
    keep_alive.append(array)
    return TensorSpec(dtype=dtype, shape=tuple(shape), data_ptr=array.ctypes.data, data_len=array.nbytes)


a = np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5
tensors = {
    "f32": entry("float32", a.shape, a),
    "f64": entry("float64", (4,), np.arange(4, dtype=np.float64) - 1.5),
    "f16": entry("float16", (3,), np.array([1.0, -2.5, 65504.0], dtype=np.float16)),
    "bf16": entry("bfloat16", (2, 2), bf16_bits([1.0, -0.5, 3.140625, 256.0])),
    "i64": entry("int64", (3,), np.array([-1, 0, 1 << 40], dtype=np.int64)),
    "u8": entry("uint8", (5,), np.array([0, 1, 2, 254, 255], dtype=np.uint8)),
    "scalar": entry("float32", (), np.array(7.25, dtype=np.float32)),
    "empty": entry("float32", (0, 3), np.zeros((0, 3), np.float32)),
}
with open("tests/data/reference.safetensors", "wb") as f:
    f.write(serialize(tensors, {"format": "pt", "note": "written by the reference safetensors package"}))
