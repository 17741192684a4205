"""Cooperative launches and occupancy queries on a kernel variable, `&kernel<...>` handles, and the
headers an NVRTC program needs for the types its name expressions spell (codemod/apply/plan/kernel_api.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.apply.plan.plan import kernel_api
from codemod.apply.base import source
from codemod.frontend.treesitter import scan_bytes

LAUNCHER = b"""#include "traits.h"
#include "kern.cuh"
template <typename T>
void launch(Params &p, cudaStream_t stream, bool cfg) {
  auto kernel = &kern<Traits<T, 4>>;
  if (cfg) {
    int n;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &n, kernel, Traits<T, 4>::THREADS, 0));
    return;
  }
  void *args = reinterpret_cast<void *>(&p);
  CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void *>(kernel), dim3(8), dim3(128),
                                    reinterpret_cast<void **>(&args), 0, stream));
}
"""


def _calls(data: bytes):
    return {c.api: c for c in scan_bytes("l.cu", data).api_calls}


def test_kernel_variable_drops_void_pointer_casts():
    assert kernel_api.kernel_variable("reinterpret_cast<void *>(kernel)") == "kernel"
    assert kernel_api.kernel_variable("static_cast<const void*>( k )") == "k"
    assert kernel_api.kernel_variable("(void *)kernel") == "kernel"
    assert kernel_api.kernel_variable("kernel") == "kernel"
    assert kernel_api.kernel_variable("table[i]") is None
    assert kernel_api.kernel_variable(None) is None


def test_cooperative_launch_rewritten_onto_the_stub_without_the_cast():
    call = _calls(LAUNCHER)["cudaLaunchCooperativeKernel"]
    new = kernel_api.rewrite_call(call, {"kernel"})
    assert new == ("kernel.launch_cooperative(dim3(8), dim3(128), reinterpret_cast<void **>(&args), 0, "
                   "stream)")
    assert kernel_api.rewrite_call(call, {"other"}) is None


def test_occupancy_query_rewritten_onto_the_stub():
    call = _calls(LAUNCHER)["cudaOccupancyMaxActiveBlocksPerMultiprocessor"]
    assert kernel_api.rewrite_call(call, {"kernel"}) == "kernel.occupancy(&n, Traits<T, 4>::THREADS, 0)"


def test_address_of_a_kernel_template_id_is_part_of_the_handle_range():
    """`auto kernel = &kern<...>;` became `&ns::kern<...>()`: the address of a temporary, which
    does not compile (TE's norm launchers); the stub call must replace the `&` too."""
    data = b"void f() { auto k = &kern<T, 4>; auto j = kern<T>; auto q = &ns::kern<&op>; }"
    got = [data[s:e] for s, e, _ in source.template_ids(data, {"kern"})]
    assert got == [b"&kern<T, 4>", b"kern<T>", b"&ns::kern<&op>"]


def test_type_headers_finds_the_header_declaring_a_spelled_type(tmp_path: Path):
    """`kern<::lib::Traits<float, 4>>` needs traits.h in the NVRTC program: the kernel header does
    not include it, the launcher's unit does."""
    (tmp_path / "traits.h").write_text("namespace lib {\ntemplate <typename T, int N>\nstruct Traits {};\n}\n")
    (tmp_path / "kern.cuh").write_text("namespace lib {\ntemplate <typename K>\n__global__ void kern() {}\n}\n")
    (tmp_path / "l.cu").write_bytes(LAUNCHER)
    names = kernel_api.spelled_type_names(["::lib::Traits<float, 4>"])
    assert names == {"Traits"}

    def resolve(path, inc):
        return inc.name if (tmp_path / inc.name).is_file() else None

    read = lambda p: (tmp_path / p).read_bytes()
    assert kernel_api.type_headers(tmp_path, names, ["kern.cuh"], ["l.cu"], resolve, read) == (["traits.h"], [])
    # already reached from the kernel's header, or copied into the prelude: nothing to add
    assert kernel_api.type_headers(tmp_path, names, ["kern.cuh", "traits.h"], ["l.cu"], resolve, read) == ([], [])
    assert kernel_api.type_headers(tmp_path, names, ["kern.cuh"], ["l.cu"], resolve, read, {"Traits"}) == ([], [])
    # declared nowhere the unit includes
    assert kernel_api.type_headers(tmp_path, {"Missing"}, ["kern.cuh"], ["l.cu"], resolve, read) == ([], ["Missing"])


def test_stub_features_follow_the_sites():
    class S:
        def __init__(self, api):
            self.api = api
    assert kernel_api.stub_features([S("<<<>>>")]) == {"cooperative": False, "occupancy": False, "adl": False}
    assert kernel_api.stub_features([S("cudaLaunchCooperativeKernel"), S("occupancy")]) == \
        {"cooperative": True, "occupancy": True, "adl": False}


# The golden normlib (registry-dispatched launchers, cooperative launches, occupancy queries,
# traits declared in a header the kernel header does not include): apply's expected patch.

def test_normlib_golden_patch_matches_expected():
    """Before: apply left the cooperatively launched and occupancy-queried kernels static."""
    from codemod.apply.golden import GOLDEN, golden_patch

    patch, report, manifest = golden_patch("normlib")
    assert manifest == (GOLDEN / "normlib" / "expected" / "apply.manifest.json").read_text()
    assert patch == (GOLDEN / "normlib" / "expected" / "apply.patch").read_text(), \
        "golden patch drifted (regenerate with `python -m codemod.apply.golden normlib --update`)"
    assert "4 kernels migrated" in report and "Left static\n\n- nothing" in report
    launchers = patch[patch.index("diff --git a/src/layernorm/"):patch.index("diff --git a/src/rtc/")]
    added = "".join(line for line in launchers.splitlines(True) if line.startswith("+") and not line.startswith("+++"))
    assert "cudaLaunchCooperativeKernel" not in added and "cudaOccupancy" not in added
    assert "kernel.launch_cooperative(grid, block, args, 0, launch_params.stream)" in added
    assert '#include "src/kernel_traits.h"' in patch


@pytest.mark.slow
@pytest.mark.parametrize("legacy", ["OFF", "ON"])
def test_patched_normlib_builds(tmp_path, legacy):
    """The patched normlib compiles and links (nvcc, sm_90), with and without the static kernels."""
    import shutil
    import subprocess

    from codemod.apply.command import compute
    from codemod.apply.golden import GOLDEN
    from codemod.apply.write.patch import write_all
    from tests.golden.test_golden_builds import _missing_tools, _nvrtc_root

    if _missing_tools():
        pytest.skip(f"needs {', '.join(_missing_tools())} on PATH")
    root = tmp_path / "input"
    shutil.copytree(GOLDEN / "normlib" / "input", root)
    write_all(root, compute(root, str(GOLDEN / "normlib" / "rule.yaml"))[0])
    cmd = ["cmake", "-S", str(root), "-B", str(tmp_path / "b"), "-G", "Ninja", "-DCMAKE_CUDA_ARCHITECTURES=90",
           f"-DNORMLIB_BUILD_LEGACY_STATIC_NORM={legacy}"]
    if _nvrtc_root() is not None:
        cmd.append(f"-DNORMLIB_NVRTC_ROOT={_nvrtc_root()}")
    for c in (cmd, ["ninja", "-C", str(tmp_path / "b")]):
        proc = subprocess.run(c, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]


def test_literal_defaults_give_one_spelling_per_type():
    """normlib spells `Kernel_traits<..., 1, 4, 1>` (BYTES_PER_LDG = 16 left to its default) and
    `Kernel_traits<..., 1, 4, 1, 16>`: one type; two spellings defined TypeName<T> twice in the
    stubs (the patched library did not compile)."""
    header = (b"namespace lib {\ntemplate <typename T, int A, int B = 16, typename Base = Other<T, A>>\n"
              b"struct Traits : Base {};\n}\n")
    assert kernel_api.template_defaults(header, "Traits") == [None, None, "16", "Other<T, A>"]
    assert kernel_api.template_defaults(header, "Missing") is None
    defaults = {"Traits": kernel_api.template_defaults(header, "Traits")}.get
    assert kernel_api.with_literal_defaults("::lib::Traits<float, 4>", defaults) == "::lib::Traits<float, 4, 16>"
    assert kernel_api.with_literal_defaults("::lib::Traits<float, 4, 8>", defaults) == "::lib::Traits<float, 4, 8>"
    assert kernel_api.with_literal_defaults("::lib::W<::lib::Traits<float, 4>, 2>", defaults) == \
        "::lib::W<::lib::Traits<float, 4, 16>, 2>"
    assert kernel_api.with_literal_defaults("float", defaults) == "float"


def test_redeclared_kernel_drops_default_arguments():
    """The stubs declare `rmsnorm_fwd_kernel<Ktraits, bool FUSED_ADD = false>` again after the
    library's header: "redefinition of default argument" (the patched normlib did not compile)."""
    assert kernel_api.without_defaults("<typename Ktraits, bool FUSED_ADD = false>") == \
        "<typename Ktraits, bool FUSED_ADD>"
    assert kernel_api.without_defaults("<int nvec, typename T = Foo<int, 2>, int N=3>") == \
        "<int nvec, typename T, int N>"
    assert kernel_api.without_defaults("<typename K>") == "<typename K>"
