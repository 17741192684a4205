"""Lines a migration's pull requests add, one commit per PR: `python scripts/pr_lines.py REPO > F.json`.

For every commit after the first (the base): lines added; of those the moved ones, as git's own
move detection finds them (`git show --color-moved=blocks --color-moved-ws=allow-indentation-change`,
what a reviewer reads with `git diff --color-moved`: blocks of at least 20 alphanumeric characters
that the same commit removes elsewhere, re-indented or not, blank and brace lines inside them
included); reviewable = added - moved; and the files adding the most lines. `moved_by_text` is the
older, stricter count kept beside it: an added line whose stripped text (longer than 3 characters)
the same commit removes elsewhere, one for one."""
import collections
import json
import re
import subprocess
import sys

# the colours git gives moved and other added lines, set so that they can be told apart
_COLOURS = ["-c", "color.diff.new=green", "-c", "color.diff.newMoved=blue", "-c", "color.diff.newMovedAlternative=blue"]
_ADDED = re.compile(r"^((?:\x1b\[[0-9;]*m)*)\+(?!\+\+)")


def moved_by_git(repo: str, commit: str) -> tuple[int, int]:
    """(added, moved) lines of `commit` by git's move detection."""
    out = subprocess.run(["git", *_COLOURS, "-C", repo, "show", "--color=always", "--color-moved=blocks",
                          "--color-moved-ws=allow-indentation-change", "--format=", "-U0", commit],
                         capture_output=True, text=True, check=True).stdout
    added = moved = 0
    for line in out.split("\n"):
        m = _ADDED.match(line)
        if m and not re.match(r"^(?:\x1b\[[0-9;]*m)*\+\+\+ ", line):
            added += 1
            moved += "34m" in m.group(1)          # blue: a moved line
    return added, moved


def main(repo: str) -> list[dict]:
    revs = subprocess.run(["git", "-C", repo, "log", "--reverse", "--format=%H %s"], capture_output=True,
                          text=True).stdout.split("\n")
    out = []
    for line in revs[1:]:
        if not line:
            continue
        h, name = line.split(" ", 1)
        diff = subprocess.run(["git", "-C", repo, "show", "--format=", "-U0", h], capture_output=True, text=True).stdout
        added, removed = [], collections.Counter()
        files = collections.Counter()
        cur = None
        for l in diff.split("\n"):
            if l.startswith("+++ "):
                cur = l[6:]
                continue
            if l.startswith("--- "):
                continue
            if l.startswith("+"):
                added.append(l[1:].strip())
                files[cur] += 1
            elif l.startswith("-"):
                removed[l[1:].strip()] += 1
        by_text = 0
        for a in added:
            if len(a) > 3 and removed[a] > 0:
                removed[a] -= 1
                by_text += 1
        total, moved = moved_by_git(repo, h)
        assert total == len(added), (h, total, len(added))
        out.append(dict(commit=name, added=len(added), moved=moved, reviewable=len(added) - moved,
                        moved_by_text=by_text, top=files.most_common(6)))
    return out


if __name__ == "__main__":
    json.dump(main(sys.argv[1]), sys.stdout, indent=1)
