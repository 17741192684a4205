"""The cached analysis is keyed by the frontend code that made its facts, not only by the files."""

from pathlib import Path

from codemod.analysis import analyze
from codemod.rule import load_rule_file

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "actlib"


def test_result_key_changes_with_the_indexer_code(monkeypatch):
    rule = load_rule_file(GOLDEN / "activation.yaml")
    facts = [{"tu": "ops/gelu.cu", "closure": {"ops/gelu.cu": "0" * 64}}]
    monkeypatch.setattr(analyze, "indexer_hash", lambda: "a" * 16)
    first = analyze._result_key(facts, [rule], GOLDEN / "input")
    monkeypatch.setattr(analyze, "indexer_hash", lambda: "b" * 16)
    assert analyze._result_key(facts, [rule], GOLDEN / "input") != first


def test_parse_key_covers_every_module_the_indexer_imports():
    """A frontend module that clang_index.py reaches through relative imports makes facts too:
    editing it must drop cached ones (`parse.indexer_hash`)."""
    import ast

    from codemod.frontend.parse import indexer_files

    frontend = Path(analyze.__file__).resolve().parents[1] / "frontend"
    hashed = set(indexer_files())
    todo, seen = [frontend / "clang_index.py"], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and path.parent == frontend and node.module:
                target = frontend / (node.module.split(".")[0] + ".py")
                if target.is_file():
                    todo.append(target)
    # toolchain.py is in the key through what it makes (`Toolchain.fingerprint`), not its code
    outside = {frontend / "parse.py", frontend / "toolchain.py"}
    assert seen - outside <= hashed, sorted(p.name for p in seen - outside - hashed)


def test_parse_key_covers_the_dropped_depth_diagnostic(monkeypatch, tmp_path):
    """clang_index drops the fast mode's one expected error by toolchain.DEPTH_DIAGNOSTIC; the text
    decides which errors a TU's facts keep, so it is in the toolchain's fingerprint (the parse key)."""
    from codemod.frontend import toolchain

    tc = toolchain.Toolchain.__new__(toolchain.Toolchain)
    tc.resource_dir, tc.cuda_include, tc.stubs = tmp_path, tmp_path, []
    first = tc.fingerprint()
    monkeypatch.setattr(toolchain, "DEPTH_DIAGNOSTIC", "some other text")
    assert tc.fingerprint() != first
