"""Driver plan -> driver source (codemod/templates/parity/driver.cu.j2 and a binding partial)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from .. import __version__
from ..apply.emit.generate import clang_format
from .plan import Plan

TEMPLATES = Path(__file__).resolve().parents[1] / "templates" / "parity"


def render_driver(plan: Plan, version: str = __version__) -> str:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    text = env.get_template("driver.cu.j2").render(plan=plan, version=version)
    return clang_format(text, "parity_driver.cu")
