"""The kernel-use recognizers: one small named function per launch form or host use of a kernel,
registered in the single table `RECOGNIZERS` that the TU walk (`clang_index.TUIndexer`) consults.

A recognizer is `fn(ix, cur, scope, branches) -> bool`: `ix` is the `TUIndexer` (its matcher
vocabulary: `kernel_ref`, `kernel_refs`, `var_ref`, `resolve_kernel_expr`, `ref_text`, `site_base`,
`record`, `decl_key`, `lambdas`, `lambda_params`, `queue_function`), `cur` the cursor the walk is
at, `scope` the bindings visible there and `branches` the runtime conditions on its path. It
returns True when it consumed the cursor; the walk then asks no later recognizer of the same hook
(for `call`, that also means the call is not a call-graph edge). Hooks say where the walk asks:

| hook | cursor |
|---|---|
| `call` | a `CALL_EXPR` in a walked function body |
| `local_var` | a `VAR_DECL` in a declaration statement of a walked function |
| `assignment` | a `BINARY_OPERATOR` in a walked function body |
| `namespace_var` | a `VAR_DECL` at namespace scope of a project header or TU |

To recognize a new form, write the function in a module of this package and add one
`Recognizer` line to the table (order matters only within a hook: first match wins). A
recognizer may record and still return False, to let later ones (and the call-graph edge) see
the cursor too. `end_of_function` hooks (`END_OF_FUNCTION`) run on each function's facts after
its walk; `MAIN_FILE` hooks (`fn(ix)`) run once per parse after the namespace-scope declarations,
before the walk, on what no cursor shows (explicit instantiations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import instantiations, lambdas, launches, registries, tags, variables, wrappers

HOOKS = ("call", "local_var", "assignment", "namespace_var")


@dataclass(frozen=True)
class Recognizer:
    name: str
    hook: str
    fn: Callable


RECOGNIZERS: list[Recognizer] = [
    Recognizer("triple_chevron_launch", "call", launches.triple_chevron_launch),
    Recognizer("launch_api", "call", launches.launch_api),
    Recognizer("use_api", "call", launches.use_api),
    Recognizer("generic_lambda_call", "call", lambdas.generic_lambda_call),
    Recognizer("kernel_param_to_helper", "call", lambdas.kernel_param_to_helper),
    Recognizer("kernel_argument", "call", wrappers.kernel_argument),
    Recognizer("tag_lambda_argument", "call", tags.tag_lambda_argument),
    Recognizer("parameter_call", "call", tags.parameter_call),
    Recognizer("factory_construction", "call", registries.factory_construction),
    Recognizer("dependent_member_call", "call", registries.dependent_member_call),
    Recognizer("kernel_variable", "local_var", variables.kernel_variable),
    Recognizer("generic_lambda", "local_var", lambdas.generic_lambda),
    Recognizer("kernel_assignment", "assignment", variables.kernel_assignment),
    Recognizer("registration", "namespace_var", registries.registration),
    Recognizer("kernel_table", "namespace_var", variables.kernel_table),
]

# fn(function facts) after the walk of each function: resolutions that need the whole body.
END_OF_FUNCTION: list[Callable] = [lambdas.bind_lambda_sites]

# fn(ix) once per parse, before the walk: forms libclang gives no cursor for. `template void
# f<T>(...);` and `template __global__ void k<T>(...);` become roots of the walk and domains.
MAIN_FILE: list[Callable] = [instantiations.explicit_instantiations]

_BY_HOOK: dict[str, list[Recognizer]] = {}


def by_hook(hook: str) -> list[Recognizer]:
    got = _BY_HOOK.get(hook)
    if got is None:
        got = _BY_HOOK[hook] = [r for r in RECOGNIZERS if r.hook == hook]
    return got


def recognize(ix, hook: str, cur, scope, branches) -> bool:
    """Ask the hook's recognizers in table order; True when one consumed `cur`."""
    for r in by_hook(hook):
        if r.fn(ix, cur, scope, branches):
            return True
    return False
