"""Which parse errors leave a kernel static: the library's own files count, toolkit headers do not."""

from types import SimpleNamespace as NS

from codemod.apply.plan.plan import _incomplete


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


def test_apply_stops_on_library_errors_in_a_migrated_unit_not_on_toolkit_ones():
    """command._check_units_read: a migrated unit with errors in the library's files, or one clang
    could not read, stops apply; errors only in toolkit headers do not (as _incomplete)."""
    import pytest

    from codemod.apply.command import _check_units_read
    from codemod.errors import ParseError

    _check_units_read(_analysis(["/opt/cuda/include/cccl/cuda/barrier.h"], 8), SPEC)
    _check_units_read(_analysis(["k.cu"], 0), SPEC)
    for files, says in ((["k.cu"], "k.cu:3: boom"), (["util/x.h"], "util/x.h:3: boom"),
                        ([None], "could not read")):
        with pytest.raises(ParseError) as err:
            _check_units_read(_analysis(files, 1), SPEC)
        assert says in str(err.value)
