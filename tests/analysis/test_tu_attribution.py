"""Which TU compiles an instantiation: the one where the template's definition is visible. A call
into a function defined in another TU's main file (a template explicitly instantiated there, or a
plain function) is compiled there, not in the caller's TU."""

from pathlib import Path

from codemod.analysis.analyze import analyze

FILES = {
    "launch.h": "#pragma once\ntemplate <typename T> void launch_scale(T *p, int n);\n"
                "void launch_plain(float *p, int n);\n",
    # entry points only: the launcher's definition is not visible here
    "a.cu": '#include "launch.h"\n'
            "void api_scale_float(float *p, int n) { launch_scale<float>(p, n); }\n"
            "void api_scale_double(double *p, int n) { launch_scale<double>(p, n); }\n",
    # the definition and its explicit instantiations: the kernels are compiled here
    "b.cu": '#include "launch.h"\n'
            "template <typename T> __global__ void scale_kernel(T *p, int n) { if (n) p[0] = p[0] * 2; }\n"
            "template <typename T> void launch_scale(T *p, int n) { scale_kernel<T><<<1, 32>>>(p, n); }\n"
            "template void launch_scale<float>(float *, int);\n"
            "template void launch_scale<double>(double *, int);\n",
    # a host file calling a plain function of another TU
    "c.cpp": '#include "launch.h"\nvoid api_plain(float *p, int n) { launch_plain(p, n); }\n',
    "d.cu": '#include "launch.h"\n'
            "template <int N> __global__ void plain_kernel(float *p) { p[0] = N; }\n"
            "void launch_plain(float *p, int n) { if (n) plain_kernel<4><<<1, 32>>>(p); }\n",
    # a template defined in a header is instantiated by the TU that calls it
    "inline.cuh": "#pragma once\ntemplate <typename T> __global__ void fill_kernel(T *p) { p[0] = T(1); }\n"
                  "template <typename T> void launch_fill(T *p) { fill_kernel<T><<<1, 1>>>(p); }\n",
    "e.cu": '#include "inline.cuh"\nvoid api_fill(int *p) { launch_fill<int>(p); }\n',
}


def _analyze(root: Path, files: dict[str, str]):
    for rel, text in files.items():
        (root / rel).write_text(text)
    return analyze(root, [], use_cache=False)


def _kernel(a, name: str):
    return next(k for k in a.kernels if k.name == name)


def test_instantiations_are_charged_to_the_tu_that_compiles_them(tmp_path):
    a = _analyze(tmp_path, FILES)
    kernels = {k.name: k for k in a.kernels}
    assert kernels["scale_kernel"].tus == {"b.cu": 2}
    # the explicit instantiations in b.cu are roots of their own (named with their arguments)
    assert kernels["scale_kernel"].entry_points == ["api_scale_double", "api_scale_float",
                                                    "launch_scale<double>", "launch_scale<float>"]
    assert kernels["plain_kernel"].tus == {"d.cu": 1}
    assert set(kernels["plain_kernel"].entry_points) == {"api_plain", "launch_plain"}
    assert kernels["fill_kernel"].tus == {"e.cu": 1}
    tus = {t.file: t for t in a.translation_units}
    assert (tus["a.cu"].instantiations, tus["b.cu"].instantiations) == (0, 2)
    assert tus["a.cu"].entry_points == ["api_scale_float", "api_scale_double"]
    assert (tus["c.cpp"].instantiations, tus["d.cu"].instantiations, tus["e.cu"].instantiations) == (0, 1, 1)
    entries = {e.name: e for e in a.entry_points}
    assert entries["api_scale_float"].instantiations == 1      # entry points keep their kernels


def test_a_walk_back_into_the_entry_points_tu_is_charged_there(tmp_path):
    files = {
        "api.h": "#pragma once\nvoid helper_b(float *p);\nvoid helper_a(float *p);\n",
        "a.cu": '#include "api.h"\n'
                "template <int N> __global__ void back_kernel(float *p) { p[0] = N; }\n"
                "void helper_a(float *p) { back_kernel<2><<<1, 1>>>(p); }\n"
                "void api_round_trip(float *p) { helper_b(p); }\n",
        "b.cu": '#include "api.h"\nvoid helper_b(float *p) { helper_a(p); }\n',
    }
    kernel = _kernel(_analyze(tmp_path, files), "back_kernel")
    assert kernel.tus == {"a.cu": 1}
    assert set(kernel.entry_points) == {"api_round_trip", "helper_a", "helper_b"}


def test_a_tu_main_file_included_by_another_tu_is_compiled_there(tmp_path):
    """A unity build: all.cu includes part.cu, which is in the TU list too (a glob); what all.cu's
    entry point reaches in part.cu is compiled in all.cu."""
    files = {
        "part.cu": "template <int N> __global__ void unity_kernel(float *p) { p[0] = N; }\n"
                   "void launch_part(float *p) { unity_kernel<3><<<1, 1>>>(p); }\n",
        "all.cu": '#include "part.cu"\nvoid api_all(float *p) { launch_part(p); }\n',
    }
    kernel = _kernel(_analyze(tmp_path, files), "unity_kernel")
    assert kernel.tus == {"all.cu": 1, "part.cu": 1}    # part.cu's own entry point compiles it there too
    assert set(kernel.entry_points) == {"api_all", "launch_part"}


def test_arch_guarded_kernel_bodies_are_recorded(tmp_path):
    """A kernel whose body is one `#if __CUDA_ARCH__ >= N` block gets `body_arch_min` (the impact
    model weighs its instantiations 0 in builds for older archs); the JSON has the key only there."""
    import json

    from codemod.analysis.analyze import dumps

    files = {"k.cu": "template <int N> __global__ void new_arch(float *p) {\n"
                     "#if (defined __CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)\n  p[0] = N;\n#endif\n}\n"
                     "template <int N> __global__ void any_arch(float *p) { p[0] = N; }\n"
                     "void api_run(float *p, int n) {\n"
                     "  if (n) new_arch<1><<<1, 32>>>(p); else any_arch<2><<<1, 32>>>(p);\n}\n"}
    a = _analyze(tmp_path, files)
    assert (_kernel(a, "new_arch").body_arch_min, _kernel(a, "any_arch").body_arch_min) == (1000, None)
    for doc in (a.to_json(), json.loads(dumps(a))):
        kernels = {k["name"]: k for k in doc["kernels"]}
        assert kernels["new_arch"]["body_arch_min"] == 1000 and "body_arch_min" not in kernels["any_arch"]


def test_a_kernel_body_bounded_from_above_gets_its_arch_range(tmp_path):
    """`#if __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000`: body_arch_range [900, 1000], no
    body_arch_min (apply reads that as a lower bound only)."""
    import json

    from codemod.analysis.analyze import dumps

    files = {"k.cu": "template <int N> __global__ void hopper(float *p) {\n"
                     "#if __CUDA_ARCH__ >= 900 && __CUDA_ARCH__ < 1000\n  p[0] = N;\n#endif\n}\n"
                     "template <int N> __global__ void any_arch(float *p) { p[0] = N; }\n"
                     "void api_run(float *p, int n) {\n"
                     "  if (n) hopper<1><<<1, 32>>>(p); else any_arch<2><<<1, 32>>>(p);\n}\n"}
    a = _analyze(tmp_path, files)
    assert _kernel(a, "hopper").body_arch_range == [900, 1000] and _kernel(a, "hopper").body_arch_min is None
    for doc in (a.to_json(), json.loads(dumps(a))):
        kernels = {k["name"]: k for k in doc["kernels"]}
        assert kernels["hopper"]["body_arch_range"] == [900, 1000] and "body_arch_range" not in kernels["any_arch"]


def test_a_launch_of_a_kernel_whose_body_is_elsewhere_compiles_nothing(tmp_path):
    """bitsandbytes' shape: ops.cu launches kernels that kernels.h only declares and kernels.cu
    defines and instantiates explicitly; a switch on a template parameter names variants that no
    unit compiles (dead cases, never linked). nvcc emits the explicit instantiations only: 2, not
    the launches' 3, and none in ops.cu."""
    files = {
        "kernels.h": "#pragma once\ntemplate <typename T, int OP> __global__ void k(T *p);\n",
        "kernels.cu": '#include "kernels.h"\n'
                      "template <typename T, int OP> __global__ void k(T *p) { p[0] = OP; }\n"
                      "template __global__ void k<float, 0>(float *);\n"
                      "template __global__ void k<float, 1>(float *);\n",
        "ops.cu": '#include "kernels.h"\n'
                  "template <typename T, int OP> void run(T *p) {\n"
                  "  switch (OP) {\n"
                  "    case 0: k<T, OP><<<1, 1>>>(p); break;\n"
                  "    default: k<T, 1><<<1, 1>>>(p); k<T, 2><<<1, 1>>>(p); break;\n"
                  "  }\n"
                  "}\n"
                  "template void run<float, 0>(float *);\n"
                  "template void run<float, 1>(float *);\n",
    }
    a = _analyze(tmp_path, files)
    tus = {t.file: t.instantiations for t in a.translation_units}
    assert tus == {"kernels.cu": 2, "ops.cu": 0}
    assert _kernel(a, "k").instantiations == 2
    # the launch sites still list the variants they launch (what a migration's stubs name)
    assert {tuple(v["args"]) for s in a.sites if s.kind == "launch" for v in s.variants} == {
        ("float", "0"), ("float", "1"), ("float", "2")}
