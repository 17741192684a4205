"""The round trip where maintainers live (issue 29, acceptance 1): three rules migrate one golden
library, each reviewed as two pull requests (its NVRTC layer part, then the rule) applied with
`git apply` from the repository root and committed on their own. No manifest is stored anywhere:
`apply --check` of every rule reads the migration from git history alone. The last rule's layer
part edits the shared stubs runtime (the cooperative launch it needs), so the earlier rules are
regenerated under it.

The three rules are golden/normlib's rule split by kernel family (one rule file, three scopes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from codemod.apply.golden import GOLDEN
from codemod.cli import main
from codemod.tool_state import manifest_paths

# (rule id, kernels, translation unit): rmsnorm and ln_bwd use occupancy queries; ln_fwd launches
# cooperatively, so its layer part adds launch_cooperative to the shared rtc_stubs.h
FAMILIES = [
    ("rmsnorm", ["normlib::rmsnorm_fwd_kernel"], "src/rmsnorm/rms_fwd.cu"),
    ("ln_bwd", ["normlib::ln_bwd_kernel", "normlib::ln_bwd_finalize_kernel"], "src/layernorm/ln_bwd.cu"),
    ("ln_fwd", ["normlib::ln_fwd_kernel"], "src/layernorm/ln_fwd.cu"),
]


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


def _committed(source: Path, repo: Path) -> Path:
    """A copy of `source` at `repo`, committed as one base commit."""
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns(".git", "build", "*.so"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    return repo


def _rules(folder: Path) -> list[Path]:
    base = yaml.safe_load((GOLDEN / "normlib" / "rule.yaml").read_text())
    out = []
    for rule_id, kernels, unit in FAMILIES:
        doc = yaml.safe_load(yaml.safe_dump(base))
        doc["id"] = rule_id
        m = doc["migrate"]
        m.update(output_dir=f"src/rtc_{rule_id}", namespace=f"normlib::rtc_{rule_id}", kernels=kernels,
                 translation_units=[unit])
        m["cmake"]["legacy_option"] = f"NORMLIB_BUILD_LEGACY_STATIC_{rule_id.upper()}"
        path = folder / f"{rule_id}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        out.append(path)
    return out


def _merge_as_pull_requests(repo: Path, lib: Path, rules: list[str], folder: Path) -> list[str]:
    """Each rule's migration as maintainers merge it: its NVRTC layer part, its disk cache, then the rule, each a
    `git apply` from the repository root committed on its own. The rules whose layer part edits the
    shared stubs runtime."""
    layers_with_stubs = []
    for rule in rules:
        name = Path(rule).stem
        diff, layer, cache = folder / f"{name}.diff", folder / f"{name}.layer.diff", folder / f"{name}.cache.diff"
        assert main(["apply", "--target", rule, str(lib), "--diff", str(diff), "--layer-diff", str(layer),
                     "--cache-diff", str(cache), "--no-precheck", "-q"]) == 0
        for part, what in ((layer, "NVRTC layer"), (cache, "disk cache"), (diff, "kernels")):
            if part.is_file() and part.stat().st_size:
                _git(repo, "apply", str(part))
                _git(repo, "add", "-A")
                _git(repo, "commit", "-qm", f"{name}: {what}")
                if part is layer and "rtc_stubs.h" in part.read_text():
                    layers_with_stubs.append(name)
    assert manifest_paths(lib) == []
    return layers_with_stubs


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> tuple[Path, list[Path]]:
    """normlib in git with the three rules merged as ordinary commits; no manifest kept."""
    tmp_path = tmp_path_factory.mktemp("merged")
    repo = _committed(GOLDEN / "normlib" / "input", tmp_path / "repo")
    rules = _rules(tmp_path)
    layers_with_stubs = _merge_as_pull_requests(repo, repo, [str(r) for r in rules], tmp_path)
    assert "ln_fwd" in layers_with_stubs                 # the last rule's layer part edits the shared stubs
    return repo, rules


@pytest.fixture
def stacked(merged, tmp_path) -> tuple[Path, list[Path]]:
    """A copy of `merged` (its git history too) for one test to change."""
    repo = tmp_path / "repo"
    shutil.copytree(merged[0], repo, symlinks=True)
    return repo, merged[1]


def _check(repo: Path, rule: Path, capsys) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["apply", "--target", str(rule), str(repo), "--check", "-q"])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.slow
def test_every_stacked_rule_checks_clean_from_git_history_alone(stacked, capsys):
    repo, rules = stacked
    for rule in rules:
        code, said = _check(repo, rule, capsys)
        assert code == 0, (rule.stem, said)
        assert "regenerating the migration (git commit" in said, (rule.stem, said)


KERNEL_HEADER = "src/rmsnorm/rms_kernels.cuh"
SIGNATURE = "void rmsnorm_fwd_kernel(ForwardParams params) {"
BODY = "  using compute_t = typename Ktraits::compute_t;\n"


def _edit(repo: Path, old: str, new: str) -> None:
    path = repo / KERNEL_HEADER
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    _git(repo, "commit", "-qam", "an upstream edit of the rmsnorm kernel")


@pytest.mark.slow
def test_a_body_edit_after_the_merge_needs_no_regeneration(stacked, capsys):
    repo, rules = stacked
    _edit(repo, BODY, BODY + "  // an upstream change of the body only\n")
    for rule in rules:
        code, said = _check(repo, rule, capsys)
        assert code == 0, (rule.stem, said)


@pytest.mark.slow
def test_a_signature_edit_needs_no_regeneration_in_any_stacked_rule(stacked, capsys):
    """The stubs take each kernel's parameter types from the kernel (`decltype`): a parameter edit
    after the merge leaves every rule's migration as it is (before issue 29, it was pending for its
    rule: a copied declaration and the hash checking it)."""
    repo, rules = stacked
    _edit(repo, SIGNATURE, SIGNATURE.replace("(ForwardParams params)", "(const ForwardParams params)"))
    for rule in rules:
        code, said = _check(repo, rule, capsys)
        assert code == 0, (rule.stem, said)


@pytest.mark.slow
def test_an_edit_in_an_extracted_header_is_kept_by_update(tmp_path, capsys):
    """golden tulib: the migration moves scaled.cu's kernels into tu/scaled_kernels.cuh. A parameter
    edit made there after the merge needs no regeneration; when the rule changes later (an NVRTC
    option more), `--update` regenerates and keeps the edit (before, the regeneration re-extracted
    the kernels from the unit as it was and reverted it)."""
    repo = tmp_path / "repo"
    shutil.copytree(GOLDEN / "tulib" / "input", repo)
    rule_file = tmp_path / "rule.yaml"
    rule_file.write_text((GOLDEN / "tulib" / "rule.yaml").read_text())
    rule = str(rule_file)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    diff = tmp_path / "migration.diff"
    assert main(["apply", "--target", rule, str(repo), "--diff", str(diff), "--no-precheck", "-q"]) == 0
    _git(repo, "apply", str(diff))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "migrate")
    header = repo / "tu" / "scaled_kernels.cuh"
    old = "row_amax_kernel(const IType *in, float *amax, size_t cols)"
    text = header.read_text()
    assert text.count(old) == 1
    header.write_text(text.replace(old, old.replace("size_t cols", "const size_t cols")))
    _git(repo, "commit", "-qam", "an upstream edit in the extracted header")
    assert main(["apply", "--target", rule, str(repo), "--check", "-q"]) == 0
    text = rule_file.read_text()
    assert text.count("always: [--std=c++17]") == 1
    rule_file.write_text(text.replace("always: [--std=c++17]", "always: [--std=c++17, -DTULIB_ROUND_TRIP=1]"))
    assert main(["apply", "--target", rule, str(repo), "--check", "-q"]) == 1
    update = tmp_path / "update.diff"
    assert main(["apply", "--target", rule, str(repo), "--update", "--diff", str(update), "--no-precheck",
                 "-q"]) == 0
    touched = re.findall(r"^diff --git a/(\S+)", update.read_text(), re.M)
    assert "tu/scaled_kernels.cuh" not in touched, update.read_text()      # the edit stays
    assert touched == ["rtc/scaled/kernels.cpp"]
    _git(repo, "apply", str(update))
    _git(repo, "commit", "-qam", "regenerate")
    assert "const size_t cols" in header.read_text()
    assert main(["apply", "--target", rule, str(repo), "--check", "-q"]) == 0


TE = os.environ.get("TE_SOURCE_DIR")
TE_RULES = ["activation", "scaled_activation", "fused_router", "fp4_transpose", "transpose"]


def _te_repo(tmp_path: Path) -> tuple[Path, Path]:
    """(repository, library root) of a copy of $TE_SOURCE_DIR committed as one base commit."""
    repo = _committed(Path(TE), tmp_path / "te")
    return repo, repo / "transformer_engine" / "common"


@pytest.mark.slow
@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR not set")
def test_te_rules_merged_as_pull_requests_check_clean_without_a_manifest(tmp_path, capsys):
    """TE with its five rules (the four of issue 29 and transpose, stacked on them), each merged as its layer and kernel pull requests (`git apply` from the
    root, one commit each), no manifest anywhere: `--check` of every rule exits 0 from git history
    (before: CMakeLists.txt could not be un-migrated from under the later rules' blocks)."""
    repo, lib = _te_repo(tmp_path)
    rules = TE_RULES
    assert "fused_router" in _merge_as_pull_requests(repo, lib, rules, tmp_path)
    for rule in rules:
        capsys.readouterr()
        code = main(["apply", "--target", rule, str(lib), "--check", "-q"])
        out, err = capsys.readouterr()
        assert code == 0, (rule, out, err)


@pytest.mark.slow
@pytest.mark.skipif(not TE, reason="TE_SOURCE_DIR not set")
def test_te_rules_written_one_commit_each_check_clean_with_and_without_manifests(tmp_path, capsys):
    """TE with its five rules written by `apply --write` in turn, one commit each (activation's brings
    the NVRTC layer; fused_router's grows rtc_stubs.h): `--check` of every rule exits 0 with the
    stored manifests, then from git history alone (before: activation's exited 1 and 2)."""
    repo, lib = _te_repo(tmp_path)
    rules = TE_RULES
    for rule in rules:
        assert main(["apply", "--target", rule, str(lib), "--write", "--no-precheck", "-q"]) == 0, rule
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"migrate {rule}")
    for manifests in ("kept", "removed"):
        if manifests == "removed":
            for path in manifest_paths(lib):
                path.unlink()
        for rule in rules:
            capsys.readouterr()
            code = main(["apply", "--target", rule, str(lib), "--check", "-q"])
            out, err = capsys.readouterr()
            assert code == 0, (manifests, rule, out, err)


@pytest.mark.slow
def test_an_edit_of_a_moved_definition_is_kept_by_every_stacked_rule(stacked, capsys):
    """The parameter structs moved out of src/common.h into src/kernel_params.h (move_to) are the
    library's own after the merge: a field added there needs no regeneration, and `--update` keeps
    it (the un-migration moves the header's current text back into common.h; before, it restored
    common.h's original structs and a regeneration dropped the field)."""
    repo, rules = stacked
    path = repo / "src" / "kernel_params.h"
    text = path.read_text()
    old = "  float epsilon = 0.f;\n"
    assert text.count(old) == 1
    path.write_text(text.replace(old, old + "  float upstream_scale = 1.f;\n"))
    _git(repo, "commit", "-qam", "an upstream field in the moved parameter structs")
    for rule in rules:
        code, said = _check(repo, rule, capsys)
        assert code == 0, (rule.stem, said)
    capsys.readouterr()
    assert main(["apply", "--target", str(rules[0]), str(repo), "--update", "-q"]) == 0
    assert "float upstream_scale = 1.f;" in path.read_text()
    assert "upstream_scale" not in (repo / "src" / "common.h").read_text()


@pytest.mark.slow
def test_a_rule_landed_as_two_pull_requests_checks_clean_from_git_history(tmp_path, capsys):
    """A rule too large for one review lands in two: `--only` some kernels, then `--update` for the
    rest, each committed on its own, with an upstream commit between them. `--check` reads the
    migration as the first commit and the regeneration after it (before: the first commit only, so
    the second one's rewrite of the lines the first wrote, e.g. the kernels the legacy option's
    documentation lists, was a change "since the migration" and --check refused, exit 2)."""
    repo = _committed(GOLDEN / "normlib" / "input", tmp_path / "repo")
    rule = str(_rules(tmp_path)[1])                       # ln_bwd: two kernels
    first, layer = tmp_path / "first.diff", tmp_path / "layer.diff"
    assert main(["apply", "--target", rule, str(repo), "--only", "normlib::ln_bwd_kernel", "--diff", str(first),
                 "--layer-diff", str(layer), "--no-precheck", "-q"]) == 0
    for part, what in ((layer, "NVRTC layer"), (first, "ln_bwd_kernel")):
        _git(repo, "apply", str(part))
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", what)
    assert "ln_bwd_finalize_kernel" not in (repo / "src" / "rtc_ln_bwd" / "kernels.h").read_text()
    (repo / "README.upstream").write_text("an unrelated upstream commit between the two pull requests\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "upstream")
    rest = tmp_path / "rest.diff"
    assert main(["apply", "--target", rule, str(repo), "--update", "--diff", str(rest), "--no-precheck", "-q"]) == 0
    assert "ln_bwd_finalize_kernel" in rest.read_text()
    _git(repo, "apply", str(rest))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the rest of ln_bwd")
    assert manifest_paths(repo) == []
    code, said = _check(repo, Path(rule), capsys)
    assert code == 0, said
    assert "and 1 regeneration(s) after it" in said, said
    # an upstream body edit after both still needs no regeneration; a rule change does
    _edit(repo, BODY, BODY + "  // an upstream change of the body only\n")
    assert _check(repo, Path(rule), capsys)[0] == 0


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[Path]]:
    """normlib in git with the three rules migrated as `apply --write` writes them (the first rule's
    NVRTC layer in its commit, one commit per rule), manifests stored."""
    tmp_path = tmp_path_factory.mktemp("written")
    repo = _committed(GOLDEN / "normlib" / "input", tmp_path / "repo")
    rules = _rules(tmp_path)
    for rule in rules:
        assert main(["apply", "--target", str(rule), str(repo), "--write", "--no-precheck", "-q"]) == 0
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", f"migrate {rule.stem}")
    assert len(manifest_paths(repo)) == 3
    assert "launch_cooperative(" in _git(repo, "show", "HEAD", "--", "util/rtc_stubs.h")    # ln_fwd grew it
    return repo, rules


@pytest.mark.slow
@pytest.mark.parametrize("manifests", ["kept", "removed"])
def test_rules_written_one_commit_each_check_clean_under_the_later_ones(written, manifests, tmp_path, capsys):
    """The first rule's commit brought the NVRTC layer too; the later rules' stubs use it and the last
    one's grew the shared rtc_stubs.h. `--check` of the first rule keeps the layer in place and
    regenerates its own part only, with its manifest or from git history alone (before: the manifest
    named rtc_stubs.h "differs from what apply generated", exit 1; git's record took the layer out
    from under the later rules' stubs and the units no longer parsed, exit 2)."""
    repo = tmp_path / "repo"
    shutil.copytree(written[0], repo, symlinks=True)
    if manifests == "removed":
        for path in manifest_paths(repo):
            path.unlink()
    for rule in written[1]:
        code, said = _check(repo, rule, capsys)
        assert code == 0, (rule.stem, said)
    first = written[1][0]
    capsys.readouterr()
    assert main(["apply", "--target", str(first), str(repo), "--update", "--write", "-q"]) == 0
    assert _git(repo, "status", "--porcelain", "--untracked-files=no") == ""     # nothing to regenerate
