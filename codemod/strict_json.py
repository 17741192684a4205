"""Strict JSON for everything the tool writes: no NaN or Infinity (RFC 8259 has neither), and a
non-finite number is an OutputError naming where it is, never a bare `NaN` in a document."""

from __future__ import annotations

import json
import math

from .errors import OutputError


def dumps(obj, what: str = "JSON document", **kw) -> str:
    """json.dumps(obj, allow_nan=False, **kw); `what` names the document in the error."""
    try:
        return json.dumps(obj, allow_nan=False, **kw)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
        where = _non_finite(obj, kw.get("default")) or "?"
        raise OutputError(f"refusing to write {what}: {where} is not a finite number",
                          hint="an input holds a value out of range; rerun with --debug to see where") from None


def _non_finite(obj, default, path: str = "$") -> str | None:
    """JSON path of the first non-finite float in obj (following `default` like json.dumps)."""
    stack = [(obj, path)]
    while stack:
        value, at = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return at
        elif isinstance(value, dict):
            stack.extend((v, f"{at}.{k}") for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{at}[{i}]") for i, v in reversed(list(enumerate(value))))
        elif default is not None and not isinstance(value, (str, int, bool, type(None))):
            try:
                stack.append((default(value), at))
            except TypeError:
                pass
    return None
