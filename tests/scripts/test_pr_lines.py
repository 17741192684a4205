"""scripts/pr_lines.py: a block moved to another file (blank and brace lines inside it too) counts as
moved, a new line as reviewable; a short line that merely repeats a removed one elsewhere does not
make the new code moved."""
import importlib.util
import subprocess
from pathlib import Path

SPEC = importlib.util.spec_from_file_location("pr_lines", Path(__file__).resolve().parents[2] / "scripts" / "pr_lines.py")
pr_lines = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pr_lines)

BLOCK = """template <typename T>
__global__ void scale_kernel(const T *in, T *out, float scale, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;

  if (i < n) {
    out[i] = static_cast<T>(static_cast<float>(in[i]) * scale);
  }
}
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_a_moved_block_counts_once_and_new_lines_count(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "unit.cu").write_text('#include "common.h"\n\n' + BLOCK + "\nvoid launch() {}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "unit.cu").write_text('#include "common.h"\n#include "unit_kernels.cuh"\n\nvoid launch() {}\n')
    (repo / "unit_kernels.cuh").write_text("#pragma once\n\n" + BLOCK.replace("\n  ", "\n    "))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "extract")
    [c] = pr_lines.main(str(repo))
    assert c["added"] == 1 + 2 + BLOCK.count("\n")
    assert c["moved"] == BLOCK.count("\n")                   # re-indented, blank line and braces included
    assert c["reviewable"] == 3                              # the include, #pragma once and its blank line
    assert c["moved_by_text"] < c["moved"]                   # the stricter count misses the short lines
