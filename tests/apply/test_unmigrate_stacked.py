"""`apply --update` of a rule on a tree where a later rule stacked its edits right next to the
first rule's (the same docs anchor, a sentence appended to the same line): the first rule's change is
taken out hunk by hunk (`migrated._merge`), and a real conflict is still refused."""

from __future__ import annotations

import pytest

from codemod.apply.write import migrated

ORIGINAL = """\
.. envvar:: NVTE_A

   :Description: A.

.. envvar:: NVTE_DISABLE_NVRTC

   :Description: Disable NVRTC. 

.. envvar:: NVTE_Z

   :Description: Z.
"""


def _rule(text: str, rule: str) -> str:
    """What one rule's docs edit does: an entry after NVTE_A's, a sentence on the switch's line."""
    entry = f".. envvar:: NVTE_{rule.upper()}_LEGACY\n\n   :Description: {rule} legacy.\n\n"
    text = text.replace(".. envvar:: NVTE_DISABLE_NVRTC", entry + ".. envvar:: NVTE_DISABLE_NVRTC", 1)
    line = [l for l in text.splitlines() if l.startswith("   :Description: Disable NVRTC.")][0]
    return text.replace(line, line + f" The {rule} kernels fall back.", 1)


def test_an_earlier_rule_is_taken_out_from_under_a_later_one():
    written = _rule(ORIGINAL, "activation")
    current = _rule(written, "router")                # a second rule applied on top
    assert migrated._merge("docs/envvars.rst", current, written, ORIGINAL, stacked=True) == _rule(ORIGINAL, "router")
    with pytest.raises(migrated.Unmigratable):     # one rule: a conflict is the library's own work
        migrated._merge("docs/envvars.rst", current, written, ORIGINAL)


def test_an_earlier_rule_is_taken_out_after_a_later_one_dropped_a_sentence_of_its_line():
    """TE's transpose rule drops "Existing transpose operations select their static fallback
    automatically." from the switch's line that activation appended its sentence to: the line's
    start is no longer activation's context; the sentence before activation's is."""
    original = ORIGINAL.replace("Disable NVRTC. ", "Disable NVRTC. Transposes fall back. Others do not.")
    written = _rule(original, "activation")
    dropped = _rule(written, "transpose").replace("Transposes fall back. ", "")
    assert migrated._merge("docs/envvars.rst", dropped, written, original, stacked=True) == \
        _rule(original, "transpose").replace("Transposes fall back. ", "")


def test_git_merge_file_alone_refuses_the_stacked_edits(tmp_path):
    """The case the hunk replay exists for: git merge-file conflicts on it."""
    import subprocess

    written = _rule(ORIGINAL, "activation")
    for name, text in (("c", _rule(written, "router")), ("w", written), ("o", ORIGINAL)):
        (tmp_path / name).write_text(text)
    proc = subprocess.run(["git", "merge-file", "-p", "--quiet", *(str(tmp_path / n) for n in "cwo")],
                          capture_output=True, text=True)
    assert proc.returncode != 0


def test_a_change_to_the_rewritten_text_itself_is_still_refused():
    written = _rule(ORIGINAL, "activation")
    current = written.replace("activation legacy.", "activation legacy, edited by hand.")
    with pytest.raises(migrated.Unmigratable):
        migrated._merge("docs/envvars.rst", current, written, ORIGINAL, stacked=True)


def test_a_hunk_whose_text_occurs_twice_is_refused_not_guessed():
    original = "a\nb\n"
    written = "a\nX\nb\n"                              # inserted X between a and b
    current = "a\nX\nb\nc\na\nX\nb\n"                  # the same lines twice: no unique place
    assert migrated._replay_hunks(current, written, original) is None
