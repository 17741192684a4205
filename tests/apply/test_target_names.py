"""The migrated tree names nothing of the tool (issue 29): no banner, marker, guard, macro,
identifier or message with the tool's name in any line a golden rule adds."""

import pytest

from codemod.apply.golden import GOLDEN, golden_patch

CASES = sorted(p.name for p in GOLDEN.iterdir()
               if (p / "rule.yaml").is_file() or (p / "activation.yaml").is_file())


@pytest.mark.parametrize("case", CASES)
def test_no_added_line_names_the_tool(case):
    patch, _, _ = golden_patch(case)
    named, path = [], None
    for line in patch.splitlines():
        if line.startswith("+++ "):
            path = line[4:]
        elif line.startswith("+") and "codemod" in line.lower():
            named.append(f"{path}: {line[1:].strip()}")
    assert not named, f"{len(named)} added line(s) name the tool:\n" + "\n".join(named[:20])
