"""mamba's selective scan, original or migrated build, on a GPU (scripts/device_mamba.sh): calls the
extension's own entry points, `selective_scan_cuda.fwd` and `.bwd`, on seeded random inputs over
the shapes and flags of mamba's tests/ops/test_selective_scan.py (its commented-out lists too:
every dtype pair, seqlen, B/C kind and flag), and writes every output's bytes to OUT, case by case.
Two builds' files must be equal byte for byte.

Sizes keep every atomically accumulated gradient at two contributions or fewer per address
(batch 2; 2 channels per B/C group): the sum of two addends is the same in either order, so the
outputs do not depend on block scheduling and a byte comparison is meaningful (with more, the
original build does not reproduce itself). `--bench` instead times fwd + bwd on larger shapes.

    PYTHONPATH=<build with selective_scan_cuda*.so> python mamba_driver.py OUT [--shard I/N] [--bench]
"""

from __future__ import annotations

import argparse
import itertools
import struct
import sys
import time

import torch

import selective_scan_cuda

SEQLENS = [8, 16, 32, 64, 128, 200, 256, 372, 512, 784, 1024, 1134, 2048, 4096]   # every tile, even and odd
ITYPES = [torch.float32, torch.float16, torch.bfloat16]
WTYPES = [torch.float32, torch.complex64]
BC = [(False, False, 1), (False, True, 1), (True, False, 1), (True, True, 1), (True, True, 2)]
FLAGS = list(itertools.product([False, True], repeat=4))    # has_D, has_z, has_delta_bias, delta_softplus


def cases():
    for wtype, itype, seqlen, bc, flags in itertools.product(WTYPES, ITYPES, SEQLENS, BC, FLAGS):
        yield wtype, itype, seqlen, bc, flags


def inputs(case, seed, batch=2, dstate=8):
    wtype, itype, seqlen, (var_b, var_c, groups), (has_d, has_z, has_bias, softplus) = case
    dim = 2 * groups
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = dict(device="cuda")
    cplx = wtype == torch.complex64

    def bc_tensor(variable):
        if not variable:
            return torch.randn(dim, dstate, generator=g, dtype=wtype, **dev)
        shape = (batch, dstate, seqlen * 2 if cplx else seqlen) if groups == 1 else \
            (batch, groups, dstate, seqlen * 2 if cplx else seqlen)
        return torch.randn(*shape, generator=g, dtype=itype, **dev)

    A = -0.5 * torch.rand(dim, dstate, generator=g, dtype=wtype, **dev)
    B, C = bc_tensor(var_b), bc_tensor(var_c)
    D = torch.randn(dim, generator=g, dtype=torch.float32, **dev) if has_d else None
    z = torch.randn(batch, dim, seqlen, generator=g, dtype=itype, **dev) if has_z else None
    bias = 0.5 * torch.rand(dim, generator=g, dtype=torch.float32, **dev) if has_bias else None
    u = torch.randn(batch, dim, seqlen, generator=g, dtype=itype, **dev)
    delta = 0.5 * torch.rand(batch, dim, seqlen, generator=g, dtype=itype, **dev)
    dout = torch.randn(batch, dim, seqlen, generator=g, dtype=itype, **dev)
    return u, delta, A, B, C, D, z, bias, softplus, dout


def run(case, seed):
    u, delta, A, B, C, D, z, bias, softplus, dout = inputs(case, seed)
    out, x, *rest = selective_scan_cuda.fwd(u, delta, A, B, C, D, z, bias, softplus)
    grads = selective_scan_cuda.bwd(u, delta, A, B, C, D, z, bias, dout, x, out, None, softplus, False)
    return [out, x, *rest, *grads]


def tensor_bytes(t) -> bytes:
    if t is None:
        return b"none"
    t = t.detach().contiguous()
    return str((t.dtype, tuple(t.shape))).encode() + t.view(torch.uint8).cpu().numpy().tobytes() \
        if t.numel() else str((t.dtype, tuple(t.shape))).encode()


def parity(out_path: str, shard: int, shards: int) -> int:
    n = 0
    with open(out_path, "wb") as f:
        for i, case in enumerate(cases()):
            if i % shards != shard:
                continue
            outputs = run(case, seed=i)
            torch.cuda.synchronize()
            blob = b"".join(struct.pack("<Q", len(b)) + b for b in map(tensor_bytes, outputs))
            f.write(struct.pack("<QQ", i, len(blob)) + blob)
            n += 1
    print(f"shard {shard}/{shards}: {n} cases written to {out_path}")
    return 0


def bench(out_path: str) -> int:
    """fwd + bwd time per shape (median of 20 after 3 warm-ups: the first use compiled already)."""
    rows = []
    for itype, wtype, seqlen in itertools.product(ITYPES, WTYPES, [512, 2048, 4096]):
        case = (wtype, itype, seqlen, (True, True, 1), (True, True, True, True))
        batch, dim, dstate = 8, 1024, 16
        u, delta, A, B, C, D, z, bias, softplus, dout = _big(case, batch, dim, dstate)
        first = time.perf_counter()
        out, x, *rest = selective_scan_cuda.fwd(u, delta, A, B, C, D, z, bias, softplus)
        selective_scan_cuda.bwd(u, delta, A, B, C, D, z, bias, dout, x, out, None, softplus, False)
        torch.cuda.synchronize()
        first = time.perf_counter() - first
        times = []
        for rep in range(23):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            out, x, *rest = selective_scan_cuda.fwd(u, delta, A, B, C, D, z, bias, softplus)
            selective_scan_cuda.bwd(u, delta, A, B, C, D, z, bias, dout, x, out, None, softplus, False)
            e.record()
            torch.cuda.synchronize()
            if rep >= 3:
                times.append(s.elapsed_time(e))
        times.sort()
        rows.append(f"{str(itype).split('.')[1]}\t{str(wtype).split('.')[1]}\t{seqlen}\t{first * 1e3:.1f}\t{times[len(times) // 2]:.3f}")
    with open(out_path, "w") as f:
        f.write("itype\twtype\tseqlen\tfirst_call_ms\tmedian_fwd_bwd_ms\n" + "\n".join(rows) + "\n")
    print("\n".join(rows))
    return 0


def _big(case, batch, dim, dstate):
    """Inputs of a training-sized call: variable B and C, D, z, delta bias, softplus."""
    wtype, itype, seqlen = case[0], case[1], case[2]
    g = torch.Generator(device="cuda").manual_seed(0)
    cplx = wtype == torch.complex64
    mk = lambda *s, dt=itype: torch.randn(*s, generator=g, dtype=dt, device="cuda")
    A = -0.5 * torch.rand(dim, dstate, generator=g, dtype=wtype, device="cuda")
    B = mk(batch, dstate, seqlen * 2 if cplx else seqlen)
    C = mk(batch, dstate, seqlen * 2 if cplx else seqlen)
    D = mk(dim, dt=torch.float32)
    bias = 0.5 * torch.rand(dim, generator=g, dtype=torch.float32, device="cuda")
    return (mk(batch, dim, seqlen), 0.5 * torch.rand(batch, dim, seqlen, generator=g, dtype=itype, device="cuda"),
            A, B, C, D, mk(batch, dim, seqlen), bias, True, mk(batch, dim, seqlen))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--shard", default="0/1")
    ap.add_argument("--bench", action="store_true")
    args = ap.parse_args(argv)
    if args.bench:
        return bench(args.out)
    shard, shards = map(int, args.shard.split("/"))
    return parity(args.out, shard, shards)


if __name__ == "__main__":
    sys.exit(main())
