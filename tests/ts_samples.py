"""Samples shared by the tree-sitter and cross-check tests (not a test module)."""

from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

# A statement-list macro argument whose `if`/`else` makes tree-sitter's error recovery split the
# template-ids of the two launches.
SPLIT = b"""void f(int *x) {
  SWITCH(dtype, T,
    if (n) {
      kern<false, T, CType><<<b, t, 0, s>>>(x);
    } else {
      kern<true, T, CType><<<b, t, 0, s>>>(x);
    });
}
"""


def rtc_launch_pos() -> tuple[int, int]:
    """Line and column of actlib's RTC layer calling cudaLaunchKernel on a runtime handle (they
    move when that layer changes)."""
    lines = (GOLDEN / "actlib" / "input" / "util" / "rtc.cpp").read_text().splitlines()
    return next((i, text.index("cudaLaunchKernel(") + 1) for i, text in enumerate(lines, 1)
                if "cudaLaunchKernel(" in text)
