"""The NVRTC layer's disk cache (templates/apply/layer/rtc_cache.h.j2) in Python: its hash, key
and entry format, for the tests that check what the layer computes and writes."""

from __future__ import annotations

import os
import posixpath
import struct

_M = (1 << 64) - 1
FORMAT = 3
MAGIC = b"RTCC"


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M
    return z ^ (z >> 31)


def hash128(data: bytes) -> str:
    a, b = 0x243F6A8885A308D3 ^ len(data), 0x13198A2E03707344
    padded = data + b"\0" * (-len(data) % 8)
    for (w,) in struct.iter_unpack("<Q", padded):
        a = (_rotl(a ^ w, 27) * 0x9E3779B97F4A7C15) & _M
        b = (_rotl((b + w) & _M, 31) * 0xC2B2AE3D27D4EB4F) & _M
    return f"{_mix(a ^ _rotl(b, 17)):016x}{_mix((b + a) & _M):016x}"


def put(field: bytes | str) -> bytes:
    raw = field.encode() if isinstance(field, str) else field
    return struct.pack("<Q", len(raw)) + raw


def nvrtc_identity(library: str | os.PathLike, version: tuple[int, int]) -> str:
    """As the header's nvrtc_identity: NVRTC's major.minor, and the size and modification time of the
    library file (the one the process loaded), "13.0 109338064 1764728049.123456789"; "" when the
    file cannot be read (the header then leaves the cache off)."""
    try:
        st = os.stat(library)
    except OSError:
        return ""
    return f"{version[0]}.{version[1]} {st.st_size} {st.st_mtime_ns // 10**9}.{st.st_mtime_ns % 10**9:09d}"


def key(nvrtc_version: str, source: bytes, filename: str, headers: list[tuple[str, bytes]], name: str,
        options: list[str], header_versions: dict[str, str]) -> str:
    """As `key` of the header; `header_versions`: -I folder -> CUDA_VERSION of its cuda.h."""
    m = put(f"rtc-cache {FORMAT}") + put(nvrtc_version) + put(source) + put(filename)
    m += put(str(len(headers))) + b"".join(put(n) + put(c) for n, c in headers)
    m += put(name) + put(str(len(options)))
    for o in options:
        m += put(o)
        for flag in ("-I", "--include-path="):
            if o.startswith(flag):
                m += put(header_versions.get(o[len(flag):], ""))
    return hash128(m)


def encode(key: str, lowered: str, code: bytes) -> bytes:
    data = MAGIC + put(str(FORMAT)) + put(key) + put(lowered) + put(code)
    return data + hash128(data).encode()


def header_version(folder: str) -> str:
    """The rest of the `#define CUDA_VERSION ` line of <folder>/cuda.h ("" without one), as the header reads it."""
    try:
        text = open(posixpath.join(folder, "cuda.h"), "rb").read()
    except OSError:
        return ""
    at = text.find(b"#define CUDA_VERSION ")
    if at < 0:
        return ""
    end = text.find(b"\n", at)
    return text[at + 21:end if end >= 0 else len(text)].decode(errors="replace")


def _take(data: bytes, end: int, at: int) -> tuple[bytes, int] | None:
    if end - at < 8:
        return None
    (n,) = struct.unpack_from("<Q", data, at)
    at += 8
    if n > end - at:
        return None
    return data[at:at + n], at + n


def decode(data: bytes, key: str) -> dict | None:
    """An entry's {lowered, code}, or None where the layer would not load it."""
    if len(data) < len(MAGIC) + 32 or not data.startswith(MAGIC):
        return None
    end = len(data) - 32
    if hash128(data[:end]).encode() != data[end:]:
        return None
    fields, at = [], len(MAGIC)
    for _ in range(4):
        got = _take(data, end, at)
        if got is None:
            return None
        fields.append(got[0])
        at = got[1]
    if fields[0] != str(FORMAT).encode() or fields[1] != key.encode() or at != end:
        return None
    return {"lowered": fields[2].decode(), "code": fields[3]}
