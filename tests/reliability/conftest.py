"""Shared helpers of the reliability tests: run the CLI in-process and check that a bad input is
one line on stderr with the documented exit code, never a traceback or an "internal error"."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.cli import main

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "golden"
LOG = GOLDEN / "impact" / "logs" / "v6_one_build.ninja_log"
CSV = GOLDEN / "impact" / "nvcc" / "one_tu.csv"
ACTLIB_RULE = GOLDEN / "actlib" / "activation.yaml"


class Cli:
    def __init__(self, capsys):
        self.capsys = capsys

    def __call__(self, *argv) -> tuple[int, str, str]:
        code = main([str(a) for a in argv])
        out, err = self.capsys.readouterr()
        return code, out, err

    def fails(self, *argv, code: int = 2, says: tuple[str, ...] = ()) -> str:
        """Run argv; assert exit `code`, one line on stderr holding every string in `says`."""
        got, out, err = self(*argv)
        assert "Traceback" not in out + err and "internal error" not in err, err
        assert got == code, (got, err)
        assert err.startswith("codemod: error: ") and err.strip().count("\n") == 0, err
        for s in says:
            assert s in err, (s, err)
        return err


@pytest.fixture
def cli(capsys) -> Cli:
    return Cli(capsys)


@pytest.fixture
def lib(tmp_path) -> Path:
    """A one-kernel library."""
    src = tmp_path / "lib"
    src.mkdir()
    (src / "k.cu").write_text("template <typename T> __global__ void k(T *p) { p[0] = 1; }\n"
                              "void entry(float *p) { k<float><<<1, 1>>>(p); }\n")
    return src
