"""Fashion-MNIST's IDX files for ktr's peer programs (jax_bf16_peer.py, torch_peer.py): numpy only, so each peer's
Python needs nothing beyond its framework. scripts/gpu-prepare.sh carries this file beside jax_bf16_peer.py."""
import gzip
import os
import struct

import numpy as np


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem + ".gz", stem):
        p = os.path.join(data_dir, name)
        if os.path.exists(p):
            return p
    raise FileNotFoundError(os.path.join(data_dir, stem))
