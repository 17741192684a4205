"""Issue 16: everything the tool writes is strict JSON (no NaN/Infinity); a non-finite value is an
OutputError naming where it is, and the writers use codemod.strict_json."""

from __future__ import annotations

import json
import math

import pytest

from codemod import strict_json
from codemod.errors import OutputError

from .conftest import LOG, REPO


def test_nan_refused_with_its_path():
    with pytest.raises(OutputError, match=r"\$\.steps\[1\]\.elapsed_s is not a finite number"):
        strict_json.dumps({"steps": [{"elapsed_s": 1.0}, {"elapsed_s": math.nan}]}, "impact JSON")


def test_infinity_in_a_dataclass_via_default():
    from dataclasses import dataclass, asdict

    @dataclass
    class Row:
        x: float

    with pytest.raises(OutputError, match=r"\$\[0\]\.x"):
        strict_json.dumps([Row(math.inf)], default=asdict)


def test_finite_documents_unchanged():
    doc = {"a": [1, 2.5, None, "s"], "b": {"c": True}}
    assert strict_json.dumps(doc, indent=1) == json.dumps(doc, indent=1)


def _parse_strict(text: str):
    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_impact_outputs_are_strict(cli, tmp_path):
    code, _, err = cli("impact", LOG, "--cores", "2", "--contention", "100", "--scale", "*=1000",
                       "--json", tmp_path / "a.json", "--trace", tmp_path / "t.json")
    assert code == 0, err
    _parse_strict((tmp_path / "a.json").read_text())
    _parse_strict((tmp_path / "t.json").read_text())


def test_no_writer_uses_plain_json_dumps():
    """Every JSON document the tool writes goes through strict_json; plain json.dumps only feeds
    hashes (cache keys) or is named in a docstring."""
    import re

    allowed = re.compile(r"sha256|hashlib|data = json\.dumps\(\[CACHE_FORMAT|`json\.dumps")
    offenders = [f"{path.relative_to(REPO)}:{lineno}: {line.strip()}"
                 for path in (REPO / "codemod").rglob("*.py") if path.name != "strict_json.py"
                 for lineno, line in enumerate(path.read_text().splitlines(), 1)
                 if re.search(r"(?<!strict_)json\.dumps\(", line) and not allowed.search(line)]
    assert not offenders, offenders
