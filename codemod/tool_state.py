"""Where codemod keeps its own state for a library tree, outside what the tree's patch holds:
`<git dir>/codemod/` in a git work tree (never in `git status`), else `<root>/.codemod/`. The write
journal and lock (apply/journal.py) and the migration manifests (`manifests/`) live there."""

from __future__ import annotations

from pathlib import Path

MANIFESTS = "manifests"


def git_dir(root: Path) -> tuple[Path, Path] | None:
    """(git dir, work-tree top) of the repository holding root, found by walking up (a `.git` folder,
    or a `.git` file naming it as worktrees and submodules have); None outside git."""
    for top in (root, *root.parents):
        dot = top / ".git"
        if dot.is_dir():
            return dot, top
        if dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if text.startswith("gitdir:"):
                gd = (top / text[len("gitdir:"):].strip()).resolve()
                if gd.is_dir():
                    return gd, top
            return None
    return None


def state_dir(root: Path) -> tuple[Path, Path]:
    """(state folder, the top of the tree it serves: the git work tree's top or the library root)."""
    root = root.resolve()
    found = git_dir(root)
    if found:
        return found[0] / "codemod", found[1]
    return root / ".codemod", root


def manifest_path(root: Path, rule_id: str) -> Path:
    """The migration manifest of `rule_id` applied to the library at `root`: in the state folder,
    under the root's path inside the work tree (two libraries of one repository keep theirs apart)."""
    folder, top = state_dir(root)
    inside = root.resolve().relative_to(top)
    return folder.joinpath(MANIFESTS, *inside.parts, f"{rule_id}.json")


def manifest_paths(root: Path) -> list[Path]:
    """Every manifest recorded for the library at `root`, in a stable order."""
    folder = manifest_path(root, "x").parent
    return sorted(folder.glob("*.json")) if folder.is_dir() else []
