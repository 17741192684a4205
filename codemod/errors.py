"""The tool's own error hierarchy: every user-facing failure is one of these, never a traceback."""

from __future__ import annotations


class CodemodError(Exception):
    """Base of the tool's errors. `where` is file:line when known; `hint` names the next step."""

    exit_code = 2

    def __init__(self, message: str, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def render(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f" ({self.hint})"
        return text


class UsageError(CodemodError):
    """Bad command-line input: a missing directory, an unknown target."""


class ParseError(CodemodError):
    """A source, log or compile database could not be read or parsed."""


class RuleError(CodemodError):
    """A rule file is missing, malformed or fails schema validation."""


class UnsupportedConstruct(CodemodError):
    """Code the tool does not understand; reported and left untouched."""


class ApplyError(CodemodError):
    """A migration could not be applied; the tree is left unchanged."""


class VerifyError(CodemodError):
    """Generated code failed to compile or check."""


class PartlyMigrated(ApplyError):
    """A tree holds a rule's manifest but not all of the migration it records (`--check`: pending)."""


class OutputError(CodemodError):
    """A result could not be written: its folder is missing, or it holds a value JSON cannot hold."""
