"""Launches found whose instantiations are not: CM1006 errors, so that an analysis that walked
past a family's roots never reads as "0 instantiations, exit 0".

A kernel launched in the analysed code but counted 0 times is an error, naming the launch, when
(1) the function holding the launch is reached (the analysis lost the arguments), (2) clang's walk
recorded the launch and nothing at all is counted, or (3) a TU that defines no entry point
includes the launch: whatever that TU compiles (a form no recognizer takes) was not seen.
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
    idle_tus = [t.file for t in tu_models if not t.entry_points and not t.instantiations]
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
                why = (f"{tus[0]}{' and %d other TUs' % (len(tus) - 1) if len(tus) > 1 else ''} include it but define "
                       "no entry point and no explicit instantiation the analysis recognises (a form no recognizer "
                       "takes, such as a launcher's address taken at namespace scope)")
            elif not total and walked:
                # NOTE: text-only evidence with nothing counted is also what a migrated tree looks
                # like (launches left in the legacy #if branch): only clang's walk makes it an error
                why = "no entry point of the analysed TUs reaches it, and nothing else is counted"
        if why:
            out.append(Diagnostic("CM1006", "error", f"{what} found, but no instantiation of it is counted: {why}",
                                  f, line))
    return out
