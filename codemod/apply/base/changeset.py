"""What generate produces: new files, byte-range edits of library files and notes (a ChangeSet),
and the spellings every stage's edits share (the NVRTC guard macro, relative includes)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

RTC_GUARD = "__CUDACC_RTC__"
# the lines opening and closing a block hidden from NVRTC, as every stage writes (and finds) them
RTC_IFNDEF = f"#ifndef {RTC_GUARD}\n"
RTC_ENDIF = f"#endif  // {RTC_GUARD}\n"


def hidden_from_nvrtc(text: str) -> str:
    """`text` (whole lines) inside `#ifndef __CUDACC_RTC__`, its `#endif` saying so."""
    return f"{RTC_IFNDEF}{text}{RTC_ENDIF}"


@dataclass
class Edit:
    path: str
    start: int
    end: int
    text: str
    why: str
    layer: bool = False     # part of the NVRTC layer every rule shares (layer_part), not the rule's own
    cache: bool = False     # of the layer's disk cache (nvrtc_layer.cache): a patch of its own with --cache-diff


@dataclass
class ChangeSet:
    new_files: dict[str, str] = field(default_factory=dict)
    edits: list[Edit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # new files of the shared NVRTC layer (the stubs' runtime, the disk cache): with the layer edits,
    # a patch of their own that the rule's patch applies on top of (`apply --layer-diff`)
    layer_files: set[str] = field(default_factory=set)
    # of those, the disk cache's (its header, its tests): `apply --cache-diff` puts them and the cache's
    # edits in a patch of their own, between the layer's and the rule's
    cache_files: set[str] = field(default_factory=set)
    # the spellings the stubs' TypeName / FunctionName tables hold: (types, functions)
    domain: tuple = (frozenset(), frozenset())
    # migrate.launcher_values: the runtime flags each factory takes, and what stays a switch (report)
    launcher_values: list[str] = field(default_factory=list)
    # rules migrated after this one on the tree (a regeneration): its blocks at anchors shared with
    # theirs go back where they were (stacking.py)
    later: frozenset = frozenset()


def relative_include(target: str, including_file: str) -> str:
    """The `#include "..."` spelling of repo path `target` from repo path `including_file`: relative to
    the including file's folder, which a quoted include searches first whatever the -I list is."""
    return posixpath.relpath(target, posixpath.dirname(including_file) or ".")
