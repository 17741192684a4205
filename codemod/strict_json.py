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


class JSONError(ValueError):
    """Input that strict JSON refuses: a duplicate key, NaN/Infinity, a number out of range, an
    integer of more than MAX_INT_DIGITS digits, nesting past the recursion limit."""


MAX_INT_DIGITS = 100  # an input number needs 20; Python refuses 4,300+ digits with its own error


def _pairs(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise JSONError(f"duplicate key {k[:40]!r}")
        out[k] = v
    return out


def _constant(name):
    raise JSONError(f"{name} is not JSON")


def _int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise JSONError(f"an integer of {len(text)} digits (more than {MAX_INT_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONError(f"number {text[:30]} is out of range")
    return value


def loads(text: str | bytes):
    """json.loads refusing what RFC 8259 leaves open or Python would accept past it: duplicate
    keys, NaN/Infinity, out-of-range numbers, huge integers; a JSONError (a ValueError) says which."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_int,
                          parse_float=_float)
    except JSONError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONError(f"{exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise JSONError("nested too deeply") from None
    except ValueError as exc:  # e.g. bytes that are not UTF-8
        raise JSONError(str(exc)[:100]) from None
