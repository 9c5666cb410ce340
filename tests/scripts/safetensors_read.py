"""The tests' one reader of safetensors files (trident's checkpoint slices, Hugging Face
exports), standard library only, so that a test compares the bytes trident wrote without
trusting trident to read them back.

    from safetensors_read import read_safetensors, float64_values
"""
import array
import json
import struct
import sys


def read_safetensors(path):
    """name -> (dtype, shape, raw little-endian bytes) of every tensor of the file at path."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]  # the JSON header's length
        header = json.loads(f.read(n))
        data = f.read()
    return {name: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]])
            for name, e in header.items() if name != "__metadata__"}


def float64_values(raw):
    """The values of an F64 tensor's raw bytes, as a flat array of Python floats."""
    values = array.array("d", raw)
    if sys.byteorder == "big":
        values.byteswap()  # safetensors is little-endian
    return values
