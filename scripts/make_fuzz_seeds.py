#!/usr/bin/env python3
"""Writes the hostile inputs of issue 15 / issue 12 as committed files:

  tests/data/fuzz/*.safetensors        safetensors files the reader must refuse (or accept)
  tests/data/convert/<case>.json/.safetensors
                                       model file pairs load_model must refuse cheaply
  tests/fuzz/corpus/{safetensors,json,model}/
                                       the libFuzzer seed corpus: the files above, plus valid
                                       ones (model seeds as 4-byte LE JSON length, JSON, weights)

The unit tests (tests/tensor/test_Safetensors.cpp, tests/convert/test_UntrustedModel.cpp)
read the files; `scripts/dev fuzz` starts from the corpus. Deterministic: rerunning rewrites
the same bytes. No dependencies beyond the standard library.
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_FUZZ = os.path.join(ROOT, "tests", "data", "fuzz")
DATA_CONVERT = os.path.join(ROOT, "tests", "data", "convert")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def safetensors(entries, payload=b"", metadata=None):
    """entries: {name: (dtype, shape, [begin, end])}; written in the given order."""
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, offsets) in entries.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": offsets}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + payload


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def model(module):
    return json.dumps({"format": "cudnn-nn model", "version": 1, "module": module}, indent=2).encode() + b"\n"


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    st = {
        # [2^31 x 2^31] float32: 2^64 bytes, which wraps to 0 in 64 bits
        "shape_overflow": safetensors({"w": ("F32", [2**31, 2**31], [0, 0])}),
        # 2^62 elements of 8 bytes: the byte count overflows int64
        "bytes_overflow": safetensors({"w": ("F64", [2**62], [0, 0])}),
        # an empty tensor whose other sizes multiply past int64 (its strides would overflow)
        "zero_size_huge_dims": safetensors({"w": ("F32", [0, 2**62, 2**62], [0, 0])}),
        "negative_size": safetensors({"w": ("F32", [-1], [0, 0])}),
        # a and c overlap; the empty b sorts between them and used to hide the overlap
        "overlap_hidden_by_empty": safetensors(
            {"a": ("F32", [4], [0, 16]), "b": ("F32", [0], [8, 8]), "c": ("F32", [2], [8, 16])}, f32(1, 2, 3, 4)),
        # one range inside a longer one, with a third after both
        "overlap_nested": safetensors(
            {"a": ("F32", [4], [0, 16]), "b": ("F32", [1], [4, 8]), "c": ("F32", [1], [16, 20])}, f32(1, 2, 3, 4, 5)),
        "offsets_past_end": safetensors({"w": ("F32", [2], [0, 8])}, f32(1)),
        "valid": safetensors({"bias": ("F32", [2], [0, 8]), "empty": ("F64", [0, 3], [8, 8]),
                              "weight": ("F32", [2, 2], [8, 24])}, f32(0.5, -1, 1, 2, 3, 4),
                             {"format": "cudnn-nn model"}),
    }
    for name, data in st.items():
        write(os.path.join(DATA_FUZZ, name + ".safetensors"), data)
        write(os.path.join(CORPUS, "safetensors", name + ".safetensors"), data)

    lin = {"type": "nn.Linear", "training": True, "config": {"inputSize": 2, "outputSize": 2, "bias": True}}
    small_weights = safetensors({"0.bias": ("F32", [2], [0, 8]), "0.weight": ("F32", [2, 2], [8, 24])},
                                f32(0.5, -1, 1, 2, 3, 4), {"format": "cudnn-nn model", "version": "1"})
    tiny_weights = safetensors({"weight": ("F32", [1], [0, 4])}, f32(1), {"format": "cudnn-nn model"})
    conv_big = {"type": "nn.SpatialConvolution", "training": True,
                "config": {"nInputPlane": 64, "nOutputPlane": 64, "kW": 256, "kH": 256}}
    cases = {
        # a valid pair: Sequential { Linear(2 -> 2) }
        "valid": (model({"type": "nn.Sequential", "training": True, "config": {}, "children": [lin]}),
                  small_weights),
        # Linear of 2^31 x 2^31: the weight's byte size overflows
        "linear_overflow": (model({"type": "nn.Linear", "config": {"inputSize": 2**31, "outputSize": 2**31}}),
                            tiny_weights),
        # a 1 GiB kernel first, a misspelt key after it: refused for the key, before building
        "big_kernel_misspelt_key": (
            model({"type": "nn.Sequential", "config": {}, "children": [
                conv_big, {"type": "nn.ReLU", "config": {"inplace": False, "inplcae": True}}]}),
            tiny_weights),
        # the same kernel, valid, beside a 4-byte weights file: refused by the allocation bound
        "big_kernel": (model({"type": "nn.Sequential", "config": {}, "children": [conv_big]}), tiny_weights),
        # a misspelt key in a convolution's own config
        "conv_misspelt_key": (
            model({"type": "nn.SpatialConvolution",
                   "config": {"nInputPlane": 1, "nOutputPlane": 1, "kW": 3, "kH": 3, "padw": 1}}),
            tiny_weights),
        # a kernel whose output-size arithmetic overflows: loads (1 x 1 weights are few), then
        # forward must refuse the geometry instead of wrapping
        "conv_huge_stride": (
            model({"type": "nn.SpatialConvolution",
                   "config": {"nInputPlane": 1, "nOutputPlane": 1, "kW": 3, "kH": 1, "dW": 2**62, "dH": 2**62,
                              "padW": 0, "padH": 0, "dilationW": 2**62, "dilationH": 1, "bias": False}}),
            safetensors({"weight": ("F32", [1, 1, 1, 3], [0, 12])}, f32(1, 2, 3))),
        # weights of the right shapes but an integer dtype
        "int_weights": (model(lin),
                        safetensors({"bias": ("I64", [2], [0, 16]), "weight": ("F32", [2, 2], [16, 32])},
                                    struct.pack("<2q", 1, 2) + f32(1, 2, 3, 4))),
    }
    for name, (doc, weights) in cases.items():
        write(os.path.join(DATA_CONVERT, name + ".json"), doc)
        write(os.path.join(DATA_CONVERT, name + ".safetensors"), weights)
        write(os.path.join(CORPUS, "json", name + ".json"), doc)
        write(os.path.join(CORPUS, "model", name), struct.pack("<I", len(doc)) + doc + weights)
    # JSON corner cases
    for name, text in {
        "deep": b"[" * 600 + b"]" * 600,
        "numbers": b'[0, -0, 1e308, 1e309, -1e-400, 9223372036854775807, 9223372036854775808, 0.1]',
        "strings": b'{"a\\u00e9\\ud83d\\ude00": "\\n\\t\\"", "": null}',
        "duplicate_keys": b'{"a": 1, "b": {"a": [2], "c": {}}, "a": 3}',
        "utf8": b'["\xc3\xa9", "\xf0\x9f\x98\x80", "\xed\xa0\x80", "\xff"]',
    }.items():
        write(os.path.join(CORPUS, "json", name + ".json"), text)


if __name__ == "__main__":
    main()
