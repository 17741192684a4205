"""Extraction of a unit's device code (plan/extract.py) keeps the unit's text: declarations that
are neighbours there stay neighbours (no blank line added between them), a comment ending a
declaration's line moves with it, the includes keep their groups, and copied using-declarations
are headed once; the banner is wrapped at 100 columns."""

from codemod.apply.plan import extract

UNIT = """\
#include <cuda_fp16.h>

#include "common.h"

namespace lib {
namespace {

using std::int32_t;
using std::uint32_t;

constexpr int kTile = 128;
// constexpr int kOld = 32;
constexpr int kVec = 8;     // elements per load
constexpr int kHost = 4;    // the launcher's only
constexpr int kThreads = kTile / kVec;  /* per block */

__device__ inline float twice(float x) { return 2.f * x; }

}  // namespace

template <typename T>
__global__ void twice_kernel(const T *in, T *out, int32_t n) {
  __shared__ float tile[kTile * kVec];
  const uint32_t i = blockIdx.x * kThreads + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(twice(static_cast<float>(in[i])));
}

void launch_twice(const float *in, float *out, int n, cudaStream_t stream) {
  twice_kernel<float><<<(n + kThreads - 1) / kThreads, kThreads * kHost, 0, stream>>>(in, out, n);
}

}  // namespace lib
"""


def _extract(tmp_path, name="a_rather_long_unit_name_that_pushes_the_banner_past_the_column.cu"):
    (tmp_path / name).write_text(UNIT)
    ex = extract.extract(tmp_path, name, {"twice_kernel"}, "twice", "LIB_TWICE_KERNELS_CUH_")
    kept = bytearray(UNIT.encode())
    for start, end in sorted(ex.removed, reverse=True):
        del kept[start:end]
    return ex, kept.decode()


def test_neighbours_stay_neighbours_and_trailing_comments_move(tmp_path):
    ex, kept = _extract(tmp_path)
    assert ("constexpr int kTile = 128;\n// constexpr int kOld = 32;\nconstexpr int kVec = 8;     // elements per load\n"
            "\nconstexpr int kThreads = kTile / kVec;  /* per block */\n\n__device__ inline float twice") in ex.text
    # what stays keeps its own comment; nothing moved is left behind, no comment lost
    assert "constexpr int kHost = 4;    // the launcher's only\n" in kept
    for comment in ("// elements per load", "/* per block */", "// constexpr int kOld"):
        assert (comment in ex.text) != (comment in kept)
    assert "namespace lib {\nnamespace {\n" in ex.text


def test_includes_keep_their_groups_and_copies_are_headed_once(tmp_path):
    ex, _ = _extract(tmp_path)
    assert '#include <cuda_fp16.h>\n\n#include "common.h"\n' in ex.text
    name = "a_rather_long_unit_name_that_pushes_the_banner_past_the_column.cu"
    assert f"// (also in {name})\nusing std::int32_t;\nusing std::uint32_t;\n" in ex.text
    assert ex.text.count("(also in") == 1


def test_banner_wrapped_at_100_columns(tmp_path):
    ex, _ = _extract(tmp_path)
    banner = ex.text.split("#ifndef")[0].splitlines()
    assert len(banner) >= 2 and all(line.startswith("// ") and len(line) <= 100 for line in banner)
    assert " ".join(line[3:] for line in banner).startswith(
        "Device code of a_rather_long_unit_name_that_pushes_the_banner_past_the_column.cu, which includes this "
        "header, as do the NVRTC programs of the twice kernels.")


def test_a_declaration_sharing_its_line_with_other_code_is_refused(tmp_path):
    """Whole lines move: a moved declaration with another one on its line would take that one
    along (out of the unit, into the header): refused, naming it, nothing moved."""
    import pytest

    for shared in ("constexpr int kTile = 128; constexpr int kSpare = 1;\n",
                   "constexpr int kSpare = 1; constexpr int kTile = 128;\n"):
        (tmp_path / "u.cu").write_text(UNIT.replace("constexpr int kTile = 128;\n", shared))
        with pytest.raises(extract.Refused, match=r"kTile at u\.cu:11 shares its line with other code"):
            extract.extract(tmp_path, "u.cu", {"twice_kernel"}, "twice", "LIB_TWICE_KERNELS_CUH_")
