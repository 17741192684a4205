"""Extraction of a unit's device code (plan/extract.py): a banner comment heading only moved code
goes with it into the new header; one heading host code that stays, stays."""

from codemod.apply.plan import extract

UNIT = """\
// A unit with section banners.
#include "common.h"

namespace lib {

// ---------------------------------------------------------------------------
// Device helpers
// ---------------------------------------------------------------------------

__device__ inline float twice(float x) { return 2.f * x; }

// ---------------------------------------------------------------------------
// Kernels
// ---------------------------------------------------------------------------

// The kernel: each element twice.
template <typename T>
__global__ void twice_kernel(const T *in, T *out, int n) {
  // one element per thread
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(twice(static_cast<float>(in[i])));
}

// ---------------------------------------------------------------------------
// Launchers
// ---------------------------------------------------------------------------

template <typename T>
void launch_twice(const T *in, T *out, int n, cudaStream_t stream) {
  twice_kernel<T><<<(n + 255) / 256, 256, 0, stream>>>(in, out, n);
}

}  // namespace lib
"""


def test_banners_of_moved_code_move_with_it(tmp_path):
    (tmp_path / "twice.cu").write_text(UNIT)
    ex = extract.extract(tmp_path, "twice.cu", {"twice_kernel"}, "twice", "LIB_TWICE_KERNELS_CUH_")
    data = UNIT.encode()
    kept = bytearray(data)
    for start, end in sorted(ex.removed, reverse=True):
        del kept[start:end]
    kept = kept.decode()
    for banner in ("// Device helpers", "// Kernels"):
        assert banner in ex.text and banner not in kept
    assert ex.text.index("// Device helpers") < ex.text.index("twice(float x)") < ex.text.index("// Kernels") \
        < ex.text.index("// The kernel: each element twice.") < ex.text.index("__global__ void twice_kernel")
    assert "// Launchers" in kept and "// Launchers" not in ex.text     # it heads host code that stays
    assert "launch_twice" in kept and "__global__" not in kept
    assert kept.count("// -----") == 2                                   # the Launchers banner's own rules


def test_a_banner_over_moved_and_kept_code_stays(tmp_path):
    mixed = UNIT.replace("__device__ inline float twice(float x) { return 2.f * x; }\n",
                         "__device__ inline float twice(float x) { return 2.f * x; }\n\n"
                         "inline int blocks(int n) { return (n + 255) / 256; }\n")
    (tmp_path / "twice.cu").write_text(mixed)
    ex = extract.extract(tmp_path, "twice.cu", {"twice_kernel"}, "twice", "LIB_TWICE_KERNELS_CUH_")
    assert "// Device helpers" not in ex.text     # `blocks`, host code, stays under it
    assert "// Kernels" in ex.text
