"""Checks shared by the HTML page tests: well-formed markup (every element that is not void closed in
order), nothing fetched from the network, no absolute path of the machine, marks by class."""

from __future__ import annotations

import re
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Tree(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, int]] = []
        self.problems: list[str] = []
        self.elements: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append((tag, self.getpos()[0]))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            opened = self.stack[-1] if self.stack else None
            self.problems.append(f"line {self.getpos()[0]}: </{tag}> closes {opened}")
            return
        self.stack.pop()


def parse(html: str) -> list[tuple[str, dict]]:
    """The page's elements (tag, attributes) in order; AssertionError when it is not well-formed."""
    assert html.lstrip().startswith("<!DOCTYPE html>")
    tree = _Tree()
    tree.feed(html)
    tree.close()
    assert not tree.problems, tree.problems[:5]
    assert not tree.stack, f"left open: {tree.stack[:5]}"
    ids = [a["id"] for _, a in tree.elements if "id" in a]
    assert len(ids) == len(set(ids)), "duplicate ids"
    return tree.elements


def self_contained(html: str) -> None:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "fetches from the network"
    assert "@import" not in html and "url(" not in html


def with_class(elements, tag: str, cls: str, key: str) -> list[str]:
    """The `key` attribute of every `tag` that has one and whose class list holds `cls`."""
    return [a[key] for t, a in elements if t == tag and key in a and cls in (a.get("class") or "").split()]
