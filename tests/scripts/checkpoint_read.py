"""A trident checkpoint's global tensors, assembled from the slices its index.json lists, so
that a test can compare checkpoints saved in different layouts without trusting trident to
read them back.

    from checkpoint_read import global_tensors
"""
import json
import os

import numpy as np

from safetensors_read import read_safetensors

_DTYPES = {"F64": np.float64, "F32": np.float32}


def global_tensors(step_dir):
    """name -> float64 numpy array of every tensor (weights and optimizer states) of the
    checkpoint directory step_dir; each element must be covered by a slice."""
    with open(os.path.join(step_dir, "index.json")) as f:
        index = json.load(f)
    files, tensors = {}, {}
    for name, info in index["tensors"].items():
        whole = np.full(info["shape"], np.nan)
        for s in info["slices"]:
            if s["file"] not in files:
                files[s["file"]] = read_safetensors(os.path.join(step_dir, s["file"]))
            dtype, shape, raw = files[s["file"]][s["key"]]
            piece = np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<"))
            box = tuple(slice(o, o + n) for o, n in zip(s["offsets"], s["shape"]))
            whole[box] = piece.reshape(shape)
        if np.isnan(whole).any():
            raise ValueError(f"{step_dir}: the slices of {name} leave elements uncovered")
        tensors[name] = whole
    return tensors
