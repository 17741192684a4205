"""Comments the migration makes untrue (`migrate.comments`): each `text: replacement` pair is
applied in the comments of the rule's translation units (TE: `// Statically-compiled general
kernel` above a kernel NVRTC now compiles). A text no comment of the units holds stops apply: the
rule names an edit its target no longer needs (the unit changed, or a hand edit made it already)."""

from __future__ import annotations

from pathlib import Path

from ...errors import ApplyError
from ..base import source
from ..base.changeset import ChangeSet, Edit

WHY = "a comment the migration makes untrue"


def edits(root: Path, spec, cs: ChangeSet) -> None:
    """One edit per occurrence of each text inside a comment (never in code or a string)."""
    wanted = {old.encode(): new for old, new in (spec.raw.get("comments") or {}).items()}
    if not wanted:
        return                                          # no unit read or walked for a rule without the key
    found = dict.fromkeys(wanted, 0)
    for unit in spec.translation_units:
        data = (root / unit).read_bytes()
        for node in source._walk(source.parse(data)):
            if node.type != "comment":
                continue
            text = data[node.start_byte:node.end_byte]
            for old, new in wanted.items():
                at = text.find(old)
                while at >= 0:
                    start = node.start_byte + at
                    cs.edits.append(Edit(unit, start, start + len(old), new, WHY))
                    found[old] += 1
                    at = text.find(old, at + len(old))
    missing = [old.decode() for old, count in found.items() if not count]
    if missing:
        said = ", ".join(f'"{text}"' for text in missing)
        raise ApplyError(f"no comment of migrate/translation_units says {said} (migrate/comments)",
                         where=", ".join(spec.translation_units),
                         hint="the units changed: drop the key, or give the text as the comment has it now")
