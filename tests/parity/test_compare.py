"""Byte comparison of driver dumps, on synthetic buffers written in the driver's record format."""

from __future__ import annotations

import io

import pytest

from codemod.errors import ParseError
from codemod.parity.compare import CaseOutput, compare_streams, read_dump, write_case


def _dump(cases: list[CaseOutput]) -> io.BytesIO:
    f = io.BytesIO()
    for c in cases:
        write_case(f, c)
    f.seek(0)
    return f


def _case(data: bytes, ok: bool = True, msg: str = "", shape: str = "64x256", first_us: int = 0) -> CaseOutput:
    return CaseOutput(f"lib_gelu|bf16|fp8e4m3|{shape}|edge", ok, msg, first_us,
                      {"output.data": data, "output.amax": b"\x00\x00\x80\x3f"} if ok else {})


def _compare(a: list[CaseOutput], b: list[CaseOutput]):
    return compare_streams(read_dump(_dump(a)), read_dump(_dump(b)))


def test_round_trip_keeps_every_field():
    c = _case(bytes(range(200)), first_us=1234)
    (back,) = list(read_dump(_dump([c])))
    assert back == c


def test_equal_dumps_count_cases_and_bytes():
    a = [_case(b"\x01\x02\x03"), _case(b"", ok=False, msg="block scaling needs rows and cols divisible by 32",
                                       shape="33x97")]
    combos, mismatches, _ = _compare(a, a)
    assert mismatches == []
    (r,) = combos.values()
    assert (r.cases, r.ran, r.equal, r.rejected, r.bytes_compared) == (2, 1, 1, 1, 7)
    assert r.rejections == ["block scaling needs rows and cols divisible by 32"]


def test_one_flipped_bit_is_reported_with_its_offset():
    a, b = bytearray(1000), bytearray(1000)
    b[777] = 0x80  # -0.0 vs +0.0 in the last byte of a float: a value compare would miss it
    combos, mismatches, _ = _compare([_case(bytes(a))], [_case(bytes(b))])
    assert len(mismatches) == 1
    assert mismatches[0].what == "output.data"
    assert "1 of 1000 bytes differ, first at offset 777: 0x00 vs 0x80" == mismatches[0].detail
    assert next(iter(combos.values())).equal == 0


def test_nan_payloads_compare_by_bits():
    quiet, other = b"\x00\x00\xc0\x7f", b"\x01\x00\xc0\x7f"  # two NaNs
    _, mismatches, _ = _compare([_case(quiet)], [_case(other)])
    assert [m.what for m in mismatches] == ["output.data"]


def test_status_message_and_buffer_set_differences():
    _, m, _ = _compare([_case(b"x")], [_case(b"", ok=False, msg="boom")])
    assert m[0].what == "status" and "rejected: boom" in m[0].detail
    # Both reject, wording differs (the migrated layer names the variant): reported, not a mismatch.
    combos, m, messages = _compare([_case(b"", ok=False, msg="invalid argument")],
                                   [_case(b"", ok=False, msg="cudaLaunchKernel(k<float>): invalid argument")])
    assert m == [] and messages[0].what == "message"
    assert next(iter(combos.values())).rejected == 1
    extra = _case(b"x")
    extra.buffers["output.scale_inv"] = b"\x00" * 4
    _, m, _ = _compare([_case(b"x")], [extra])
    assert m[0].what == "buffers"


def test_missing_case_and_size_difference():
    _, m, _ = _compare([_case(b"ab"), _case(b"cd", shape="1x320")], [_case(b"abc")])
    assert [x.what for x in m] == ["output.data", "case"]
    assert m[0].detail == "sizes differ: 2 vs 3 bytes"


def test_truncated_dump_is_a_parse_error():
    raw = _dump([_case(b"abcdef")]).getvalue()
    with pytest.raises(ParseError, match="truncated"):
        list(read_dump(io.BytesIO(raw[:-12])))
