"""Lines a migration's pull requests add, one commit per PR: `python scripts/pr_lines.py REPO > F.json`.

For every commit after the first (the base): lines added, of those the moved ones (an added line
whose text, stripped and longer than 3 characters, the same commit removes elsewhere: device code
extracted into `*_kernels.cuh`, definitions moved into a header both builds include), reviewable =
added - moved, and the files adding the most lines."""
import subprocess, sys, collections, json
repo = sys.argv[1]
revs = subprocess.run(["git", "-C", repo, "log", "--reverse", "--format=%H %s"], capture_output=True, text=True).stdout.split("\n")
out = []
for line in revs[1:]:
    if not line: continue
    h, name = line.split(" ", 1)
    diff = subprocess.run(["git", "-C", repo, "show", "--format=", "-U0", h], capture_output=True, text=True).stdout
    added, removed = [], collections.Counter()
    files = collections.Counter()
    cur = None
    for l in diff.split("\n"):
        if l.startswith("+++ "): cur = l[6:]; continue
        if l.startswith("--- "): continue
        if l.startswith("+"): added.append(l[1:].strip()); files[cur] += 1
        elif l.startswith("-"): removed[l[1:].strip()] += 1
    moved = 0
    for a in added:
        if len(a) > 3 and removed[a] > 0:
            removed[a] -= 1; moved += 1
    out.append(dict(commit=name, added=len(added), moved=moved, reviewable=len(added) - moved,
                    top=files.most_common(6)))
json.dump(out, sys.stdout, indent=1)
