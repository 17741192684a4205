"""Issue 33: a recorded program list (`codemod warm LIST`) is untrusted data: a bounded format with
a schema, and only NVRTC options from the allow-list (codemod.nvrtc_options) reach NVRTC; an
option that names a file to write or read (`--time=FILE`, `--create-pch=FILE`, ...) is refused,
named in one line, before anything is compiled or created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codemod import nvrtc_options
from codemod.cli import main
from codemod.errors import CodemodError
from codemod.verify import rtc_cache, warm

SOURCE = b'extern "C" __global__ void k() {}\n'


class Cli:
    def __init__(self, capsys):
        self.capsys = capsys

    def fails(self, *argv, says=()) -> str:
        code = main([str(a) for a in argv])
        out, err = self.capsys.readouterr()
        assert "Traceback" not in out + err and "internal error" not in err, err
        assert code == 2, (code, err)
        assert err.startswith("codemod: error: ") and err.strip().count("\n") == 0, err
        for s in says:
            assert s in err, (s, err)
        return err


@pytest.fixture
def cli(capsys) -> Cli:
    return Cli(capsys)


def entry(**over) -> dict:
    digest = rtc_cache.hash128(SOURCE)
    e = {"key": "0" * 32, "nvrtc": "13.0", "filename": "k.cu", "source": digest, "headers": [], "names": ["k"],
         "options": ["--std=c++17", "--gpu-architecture=sm_90"]}
    e.update(over)
    return e


def write_list(tmp_path: Path, lines: list, name: str = "list.jsonl") -> Path:
    lst = tmp_path / name
    lst.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    sources = Path(str(lst) + ".sources")
    sources.mkdir(exist_ok=True)
    (sources / rtc_cache.hash128(SOURCE)).write_bytes(SOURCE)
    return lst


# -- options ---------------------------------------------------------------------------------------

WRITES_OR_READS = ["--time=VICTIM", "-time=VICTIM", "--create-pch=VICTIM", "-create-pch=VICTIM",
                   "--use-pch=VICTIM", "-use-pch=VICTIM", "--pch-dir=VICTIM", "-pch-dir=VICTIM",
                   "--fdevice-time-trace=VICTIM", "-fdevice-time-trace=VICTIM", "-o", "-oVICTIM",
                   "--output-file=VICTIM", "-include", "--pre-include=VICTIM", "-includeVICTIM",
                   "-Xptxas=--output-file=VICTIM", "--ptxas-options=-o", "-isystemVICTIM", "--bogus-option"]


@pytest.mark.parametrize("option", WRITES_OR_READS)
def test_file_option_refused_before_anything(cli, tmp_path, option):
    victim = tmp_path / "victim"
    spelled = option.replace("VICTIM", str(victim))
    lst = write_list(tmp_path, [entry(options=["--std=c++17", spelled])])
    cache = tmp_path / "cache"
    err = cli.fails("warm", lst, "--cache-dir", cache, says=(f"{lst}:1", "not allowed", spelled[:6]))
    assert "allow" in err
    assert not victim.exists() and not cache.exists()


def test_every_refused_option_named_in_one_line(cli, tmp_path):
    lst = write_list(tmp_path, [entry(options=["--time=a", "--std=c++17", "--create-pch=b"])])
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=("--time=a", "--create-pch=b"))


ALLOWED = [*nvrtc_options.LAYER_OPTIONS, "--gpu-architecture=sm_90", "--gpu-architecture=compute_90",
           "--gpu-architecture=sm_100a", "-arch=sm_120f", "--std=c++17", "-std=c++20", "-DNDEBUG", "-DX=1",
           "-DCUDA_VERSION=13000", "-UX", "--use_fast_math", "-use_fast_math", "-default-device",
           "--device-int128", "-lineinfo", "-fmad=false", "--include-path=/usr/local/cuda/include",
           "-I/usr/local/cuda/include"]


def test_allowed_options_read(tmp_path):
    lst = write_list(tmp_path, [entry(options=ALLOWED)])
    assert warm.read_list(lst)[0].options == ALLOWED


@pytest.mark.parametrize("option", ["-Iinclude", "-I../x", "-I/usr/include/../../etc", "--include-path=rel",
                                    "-I"])
def test_include_must_be_a_plain_absolute_folder(tmp_path, option):
    lst = write_list(tmp_path, [entry(options=[option])])
    with pytest.raises(CodemodError, match="not allowed"):
        warm.read_list(lst)


def test_include_outside_the_toolkit_refused(cli, tmp_path, monkeypatch):
    """An -I folder other than the NVRTC's own headers would make NVRTC read code from anywhere."""
    class Lib:
        version = (13, 0)
        include_dirs = [tmp_path / "toolkit" / "include"]

    monkeypatch.setattr(warm.nvrtc, "load", lambda library=None: Lib())
    lst = write_list(tmp_path, [entry(options=[f"-I{tmp_path / 'elsewhere'}"])])
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=("-I", "toolkit"))
    assert not (tmp_path / "c").exists()


def test_rule_options_are_on_the_allow_list():
    """The rules' own options are on the allow-list (a rule with others is refused: test_rules)."""
    import yaml

    repo = Path(__file__).resolve().parents[2]
    for path in [*repo.glob("rules/*.yaml"), *repo.glob("golden/*/*.yaml")]:
        doc = yaml.safe_load(path.read_text())
        opts = ((doc or {}).get("migrate") or {}).get("options") if isinstance(doc, dict) else None
        if not isinstance(opts, dict):
            continue
        found = [*opts.get("always", []), *(c["option"] for c in opts.get("conditional", [])),
                 *(o for v in (opts.get("kernels") or {}).values() for o in v)]
        assert nvrtc_options.refused(found) == [], path


def test_rule_with_a_file_option_refused(tmp_path):
    import yaml

    from codemod.errors import RuleError
    from codemod.rule import load_rule_file

    repo = Path(__file__).resolve().parents[2]
    doc = yaml.safe_load((repo / "golden" / "actlib" / "activation.yaml").read_text())
    doc["migrate"]["options"]["always"] = ["--std=c++17", "--time=/tmp/x"]
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(RuleError, match="--time=/tmp/x"):
        load_rule_file(path)


# -- schema and bounds -----------------------------------------------------------------------------

BAD_LINES = {
    "duplicate field": '{"key": "a", "key": "b"}',
    "NaN": json.dumps(entry()).replace('"names": ["k"]', '"names": NaN'),
    "big integer": json.dumps(entry()).replace('"headers": []', '"headers": ' + "9" * 5000),
    "not an object": "[1, 2]",
    "missing field": json.dumps({k: v for k, v in entry().items() if k != "options"}),
    "extra field": json.dumps({**entry(), "exec": "x"}),
    "option not a string": json.dumps(entry(options=[1])),
    "source not a digest": json.dumps(entry(source="../../../etc/passwd")),
    "header not a digest": json.dumps(entry(headers=[["h.h", "/etc/passwd"]])),
    "header not a pair": json.dumps(entry(headers=[["h.h"]])),
    "nvrtc version": json.dumps(entry(nvrtc="13.0; rm")),
    "long string": json.dumps(entry(names=["k" * 100_000])),
    "deep nesting": '{"key": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "control character in a name": json.dumps(entry(filename="k\x1b[2J.cu")),
}


@pytest.mark.parametrize("case", sorted(BAD_LINES))
def test_malformed_entry_is_one_line(cli, tmp_path, case):
    lst = write_list(tmp_path, [entry(), BAD_LINES[case]])
    err = cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=(f"{lst}:2",))
    assert "\x1b" not in err
    assert not (tmp_path / "c").exists()


def test_not_utf8(cli, tmp_path):
    lst = write_list(tmp_path, [entry()])
    lst.write_bytes(lst.read_bytes() + b'{"key": "\xff"}\n')
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=(f"{lst}:2", "UTF-8"))


def test_too_many_entries(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "MAX_LIST_ENTRIES", 3)
    lst = write_list(tmp_path, [entry(key=f"{k:032x}") for k in range(4)])
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=(str(lst), "more than 3"))


def test_file_too_large_is_not_read_whole(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "MAX_LIST_BYTES", 1000)
    lst = write_list(tmp_path, [entry(key=f"{k:032x}") for k in range(40)])
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=(str(lst), "larger than"))


def test_line_too_long(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(warm, "MAX_LINE_BYTES", 200)
    lst = write_list(tmp_path, [entry(names=["k" * 300])])
    cli.fails("warm", lst, "--cache-dir", tmp_path / "c", says=(f"{lst}:1", "longer than"))


def test_a_valid_list_still_reads(tmp_path):
    lst = write_list(tmp_path, [entry(), entry(), entry(key="1" * 32)])
    programs = warm.read_list(lst)
    assert [p.key for p in programs] == ["0" * 32, "1" * 32]
    assert programs[0].source == SOURCE


def test_the_runtimes_list_options_are_on_the_allow_list():
    """One policy: every option the generated runtime's warm-up accepts (apply/emit/layer_cache.py renders
    it into rtc_cache.h from codemod.nvrtc_options) is on the allow-list with a value of its kind,
    and the file-naming options are refused by both."""
    from codemod.apply.emit import layer_cache

    for o in layer_cache.list_options(pch=True, minimal=True):
        assert nvrtc_options.allowed(o), o
    values = {"--std=": "c++17", "-std=": "c++17", "--gpu-architecture=": "sm_90", "-arch=": "compute_90",
              "-D": "NDEBUG=1", "--define-macro=": "X", "-U": "X", "--undefine-macro=": "X",
              "-I": "/usr/local/cuda/include", "--include-path=": "/usr/local/cuda/include", "--fmad=": "false",
              "-fmad=": "true", "--ftz=": "true", "-ftz=": "false", "--prec-div=": "true", "-prec-div=": "true",
              "--prec-sqrt=": "false", "-prec-sqrt=": "false", "--maxrregcount=": "64", "-maxrregcount=": "64",
              "-frandom-seed=": "1", "-dopt=": "on", "--dopt=": "off"}
    for prefix in layer_cache.LIST_OPTION_PREFIXES:
        assert nvrtc_options.allowed(prefix + values[prefix]), prefix
    for o in WRITES_OR_READS[:10]:
        assert not nvrtc_options.allowed(o) and not layer_cache.list_option(o), o
