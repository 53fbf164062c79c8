#!/usr/bin/env python3
"""Lists the GPU code a CUDA binary carries, from its .nv_fatbin section: one line per entry, e.g. "sm_90 cubin"
or "sm_90 ptx", without the CUDA toolkit's cuobjdump (which not every toolkit install has).
Standard library only; exit 1 if the binary has no .nv_fatbin section.   Usage: fatbin-archs.py BINARY

The section is a sequence of fat binaries (header: magic 0xBA55ED50, u16 version, u16 header size, u64 size), each
a sequence of entries (header: u16 kind (1 PTX, 2 cubin), u16 version, u32 header size, u64 payload size, ...,
u32 sm version at byte 28)."""
import struct
import sys


def section(path, name):
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        sys.exit(f"{path}: not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)
    names = header(shstrndx)
    for i in range(shnum):
        h = header(i)
        start = names[4] + h[0]
        if elf[start:elf.index(b"\0", start)].decode() == name:
            return elf[h[4]:h[4] + h[5]]
    return None


def entries(blob):
    pos = 0
    while pos + 16 <= len(blob):
        magic, _version, header_size, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != 0xBA55ED50:
            pos += 8  # alignment padding between fat binaries
            continue
        at, end = pos + header_size, pos + header_size + size
        while at + 32 <= end:
            kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", blob, at)
            sm, = struct.unpack_from("<I", blob, at + 28)
            yield ("ptx" if kind == 1 else "cubin" if kind == 2 else f"kind{kind}"), sm
            if entry_header == 0:
                break
            at += entry_header + payload
        pos = end


blob = section(sys.argv[1], ".nv_fatbin")
if blob is None:
    sys.exit(f"{sys.argv[1]}: no .nv_fatbin section (not a CUDA binary)")
counts = {}
for kind, sm in entries(blob):
    counts[(sm, kind)] = counts.get((sm, kind), 0) + 1
for (sm, kind), n in sorted(counts.items()):
    print(f"sm_{sm} {kind} ({n} entries)")
