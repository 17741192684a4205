"""Launches found whose instantiations are not: CM1006 errors, so that an analysis that walked
past a family's roots never reads as "0 instantiations, exit 0".

A kernel launched in the analysed code but counted 0 times is an error, naming the launch, when
(1) the function holding the launch is reached (the analysis lost the arguments), or (2) a TU that
defines no entry point includes the launch and names templates of other files at namespace scope:
whatever instantiates them there (a form no recognizer takes) was not seen. A TU naming none
compiles nothing of them: a launcher nothing instantiates is dead code, as nvcc sees it.
A kernel launched only from functions outside the analysed TUs (TE's amax kernels, called from
`recipe/`) is none of these and stays an `unreached` entry.
"""

from __future__ import annotations

from typing import Callable

from ..model import Diagnostic, Kernel, Site, TranslationUnit, Unreached

_LAUNCH_REASONS = ("no_entry_point", "unrecognised_form")


def uncounted_launches(kernels: list[Kernel], sites: list[Site], unreached: list[Unreached],
                       tu_models: list[TranslationUnit], includes: Callable[[str], set[str]],
                       namespace_refs: dict[str, list[str]]) -> list[Diagnostic]:
    """`namespace_refs`: TU -> the function and kernel templates of other files its main file names
    at namespace scope (recognizers/instantiations.py)."""
    counted = {k.id for k in kernels if k.instantiations}
    # kernel -> (file, line, in a reached function, recorded by clang's walk)
    launches: dict[str, list[tuple[str, int, bool, bool]]] = {}
    for s in sites:
        if s.kind != "launch":
            continue
        for k in s.kernels or ([s.kernel] if s.kernel else []):
            launches.setdefault(k, []).append((s.file, s.line, s.note is None, True))
    for u in unreached:
        if u.reason in _LAUNCH_REASONS and u.kernel not in launches:
            for w in u.where:
                f, _, line = w.rpartition(":")
                if f and line.isdigit():
                    launches.setdefault(u.kernel, []).append((f, int(line), False, False))
    # a TU with no entry point that names templates of other files at namespace scope: something
    # there instantiates them that no recognizer read. One that names none compiles nothing of
    # them (TE's norm units without their legacy option: the launchers are dead templates).
    idle_tus = [t.file for t in tu_models if not t.entry_points and not t.instantiations and namespace_refs.get(t.file)]
    out = []
    for kernel, where in sorted(launches.items()):
        if kernel in counted:
            continue
        f, line, _, walked = where[0]
        at = ", ".join(f"{wf}:{wl}" for wf, wl, _, _ in where[:3]) + (" …" if len(where) > 3 else "")
        what = f"launch of {kernel} at {at}" if walked else f"{kernel}, launched or named at {at},"
        why = None
        if any(reached for _, _, reached, _ in where):
            why = "the function launching it is reached, yet no template-argument tuple was bound"
        else:
            tus = [tu for tu in idle_tus if any(wf == tu or wf in includes(tu) for wf, _, _, _ in where)]
            if tus:
                refs = ", ".join(namespace_refs[tus[0]][:3])
                why = (f"{tus[0]}{' and %d other TUs' % (len(tus) - 1) if len(tus) > 1 else ''} include it and name "
                       f"{refs} at namespace scope, but define no entry point and no explicit instantiation the "
                       "analysis recognises (a form no recognizer takes, such as a launcher's address taken there)")
        if why:
            out.append(Diagnostic("CM1006", "error", f"{what} found, but no instantiation of it is counted: {why}",
                                  f, line))
    return out
