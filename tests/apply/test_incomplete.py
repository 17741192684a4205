"""Which parse errors leave a kernel static: the library's own files count, toolkit headers do not."""

from types import SimpleNamespace as NS

from codemod.apply.plan import _incomplete


def _analysis(diags, tu_errors):
    return NS(diagnostics=[NS(id="CM0101", severity="error", file=f, line=3, message="boom") for f in diags],
              translation_units=[NS(file="k.cu", errors=tu_errors)])


SPEC = NS(translation_units=["k.cu"])
KERNEL = NS(file="k.cu", tus=["k.cu"])


def test_errors_only_in_toolkit_headers_do_not_stop_the_migration():
    assert _incomplete(_analysis(["/opt/cuda/include/cccl/cuda/barrier.h"], 8), SPEC, KERNEL, []) is None


def test_an_error_in_the_unit_or_a_library_header_does():
    assert "k.cu" in _incomplete(_analysis(["k.cu"], 1), SPEC, KERNEL, [])
    assert "util/x.h" in _incomplete(_analysis(["util/x.h"], 1), SPEC, KERNEL, [])
