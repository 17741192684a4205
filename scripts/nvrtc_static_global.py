"""Can the host find a `static __device__` variable of an NVRTC program without reading device
memory? (issue 29: the grouped MXFP8 kernels' tensor maps are such a variable; the stubs now read a
pointer to it with a synchronous 8-byte copy.) Compiles one program with NVRTC, the variable's
address as a name expression (`&ns::common::g_maps`, internal linkage, and a non-static twin),
loads it with the driver API, asks `cuModuleGetGlobal` for each lowered name, and compares the
address with the one a kernel of the module writes (`&g_maps`). Prints JSON.

    python scripts/nvrtc_static_global.py [--nvrtc LIBNVRTC] [--cuda LIBCUDA] [--arch sm_90]

Without a GPU (no libcuda or no device) it reports the NVRTC half only: the lowered names and the
binding of their symbols in the cubin (LOCAL for the static variable)."""

from __future__ import annotations

import argparse
import ctypes
import json
import struct

SOURCE = b"""
struct Storage { unsigned long long a[4]; };
namespace ns { namespace common {
static __device__ Storage g_maps;
__device__ Storage g_maps_external;
} }
extern "C" __device__ void *pointer_to_g_maps = &ns::common::g_maps;  // what the stubs read today
__global__ void where(unsigned long long *out) {
  out[0] = reinterpret_cast<unsigned long long>(&ns::common::g_maps);
  out[1] = reinterpret_cast<unsigned long long>(&ns::common::g_maps_external);
}
"""
NAMES = [b"where", b"&ns::common::g_maps", b"&ns::common::g_maps_external"]


def _symbols(cubin: bytes) -> dict[str, int]:
    """name -> ELF binding (0 LOCAL, 1 GLOBAL, 2 WEAK) of the cubin's symbols."""
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", cubin, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    out = {}
    for s in secs:
        if s[1] != 2:
            continue
        strtab = secs[s[6]][4]
        for i in range(s[5] // s[9]):
            name, info = struct.unpack_from("<IB", cubin, s[4] + i * s[9])
            end = cubin.index(b"\0", strtab + name)
            out[cubin[strtab + name:end].decode()] = info >> 4
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nvrtc", default="libnvrtc.so.13")
    ap.add_argument("--cuda", default="libcuda.so.1")
    ap.add_argument("--arch", default="sm_90")
    a = ap.parse_args()
    nvrtc = ctypes.CDLL(a.nvrtc)
    prog = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), SOURCE, b"p.cu", 0, None, None) == 0
    for n in NAMES:
        assert nvrtc.nvrtcAddNameExpression(prog, n) == 0
    opts = (ctypes.c_char_p * 1)(f"--gpu-architecture={a.arch}".encode())
    rc = nvrtc.nvrtcCompileProgram(prog, 1, opts)
    size = ctypes.c_size_t()
    nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetProgramLog(prog, log)
    assert rc == 0, log.value.decode()
    lowered = {}
    for n in NAMES:
        low = ctypes.c_char_p()
        assert nvrtc.nvrtcGetLoweredName(prog, n, ctypes.byref(low)) == 0
        lowered[n.decode()] = low.value
    nvrtc.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    cubin = ctypes.create_string_buffer(size.value)
    nvrtc.nvrtcGetCUBIN(prog, cubin)
    binding = _symbols(cubin.raw)
    lowered["pointer_to_g_maps"] = b"pointer_to_g_maps"     # C linkage: its own name, no expression
    result = {"arch": a.arch, "names": {k: {"lowered": v.decode(), "elf_binding": binding.get(v.decode())}
                                        for k, v in lowered.items()}}
    try:
        cuda = ctypes.CDLL(a.cuda)
    except OSError as exc:
        result["gpu"] = f"not run: {exc}"
        print(json.dumps(result, indent=1))
        return
    count = ctypes.c_int()
    if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        result["gpu"] = "not run: no CUDA device"
        print(json.dumps(result, indent=1))
        return
    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    assert cuda.cuModuleLoadData(ctypes.byref(mod), cubin) == 0
    assert cuda.cuModuleGetFunction(ctypes.byref(fn), mod, lowered["where"]) == 0
    found = {}
    for key in ("&ns::common::g_maps", "&ns::common::g_maps_external", "pointer_to_g_maps"):
        ptr, nbytes = ctypes.c_uint64(), ctypes.c_size_t()
        status = cuda.cuModuleGetGlobal_v2(ctypes.byref(ptr), ctypes.byref(nbytes), mod, lowered[key])
        found[key] = {"status": status, "address": ptr.value, "bytes": nbytes.value}
    out = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(out), 16) == 0
    arg = ctypes.c_uint64(out.value)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    assert cuda.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, None, params, None) == 0
    host = (ctypes.c_uint64 * 2)()
    assert cuda.cuMemcpyDtoH_v2(host, ctypes.c_uint64(out.value), 16) == 0
    seen = {"&ns::common::g_maps": host[0], "&ns::common::g_maps_external": host[1]}
    pointer = ctypes.c_uint64()        # the value of pointer_to_g_maps: today's synchronous read
    if found["pointer_to_g_maps"]["status"] == 0:
        at = ctypes.c_uint64(found["pointer_to_g_maps"]["address"])
        assert cuda.cuMemcpyDtoH_v2(ctypes.byref(pointer), at, 8) == 0
    found["pointer_to_g_maps"]["value_read"] = pointer.value
    found["pointer_to_g_maps"]["value_is_g_maps"] = pointer.value == host[0]
    for key, row in found.items():
        if key in seen:
            row["kernel_sees"] = seen[key]
            row["same"] = row["status"] == 0 and row["address"] == seen[key]
        result["names"][key]["cuModuleGetGlobal"] = row
    name = ctypes.create_string_buffer(256)
    cuda.cuDeviceGetName(name, 256, dev)
    result["gpu"] = name.value.decode()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
