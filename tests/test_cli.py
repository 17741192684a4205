"""CLI conventions shared by every command: global flags anywhere, one -q/-v, --version, ninja's job
count spelled --ninja-jobs, refused flag combinations, clean Ctrl-C in worker pools."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from codemod import __version__
from codemod.cli import build_parser, main
from codemod.workers import process_pool

REPO = Path(__file__).resolve().parents[1]
LOG = str(REPO / "golden" / "impact" / "sched" / "ninja_1.13.2.ninja_log")
BUILD_NINJA = str(REPO / "golden" / "impact" / "sched" / "build.ninja")

# one command line per command (and parity verb); each parses without the global flags
COMMANDS = {
    "analyze": ["analyze", "lib"],
    "impact": ["impact", "x.ninja_log"],
    "verify": ["verify", "lib"],
    "apply": ["apply", "--target", "activation", "lib"],
    "parity generate": ["parity", "generate", "lib", "--target", "t", "--analysis", "a.json", "--profile", "p",
                        "-o", "o"],
    "parity report": ["parity", "report", "r.json"],
}


def _parse(argv):
    args = build_parser().parse_args(argv)
    return {k: getattr(args, k, False) for k in ("debug", "quiet", "verbose")}


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["before", "after"])
def test_global_flags_accepted_before_or_after_the_command(name, where):
    argv = COMMANDS[name]
    flags = ["--debug", "-q", "-v"]
    got = _parse(flags + argv if where == "before" else argv + flags)
    assert got == {"debug": True, "quiet": True, "verbose": True}
    assert _parse(argv) == {"debug": False, "quiet": False, "verbose": False}


def test_flag_before_the_command_survives_the_subparser():
    # the subparser must not reset what the top-level parser read
    assert _parse(["--debug", "verify", "lib", "-q"]) == {"debug": True, "quiet": True, "verbose": False}
    assert _parse(["-v", "analyze", "lib"])["verbose"] is True


def test_main_fills_the_global_flags(tmp_path, capsys):
    # --debug after the subcommand reaches the error handler (no AttributeError on args.debug)
    assert main(["impact", str(tmp_path / "missing.ninja_log"), "--debug"]) == 2
    assert "codemod: error:" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"codemod {__version__}"
    assert main(["--version"]) == 0


def test_impact_ninja_jobs(capsys):
    assert main(["impact", LOG, "--build-ninja", BUILD_NINJA, "--ninja-jobs", "1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["options"]["jobs"] == 1
    assert "deprecated" not in captured.err


def test_impact_old_j_still_works_with_a_warning(capsys):
    assert main(["impact", LOG, "--build-ninja", BUILD_NINJA, "-j", "1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["options"]["jobs"] == 1
    assert "`-j 1` as ninja's job count is deprecated; use `--ninja-jobs 1`" in captured.err


def test_old_j_and_ninja_jobs_together_refused(capsys):
    assert main(["impact", LOG, "-j", "1", "--ninja-jobs", "2"]) == 2
    assert "-j and --ninja-jobs both given" in capsys.readouterr().err


def test_apply_ninja_jobs_needs_a_build_log(capsys, tmp_path):
    assert main(["apply", "--target", "activation", str(tmp_path), "--ninja-jobs", "2"]) == 2
    assert "--ninja-jobs and --policy need --build-log" in capsys.readouterr().err


# --html with --against writes the comparison page (tests/impact/test_compare_html.py)
@pytest.mark.parametrize("extra", [["--trace", "{tmp}/t.json"], ["--remove", "*.cu"], ["--ninja-jobs", "2"],
                                   ["--what-if", "{tmp}/w.json"]])
def test_impact_against_refuses_what_it_does_not_write(tmp_path, capsys, extra):
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    assert main(["impact", LOG, "--against", LOG] + extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("codemod: error: --against compares two logs") and err.count("\n") == 1
    assert extra[0] in err
    assert not list(tmp_path.iterdir())


def _sigint_handler():
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_pool_workers_ignore_sigint():
    # Ctrl-C reaches every process of the group: workers leave it to the parent (no worker traceback)
    with process_pool(1) as pool:
        assert pool.submit(_sigint_handler).result() is True


def test_interrupted_pool_stops_its_workers_at_once():
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        with process_pool(2) as pool:
            futures = [pool.submit(time.sleep, 30) for _ in range(4)]
            time.sleep(0.5)
            raise KeyboardInterrupt
    assert time.perf_counter() - start < 15
    assert all(f.cancelled() or not f.running() for f in futures)
