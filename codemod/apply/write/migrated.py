"""A migrated tree: its manifest (kept outside the tree, `tool_state.manifest_path`; never read from
the tree), the content checks against it, the recognition of a migration by its generated code when
the manifest is gone, and the un-migrated texts `apply --update` regenerates from (docs/apply.md,
Migrated trees). Every path a manifest names is checked against the tree before it is read or
written (tool_state.library_file)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from ... import strict_json
from ...errors import ApplyError
from ...tool_state import contained, library_file, make_folder, manifest_path, manifest_paths, state_dir
from .journal import atomic_write, file_sha256, sha256
from ..emit.texts import library_text

class Unmigratable(ApplyError):
    """The tree cannot be un-migrated to regenerate its migration (a merge conflict)."""


LEGACY_NAME = "codemod_manifest.json"   # in <output_dir>, where codemod before 0.2 wrote it: ignored
STUBS = "kernels.h"                      # every migration generates <output_dir>/kernels.h


def record(files: dict[str, tuple[str | None, str]], manifest: str, layer: dict | None = None) -> str:
    """The manifest with its `files` key filled: path -> {before, after} sha256 (before: null for a
    file the migration creates), and `edited`: path -> {before, after} text of each library file the
    migration edits (what `apply --update` un-migrates with a three-way merge). `layer`: the shared
    NVRTC layer's part when this migration brought it (emission.Emission.layer), recorded as `layer`:
    path -> the text after the layer part (null for a file it creates): what stays when the rule is
    regenerated under rules stacked on the layer (unmigrated)."""
    doc = json.loads(manifest)
    if layer:
        doc["layer"] = {path: None if before is None else after for path, (before, after) in sorted(layer.items())}
    doc["files"] = {path: {"before": sha256(None if before is None else before.encode()),
                           "after": sha256(after.encode())}
                    for path, (before, after) in sorted(files.items())}
    doc["edited"] = {path: {"before": before, "after": after}
                     for path, (before, after) in sorted(files.items()) if before is not None}
    return strict_json.dumps(doc, "the migration manifest", indent=1) + "\n"


def write(root: Path, rule_id: str, text: str) -> Path:
    """Store the manifest outside the tree (whole or not at all); its path."""
    path = manifest_path(root, rule_id)
    try:
        make_folder(path.parent, state_dir(root)[0])
        atomic_write(path, text.encode())
    except OSError as exc:  # disk full, read-only state folder: nothing of the tree written yet
        raise ApplyError(f"cannot store the migration's manifest: {exc.strerror or exc}", where=str(path),
                         hint="nothing written; free space or fix the folder, then write again") from None
    return path


def find(root: Path, spec) -> tuple[Path, str, dict] | None:
    """(path, how to name it, manifest) of the rule's migration of this tree, kept outside the tree;
    None when there is none (or the one found is another rule's). A manifest reached through a
    symlink of the state folder, or not a regular file, is an ApplyError."""
    path = manifest_path(root, spec.rule_id)
    folder = state_dir(root)[0]
    try:
        contained(folder, path.relative_to(folder).as_posix())
    except ValueError as exc:
        raise ApplyError(f"not a manifest codemod wrote: {exc}", where=str(path),
                         hint="remove it: `codemod apply --update` regenerates it from the migrated tree") from None
    if path.is_file():
        doc = read_manifest(path, str(path))
        if doc.get("rule") == spec.rule_id:
            return path, str(path), doc
    return None


def ignored_in_tree(root: Path, spec) -> list[str]:
    """What an older codemod kept inside the tree and this one ignores (state that directs writes is
    never read from the tree), each said once: `<output_dir>/codemod_manifest.json` and `.codemod/`."""
    notes = []
    legacy = f"{spec.output_dir}/{LEGACY_NAME}"
    if os.path.lexists(root / legacy):
        notes.append(f"{legacy} is ignored: a manifest inside the tree is never read (an older codemod wrote "
                     "it there; `codemod apply --write` keeps the manifest outside the tree, and `--check`/"
                     "`--update` use git's record of the migration without one)")
    if os.path.lexists(root / ".codemod"):
        notes.append(".codemod/ is ignored: codemod keeps its state outside the tree (docs/reliability.md); "
                     "remove it once no older codemod uses this tree")
    return notes


def _manifest_path(root: Path, path, where: str) -> Path:
    """A manifest's path, checked against the tree (tool_state.library_file); ApplyError otherwise."""
    try:
        return library_file(root, path)
    except ValueError as exc:
        raise ApplyError(f"the migration's record names a path codemod may not use: {exc}", where=where,
                         hint="each must be a regular file inside the tree, reached through no symlink; a stored "
                              "manifest can be removed (`codemod apply --update` regenerates it)") from None


def recognised(root: Path, spec) -> str | None:
    """The generated stubs header of this rule's migration, when the tree holds one:
    `<output_dir>/kernels.h` declaring the rule's namespace, so a migrated tree is recognised
    without its manifest. None otherwise."""
    path = root / spec.output_dir / STUBS
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    names = spec.namespace.strip(":").split("::")
    nested = r"\s*\{\s*".join(rf"namespace\s+{re.escape(n)}" for n in names)
    if re.search(rf"\bnamespace\s+{re.escape('::'.join(names))}\s*\{{", text) or re.search(rf"\b{nested}\s*\{{", text):
        return f"{spec.output_dir}/{STUBS}"
    return None


def read_manifest(path: Path, where: str) -> dict:
    """The manifest as a dict; a file that is not a JSON object is an ApplyError (not a traceback)."""
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise ApplyError(f"unreadable manifest: {exc}", where=where,
                         hint="remove it: `codemod apply --update` regenerates it from the migrated tree") from None
    if not isinstance(doc, dict):
        raise ApplyError(f"the manifest is not a JSON object (found {type(doc).__name__})", where=where,
                         hint="remove it: `codemod apply --update` regenerates it from the migrated tree")
    return doc


def check(root: Path, doc: dict, where: str, others: list[dict] | None = None) -> tuple[list[str], str]:
    """(problems, note) of a migrated tree: a generated file missing or not holding what apply wrote,
    an edited file (launch sites, CMake, guards) still holding its original content. An edited file
    changed since the migration is fine (normal development); the note counts those, and a file a
    rule stacked later (`others`: other_manifests, read here when not given) edited from what this
    one wrote is fine too. A manifest without `files` (written before they were recorded) cannot be
    checked: the note says so."""
    recorded = doc.get("files")
    if recorded is None:
        return [], " (written by an older codemod: no file hashes, content not checked)"
    if not isinstance(recorded, dict):
        raise ApplyError("the manifest's `files` is not an object", where=where,
                         hint="remove it: `codemod apply --update` regenerates it from the migrated tree")
    problems, later = [], 0
    stacked = _stacked_edits(other_manifests(root, doc.get("rule")) if others is None else others)
    for path, hashes in sorted(recorded.items()):
        if not isinstance(hashes, dict):
            raise ApplyError(f"the manifest's `files` entry {path!r} is malformed", where=where,
                             hint="remove it: `codemod apply --update` regenerates it from the migrated tree")
        current = file_sha256(_manifest_path(root, path, where))
        if current == hashes.get("after"):
            continue
        if current is not None and _edited_later(stacked.get(path, {}), hashes.get("after"), current):
            continue            # a rule applied after this one edited the file from what this one wrote
        if hashes.get("before") is None:
            problems.append(f"{path} (missing)" if current is None else f"{path} (differs from what apply generated)")
        elif current == hashes.get("before"):
            problems.append(f"{path} (not rewritten: still the original)")
        elif current is None:
            problems.append(f"{path} (missing)")
        else:
            later += 1
    note = f" ({later} edited file(s) changed since the migration: not checked)" if later else ""
    return problems, note


def other_manifests(root: Path, rule_id) -> list[dict]:
    """The stored manifests of this tree's other rules, each a dict with its `rule` (unreadable ones
    skipped: the rule they record checks them). Read once per apply: check() and later_rules()
    take them."""
    out = []
    for path in manifest_paths(root):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("rule"), str) and doc["rule"] != rule_id:
            out.append(doc)
    return out


def _stacked_edits(others: list[dict]) -> dict[str, dict[str, str]]:
    """path -> {hash before -> hash after} of the files the other rules' manifests record: the edits
    of the rules stacked on this one, to follow a file from one rule's text to the next."""
    out: dict[str, dict[str, str]] = {}
    for other in others:
        files = other.get("files")
        if not isinstance(files, dict):
            continue
        for p, h in files.items():
            if isinstance(h, dict) and isinstance(h.get("before"), str) and isinstance(h.get("after"), str):
                out.setdefault(p, {})[h["before"]] = h["after"]
    return out


def _edited_later(steps: dict[str, str], written, current: str) -> bool:
    """Whether `current` is where the stacked rules' edits (_stacked_edits) lead from `written`."""
    seen = set()
    while written in steps and written not in seen:
        seen.add(written)
        written = steps[written]
        if written == current:
            return True
    return False


def untouched(root: Path, doc: dict) -> bool:
    """Whether the tree holds none of the migration a manifest records (each file it created absent,
    each file it edited at its original content): a manifest stored before a write that was then
    refused or rolled back, which describes no migration of this tree."""
    recorded = doc.get("files")
    if not isinstance(recorded, dict) or not recorded:
        return False
    for path, hashes in recorded.items():
        try:
            target = library_file(root, path)
        except ValueError:
            return False                  # check() names it
        if not isinstance(hashes, dict) or file_sha256(target) != hashes.get("before"):
            return False
    return True


# --- un-migrating (apply --update) ------------------------------------------------------------------

def later_rules(root: Path, rule_id: str, others: list[dict] | None = None) -> frozenset[str]:
    """The rules migrated on this tree after `rule_id`: those whose stored manifest records, as the
    text a file had before their edit, `rule_id`'s block in it (its mark, stacking.MARK). What
    a regeneration of `rule_id` needs to put its blocks back among theirs (stacking.py)."""
    from ..base import stacking

    marks = (stacking.mark(rule_id),)
    out = set()
    for doc in other_manifests(root, rule_id) if others is None else others:
        other, edited = doc["rule"], doc.get("edited")
        if not isinstance(edited, dict):
            continue
        if any(isinstance(e, dict) and isinstance(e.get("before"), str) and any(m in e["before"] for m in marks)
               for e in edited.values()):
            out.add(other)
    return frozenset(out)


def unmigrated(root: Path, spec, doc: dict | None, later: frozenset[str] | None = None, layer_of=None
               ) -> tuple[dict[str, str | None], str, frozenset[str]]:
    """(path -> text of the tree as it would be without the migration, None for a file the migration
    created; where the migration's record came from). Each edited file is a three-way merge: the
    migration's own change (written -> original) replayed onto the file as it is now, so changes
    made since the migration (a kernel's body or parameters) are kept. The record comes from the
    manifest (`edited`, `files`) or, without one, from git: the commit that added the stubs header and
    the regenerations committed after it (_from_git), undone last one first.
    `later`: later_rules(root, spec.rule_id) when the caller has it (read here otherwise); without a
    manifest, the rules whose blocks git shows added after the migration's commit (_later_from_git).
    Where rules are stacked later and this migration brought the shared NVRTC layer (their stubs
    call what it adds), the layer stays, as a tree whose layer landed first: a file the layer part
    created keeps its text now (a later rule may have grown it: rtc_stubs.h), a file it edited goes
    back to its text after the layer part, not before it. The layer part comes from the manifest's
    `layer`, or, without one, from `layer_of(first commit)`, as a migration of that commit's parent
    writes it.
    Returns (texts, where the record came from, the later rules)."""
    if later is None:
        later = later_rules(root, spec.rule_id)
    if doc is not None and isinstance(doc.get("edited"), dict) and isinstance(doc.get("files"), dict):
        where = str(manifest_path(root, spec.rule_id))
        created = [p for p, h in doc["files"].items() if isinstance(h, dict) and h.get("before") is None]
        edited = {}
        for p, e in doc["edited"].items():
            if not (isinstance(e, dict) and isinstance(e.get("before"), str) and isinstance(e.get("after"), str)):
                raise ApplyError(f"the manifest's `edited` entry {p!r} is not a before and after text", where=where,
                                 hint="remove it: `codemod apply --update` regenerates it from the migrated tree")
            edited[p] = [(e["before"], e["after"])]
        source, commit = "the manifest", None     # commit: the migration's commits, from git
    else:
        created, edited, source, commits = _from_git(root, spec)
        where, commit = source, commits
        later = later | _later_from_git(root, spec.rule_id, commits[0], edited)
    for p in [*created, *edited]:
        _manifest_path(root, p, where)      # written to the scratch copy, read from the tree: no way out
    # the hunk-by-hunk replay is for edits other rules stacked next to this one's (_merge)
    stacked = bool(later)
    # the NVRTC layer's part this migration brought, kept under the rules stacked on it
    layer = {}
    if stacked:
        layer = doc.get("layer") if commit is None else (layer_of(commit[0]) if layer_of and any(
            p in created for p in _shared_runtime(spec)) else None)
        layer = layer if isinstance(layer, dict) else {}
    out: dict[str, str | None] = {p: None for p in created}
    for path, steps in sorted(edited.items()):
        target = root / path
        if not target.is_file():
            raise ApplyError("the migration edited this file, but it is gone", where=path,
                             hint="restore it, then run `codemod apply --update` again")
        text = library_text(target.read_bytes(), path)      # CRLF kept: the recorded texts have it
        for i, (original, written) in reversed(list(enumerate(steps))):    # the last regeneration undone first
            if i == 0 and isinstance(layer.get(path), str):
                original = layer[path]      # back to the text after the layer part, not before it
            text = original if text == written else _merge(path, text, written, original, stacked)
        out[path] = text
    for path, after_layer in layer.items():
        if after_layer is None and out.get(path, "") is None and (root / path).is_file():
            out[path] = library_text((root / path).read_bytes(), path)     # created by the layer part: kept
    _moved_back(root, out, created, doc, commit)
    _moved_back(root, out, created, doc, commit, pairs=dict(spec.kernel_strings.get("move_to", {})))
    return out, source, frozenset(later)


def _shared_runtime(spec) -> tuple[str, ...]:
    """The stubs' runtime every rule of a library shares (rtc_stubs.h, rtc_kernel_calls.h): a
    migration that creates it brought the layer."""
    from ..emit.generate import kernel_calls_location, stubs_location

    try:
        return stubs_location(spec)[0], kernel_calls_location(spec)
    except (ApplyError, KeyError, TypeError):
        return ()


def _moved_back(root: Path, out: dict[str, str | None], created: list[str], doc: dict | None,
                commits: list[str] | None, pairs: dict[str, str] | None = None) -> None:
    """The kernels a migration moved from a unit into its `<unit>_kernels.cuh` (extract.py) go back
    into the un-migrated unit with the edits made to them since: each change of the header since
    the migration created it is replayed where its text occurs in the unit (a parameter or body
    edit in the extracted header is kept, never reverted by a regeneration). Without the header's
    created text (a manifest records only its hash) or where a change cannot be placed, an
    Unmigratable names the header. `pairs`: instead of the units' kernel headers, each replaced
    header's moved definitions (`kernel_strings.move_to`, shared_header.py): an edit of DIVUP in
    common_device.h goes back into common.h; definitions a later rule appended cannot, and refuse."""
    from ..plan.extract import header_path

    for unit, text in list(out.items()):
        if pairs is not None:
            header = pairs.get(unit)
        else:
            header = header_path(unit) if unit.endswith(".cu") else None
        if text is None or header not in created or not (root / header).is_file():
            continue
        now = (root / header).read_bytes().decode()
        if commits is not None:      # the header as the migration last wrote it (its last commit touching it)
            prefix = _git(root, "rev-parse", "--show-prefix").strip()
            last = _git(root, "log", "-n1", "--format=%H", "--no-walk=sorted", *commits, "--", header).strip()
            then = _git(root, "show", f"{last or commits[0]}:{prefix}{header}")
        else:
            recorded = doc.get("files", {}).get(header) if isinstance(doc, dict) else None
            if isinstance(recorded, dict) and recorded.get("after") == sha256(now.encode()):
                continue
            raise Unmigratable(f"{header} changed since the migration moved {unit}'s code into it, and the "
                               "manifest does not record the text it created", where=header,
                               hint="commit the migration and regenerate from git history (drop the stored "
                                    "manifest), or make the change in the kernels' new home after --update")
        if then == now:
            continue
        replayed = _replay_hunks(text, then, now)
        if replayed is None:
            raise Unmigratable(f"{header} changed since the migration moved {unit}'s code into it, and the "
                               "change cannot be placed in the unit they came from", where=header,
                               hint="regenerate before editing the moved kernels, or revert the migration and "
                                    "apply the rule again")
        out[unit] = replayed


def _git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    except OSError as exc:
        raise ApplyError(f"cannot run git: {exc.strerror}") from None
    if proc.returncode != 0:
        raise ApplyError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip().splitlines()[-1:] or ''}")
    return proc.stdout


def changed_since(root: Path, rev: str) -> dict[str, str | None]:
    """Every file git shows changed between `rev` and the work tree (committed or not), by its path
    relative to root (`../..` for one above it): its text at `rev`, None where `rev` lacks it."""
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    out: dict[str, str | None] = {}
    for line in _git(root, "diff", "--no-renames", "--name-status", rev, "--", ":/").splitlines():
        status, _, repo_path = line.partition("\t")
        rel = Path(os.path.relpath(top / repo_path, root.resolve())).as_posix()
        out[rel] = None if status.startswith("A") else _git(top, "show", f"{rev}:{repo_path}")
    return out


def _from_git(root: Path, spec) -> tuple[list[str], dict[str, list[tuple[str, str]]], str, list[str]]:
    """The migration as git recorded it: the commit that added `<output_dir>/kernels.h`, then each
    later commit on the way to HEAD that changed a file under `output_dir` (a regeneration committed
    on its own: the rest of a rule landed in a second pull request with `--only`, then `--update`).
    Returns the files those commits added (under root); for each file they modified under root or
    among the rule's files above it (migrate.repo_root: the docs page, the operator tests' CMake),
    its (text before, text committed) per commit, oldest first; where that came from; the commits."""
    stubs = f"{spec.output_dir}/{STUBS}"
    hint = ("keep the migration in its own commit, or restore the manifest "
            "(`codemod apply --write` stores it outside the tree)")
    try:
        first = _git(root, "log", "-n1", "--diff-filter=A", "--format=%H", "--", stubs).strip()
    except ApplyError:
        first = ""
    if not first:
        raise ApplyError(f"{stubs} is generated by rule {spec.rule_id}, but neither its manifest nor a git "
                         "commit adding it is there to regenerate the migration from", where=stubs, hint=hint)
    prefix = _git(root, "rev-parse", "--show-prefix").strip()
    top = Path(_git(root, "rev-parse", "--show-toplevel").strip())
    commits = [first, *_git(root, "log", "--reverse", "--format=%H", "--ancestry-path", f"{first}..HEAD",
                            "--", spec.output_dir).split()]
    # the rule's files above the root, as the repository spells them (they may sit outside `.`)
    above = {}
    for rel in spec.repo_files():
        at = (root.resolve() / rel).resolve()
        if at.is_relative_to(top.resolve()) and not at.is_relative_to(root.resolve()):
            above[at.relative_to(top.resolve()).as_posix()] = rel
    created: list[str] = []
    edited: dict[str, list[tuple[str, str]]] = {}
    for commit in commits:
        for line in _git(root, "diff-tree", "--no-commit-id", "-r", "--name-status", commit).splitlines():
            status, _, repo_path = line.partition("\t")
            if repo_path.startswith(prefix):
                path = repo_path[len(prefix):]
            elif repo_path in above:
                path = above[repo_path]
            else:
                continue                                   # not the library's, nor the rule's
            if status == "A" and not path.startswith("../"):
                created.append(path)
            elif status == "M":
                if path not in created:                   # a file a regeneration rewrote: created all the same
                    edited.setdefault(path, []).append((_git(root, "show", f"{commit}^:{repo_path}"),
                                                        _git(root, "show", f"{commit}:{repo_path}")))
            else:
                raise ApplyError(f"the migration's commit {commit[:12]} {status!r}s {path}: only added and "
                                 "modified files can be un-migrated", where=path, hint=hint)
    where = f"git commit {first[:12]}" + (f" and {len(commits) - 1} regeneration(s) after it" if len(commits) > 1 else "")
    return created, edited, where, commits


def _later_from_git(root: Path, rule_id: str, commit: str, edited: dict[str, tuple[str, str]]) -> frozenset[str]:
    """The rules whose blocks sit in a file the migration's `commit` edited and whose first block there
    came in a commit after it (git log -S of the block's mark): what the manifests of stacked rules
    tell (later_rules) when there are none."""
    from ..base import stacking

    out = set()
    for path in edited:
        target = root / path
        if not target.is_file():
            continue
        text = target.read_bytes().decode(errors="replace")
        rules = {m.group(1) for m in stacking.MARK.finditer(text)}
        for other in sorted(rules - {rule_id} - out):
            added = _git(root, "log", "--format=%H", "-S", stacking.mark(other), "--", path).split()
            if not added or added[-1] == commit:
                continue
            probe = subprocess.run(["git", "merge-base", "--is-ancestor", commit, added[-1]], cwd=root,
                                   capture_output=True)
            if probe.returncode == 0:
                out.add(other)
    return frozenset(out)


def _merge(path: str, current: str, written: str, original: str, stacked: bool = False) -> str:
    """`current` with the change written -> original applied: git merge-file, and where that reports
    a conflict on a tree other rules migrated after this one (`stacked`: their lines right next to
    this migration's, e.g. an entry inserted at the same anchor of a docs page or a sentence
    appended to the same line), each hunk of the change replayed on its own at the one place its
    written text and context occur (`_replay_hunks`). Otherwise, or when a hunk is found nowhere or
    twice, an Unmigratable naming the file. (Not on a tree of one rule: there a conflict is the
    library's own later work next to a block, e.g. a line appended after the CMake block at the end
    of the file, which a regeneration would put after that work: reported as pending although
    nothing is out of date.)"""
    with tempfile.TemporaryDirectory(prefix="codemod-merge-") as tmp:
        names = []
        for name, text in (("current", current), ("written", written), ("original", original)):
            p = Path(tmp) / name
            p.write_bytes(text.encode())
            names.append(str(p))
        try:
            # bytes: text mode would turn a CRLF file's line ends into LF
            proc = subprocess.run(["git", "merge-file", "-p", "--quiet", *names], capture_output=True)
        except OSError as exc:
            raise ApplyError(f"cannot run git merge-file: {exc.strerror}", where=path) from None
    if proc.returncode == 0:
        return proc.stdout.decode()
    replayed = _replay_hunks(current, written, original) if stacked else None
    if replayed is None:
        raise Unmigratable("changes made since the migration touch the lines it rewrote; cannot un-migrate "
                           "this file to regenerate the migration", where=path,
                           hint="move those changes out of the rewritten lines, or revert the migration and apply "
                                "the rule again")
    return replayed


_CONTEXT_LINES = 3


def _hunks(written: str, original: str) -> list[tuple[str, str, str, str]]:
    """The change written -> original as (before, old, new, after): `old` the written text a hunk
    replaces with `new`, `before`/`after` up to _CONTEXT_LINES lines of written text around it. A
    one-line change is narrowed to the characters that differ (the rest of the line joins the
    context), so that a sentence appended to a line another change also appended to is found."""
    import difflib

    wl, ol = written.splitlines(keepends=True), original.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wl, ol, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        before = "".join(wl[max(0, i1 - _CONTEXT_LINES):i1])
        after = "".join(wl[i2:i2 + _CONTEXT_LINES])
        old, new = "".join(wl[i1:i2]), "".join(ol[j1:j2])
        if i2 - i1 == 1 and j2 - j1 == 1:
            n = 0
            while n < min(len(old), len(new)) and old[n] == new[n]:
                n += 1
            m = 0
            while m < min(len(old), len(new)) - n and old[-1 - m] == new[-1 - m]:
                m += 1
            before, after = before + old[:n], old[len(old) - m:] + after
            old, new = old[n:len(old) - m], new[n:len(new) - m]
        out.append((before, old, new, after))
    return out


def _replay_hunks(current: str, written: str, original: str) -> str | None:
    """Each hunk of written -> original applied to `current` where its written text occurs exactly
    once with its context (both sides, else all of the context before it, else all after it, else
    the sentence before it on its line: a later rule may have dropped an earlier sentence of the line
    the hunk's sentence was appended to); None when a hunk is found nowhere or more than once, or two
    hunks overlap."""
    edits = []
    for before, old, new, after in _hunks(written, original):
        at = None
        line = before[before.rfind("\n") + 1:]
        sentence = line[line.rfind(". ") + 2:] if ". " in line else line
        # the sentence only inside a line: an empty one would place the hunk by its own text alone
        tries = ((before, after), (before, ""), ("", after)) + (((sentence, ""),) if sentence.strip() else ())
        for prefix, suffix in tries:
            needle = prefix + old + suffix
            if not needle or (not prefix and not suffix and not old):
                continue
            first = current.find(needle)
            if first >= 0 and current.find(needle, first + 1) < 0:
                at = first + len(prefix)
                break
        if at is None:
            return None
        edits.append((at, at + len(old), new))
    edits.sort()
    for (_, end, _), (start, _, _) in zip(edits, edits[1:]):
        if start < end:
            return None
    for start, end, new in reversed(edits):
        current = current[:start] + new + current[end:]
    return current
