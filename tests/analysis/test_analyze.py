"""The analysis document as written: `dumps` is `json.dumps(to_json())`, faster."""

import json

import pytest

from codemod.analysis.analyze import dumps
from codemod.analysis.golden import CASES


@pytest.mark.parametrize("case", CASES)
def test_dumps_writes_what_to_json_holds(analyses, case):
    a = analyses[case]
    assert dumps(a) == json.dumps(a.to_json())
    assert dumps(a, indent=1) == json.dumps(a.to_json(), indent=1)
