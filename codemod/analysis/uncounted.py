"""Launches found whose instantiations are not: CM1006 errors, so that an analysis that walked
past a family's roots never reads as "0 instantiations, exit 0".

A kernel launched in the analysed code but counted 0 times is an error, naming the launch, when
(1) the function holding the launch is reached (the analysis lost the arguments), (2) nothing at
all is counted, or (3) a TU that defines no entry point includes the launch: whatever that TU
compiles (an instantiation list spelled by a macro, a form no recognizer takes) was not seen.
A kernel launched only from functions outside the analysed TUs (TE's amax kernels, called from
`recipe/`) is none of these and stays an `unreached` entry.
"""

from __future__ import annotations

from typing import Callable

from ..model import Diagnostic, Kernel, Site, TranslationUnit, Unreached

_LAUNCH_REASONS = ("no_entry_point", "unrecognised_form")


def uncounted_launches(kernels: list[Kernel], sites: list[Site], unreached: list[Unreached],
                       tu_models: list[TranslationUnit], includes: Callable[[str], set[str]]) -> list[Diagnostic]:
    counted = {k.id for k in kernels if k.instantiations}
    total = sum(k.instantiations for k in kernels)
    launches: dict[str, list[tuple[str, int, bool]]] = {}   # kernel -> (file, line, in a reached function)
    for s in sites:
        if s.kind != "launch":
            continue
        for k in s.kernels or ([s.kernel] if s.kernel else []):
            launches.setdefault(k, []).append((s.file, s.line, s.note is None))
    for u in unreached:
        if u.reason in _LAUNCH_REASONS and u.kernel not in launches:
            for w in u.where:
                f, _, line = w.rpartition(":")
                if f and line.isdigit():
                    launches.setdefault(u.kernel, []).append((f, int(line), False))
    idle_tus = [t.file for t in tu_models if not t.entry_points and not t.instantiations]
    out = []
    for kernel, where in sorted(launches.items()):
        if kernel in counted:
            continue
        f, line, _ = where[0]
        at = ", ".join(f"{wf}:{wl}" for wf, wl, _ in where[:3]) + (" …" if len(where) > 3 else "")
        why = None
        if any(reached for _, _, reached in where):
            why = "the function launching it is reached, yet no template-argument tuple was bound"
        else:
            tus = [tu for tu in idle_tus if any(wf == tu or wf in includes(tu) for wf, _, _ in where)]
            if tus:
                why = (f"{tus[0]}{' and %d other TUs' % (len(tus) - 1) if len(tus) > 1 else ''} include it but define "
                       "no entry point and no explicit instantiation the analysis recognises (one spelled by a "
                       "macro, or a form no recognizer takes)")
            elif not total:
                why = "no entry point of the analysed TUs reaches it, and nothing else is counted"
        if why:
            out.append(Diagnostic("CM1006", "error", f"launch of {kernel} at {at} found, but no instantiation of it "
                                  f"is counted: {why}", f, line))
    return out
