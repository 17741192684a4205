"""Texts the frontend slices from a file at clang's offsets: clang counts bytes, so a UTF-8
character earlier in the file (TE's comments hold `×` and `—`) must not shift them."""

from pathlib import Path

from codemod.analysis.analyze import analyze

SOURCE = """\
// Shared memory: B × E × W × sizeof(CompType) — async-loaded activations (UTF-8 on purpose).
template <typename C, bool kRow, bool kCol> __global__ void tile_kernel(C *p) {}
void api_tile(float *p, bool row, bool col) {
  using CType = float;  // ×2
  if (row) {
    if constexpr (sizeof(CType) == 4) {
      tile_kernel<CType, true, false><<<1, 32>>>(p);
    }
  } else {
    tile_kernel<CType, false, true><<<1, 32>>>(p);
  }
}
"""


def test_texts_after_non_ascii_characters_are_read_at_the_right_place(tmp_path: Path):
    (tmp_path / "t.cu").write_text(SOURCE, encoding="utf-8")
    a = analyze(tmp_path, [], use_cache=False)
    sites = sorted((s for s in a.sites if s.kernel == "tile_kernel"), key=lambda s: s.line)
    assert [s.line for s in sites] == [7, 10]
    assert [[ax.arg for ax in s.axes] for s in sites] == [["CType", "true", "false"], ["CType", "false", "true"]]
    assert {ax.domain[0] for s in sites for ax in s.axes if ax.param == "C"} == {"float"}
    assert sites[0].branches == ["row"]
    assert next(k for k in a.kernels if k.name == "tile_kernel").instantiations == 2
