#!/usr/bin/env python3
"""Writes tests/data/npy/: small .npy and .npz files made by NumPy itself, for tests/tensor/test_Npy.cpp
(the values are formulas the test recomputes: arange-based)."""
import os
import sys

import numpy as np

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "npy")
os.makedirs(out, exist_ok=True)
a = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
np.save(os.path.join(out, "f32_3x4.npy"), a)
np.save(os.path.join(out, "f64_fortran_3x4.npy"), np.asfortranarray(a.astype(np.float64)))
np.save(os.path.join(out, "f16_5.npy"), (np.arange(5) - 2).astype(np.float16))
np.save(os.path.join(out, "i32_2x3.npy"), (np.arange(6, dtype=np.int32) - 3).reshape(2, 3))
np.save(os.path.join(out, "bool_4.npy"), np.array([True, False, True, True]))
np.save(os.path.join(out, "scalar.npy"), np.float64(2.5))
np.save(os.path.join(out, "big_endian.npy"), np.arange(3, dtype=">f4"))
# a state dict as np.savez writes it: keyword names are the keys
np.savez(os.path.join(out, "linear.npz"), **{"weight": a[:2, :3].astype(np.float32), "bias": np.array([1, -1], np.float32)})
np.savez_compressed(os.path.join(out, "compressed.npz"), x=a)
