"""`parity build`: clean build dir, timing record, ninja log and nvcc --time wiring (no GPU, no nvcc)."""

import json

import pytest

from codemod.parity.__main__ import main
from codemod.parity.build import BuildSpec, build
from codemod.parity.runner import ParityError


def _spec(tmp_path, cmd, **kw):
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    return BuildSpec(side="original", src=src, work=tmp_path / "work", build_cmd=cmd, **kw)


def test_record_log_and_nvcc_flags(tmp_path):
    cmd = ("mkdir -p {build}/sub && printf '# ninja log v7\\n' > {build}/sub/.ninja_log && "
           "echo \"$NVCC_APPEND_FLAGS\" > {build}/flags && touch {build}/../original.nvcc_time.csv")
    stale = tmp_path / "work" / "build-original" / "stale.o"
    stale.parent.mkdir(parents=True)
    stale.write_text("old")
    r = build(_spec(tmp_path, cmd, configure_cmd="test -d {src}"))
    work = tmp_path / "work"
    assert not stale.exists()                                   # always a clean build
    assert r["ninja_log"] == "original.ninja_log" and (work / "original.ninja_log").read_text() == "# ninja log v7\n"
    assert (work / "build-original" / "flags").read_text().strip() == f"--time {work / 'original.nvcc_time.csv'}"
    assert r["nvcc_time"] == "original.nvcc_time.csv"
    assert r["build"]["wall_s"] >= 0 and r["build"]["cpu_s"] >= 0 and "configure" in r
    assert json.loads((work / "build-original.json").read_text())["build"]["cmd"].startswith("mkdir -p ")


def test_failure_names_the_log_and_its_tail(tmp_path):
    with pytest.raises(ParityError) as e:
        build(_spec(tmp_path, "echo compiler said no; exit 3"))
    assert "exit code 3" in str(e.value) and "compiler said no" in e.value.render()


def test_module_entry_point_dispatches_build(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    rc = main(["build", "--side", "migrated", "--src", str(tmp_path / "src"), "--work", str(tmp_path / "w"),
               "--build-cmd", "mkdir -p {build}", "--no-nvcc-time"])
    assert rc == 0 and (tmp_path / "w" / "build-migrated.json").is_file()
    assert "migrated built in" in capsys.readouterr().err
    assert main(["build", "--side", "migrated", "--src", str(tmp_path / "nope"), "--work", str(tmp_path / "w"),
                 "--build-cmd", "true"]) == 2


def test_build_takes_a_third_tree_by_name_and_refuses_a_path_as_name(tmp_path, capsys):
    (tmp_path / "src").mkdir()
    rc = main(["build", "--side", "hand", "--src", str(tmp_path / "src"), "--work", str(tmp_path / "w"),
               "--build-cmd", "mkdir -p {build}", "--no-nvcc-time"])
    assert rc == 0 and (tmp_path / "w" / "build-hand").is_dir()
    assert json.loads((tmp_path / "w" / "build-hand.json").read_text())["side"] == "hand"
    with pytest.raises(SystemExit):
        main(["build", "--side", "../x", "--src", str(tmp_path / "src"), "--work", str(tmp_path / "w"),
              "--build-cmd", "true"])
    assert "letters, digits" in capsys.readouterr().err


def test_markdown_lists_parity_build_records():
    from codemod.parity.report import render_markdown

    result = {"library": "lib", "rule": "r", "arch": "sm_90", "seed": 1,
              "environment": {"commit": "c", "gpu": "g", "nvcc": "n", "cpus": 16, "date": "d"},
              "parity": {"equal": 1, "ran": 1, "all_equal": True, "bytes_compared": 8, "rejected_by_both": 0,
                         "shapes": [[1, 2]]},
              "bench_summary": {"shape": [1, 2], "reps": 3, "first_use_ms_migrated_median": None,
                                "first_use_ms_migrated_max": None, "first_use_ms_original_median": None,
                                "first_call_ms_first_in_process": None, "warm_ratio_median": None},
              "combinations": [], "mismatches": [], "mismatch_count": 0,
              "builds": {"original": {"build": {"wall_s": 551.2, "cpu_s": 5300.0}, "configure": {"wall_s": 4.9}},
                         "migrated": {"build": {"wall_s": 530.0, "cpu_s": 5100.5}}}}
    md = render_markdown(result)
    assert "| original | 551.2 | 5300.0 | 4.9 |" in md and "| migrated | 530.0 | 5100.5 | – |" in md


def test_skip_build_without_builds_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "o").mkdir()
    (tmp_path / "m").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "plan.json").write_text('{"library": "l", "rule": "r"}')
    (tmp_path / "d" / "driver.cu").write_text("")
    rc = main(["--original", str(tmp_path / "o"), "--migrated", str(tmp_path / "m"), "--build-cmd", "true",
               "--driver", str(tmp_path / "d"), "--work", str(tmp_path / "w"), "--skip-build",
               "--json", str(tmp_path / "r.json"), "--no-timings"])
    assert rc == 2 and "no original build" in capsys.readouterr().err


def test_a_tree_without_the_profiles_include_folder_is_refused_before_any_build(tmp_path, capsys):
    """A checkout root given for the library root: refused at once, naming the folder, not after both
    builds at the driver's compile."""
    for tree in ("o/lib/include", "m/lib/include", "d"):
        (tmp_path / tree).mkdir(parents=True)
    (tmp_path / "d" / "plan.json").write_text('{"library": "l", "rule": "r", "include_dirs": ["include"]}')
    (tmp_path / "d" / "driver.cu").write_text("")
    marker = tmp_path / "built"
    rc = main(["--original", str(tmp_path / "o"), "--migrated", str(tmp_path / "m" / "lib"),
               "--build-cmd", f"touch {marker}", "--driver", str(tmp_path / "d"), "--work", str(tmp_path / "w"),
               "--json", str(tmp_path / "r.json"), "--no-timings"])
    err = capsys.readouterr().err
    assert rc == 2 and "original tree" in err and "has no include/" in err and "library's root" in err
    assert not marker.exists()


def _result(**extra):
    result = {"schema": "codemod-parity/1", "library": "lib", "rule": "r", "arch": "sm_90", "seed": 1,
              "environment": {"commit": "c", "gpu": "g", "nvcc": "n", "cpus": 16, "date": "d"},
              "parity": {"equal": 1, "ran": 1, "all_equal": True, "bytes_compared": 8, "rejected_by_both": 3,
                         "shapes": [[1, 2]]},
              "bench_summary": {"shape": [1, 2], "reps": 3, "first_use_ms_migrated_median": 2.0,
                                "first_use_ms_migrated_max": 400.0, "first_use_ms_original_median": 0.1,
                                "first_call_ms_first_in_process": {"migrated": 200.0, "original": 60.0},
                                "warm_ratio_median": None},
              "combinations": [], "mismatches": [], "mismatch_count": 0}
    result.update(extra)
    return result


def test_markdown_groups_rejections_by_message_and_counts_calls_that_found_their_variant_compiled():
    from codemod.parity.report import render_markdown

    combos = [{"entry": "f_dbias", "ran": 0, "equal": 0, "rejected": 10, "rejections": ["needs sm_100"]},
              {"entry": "g_dbias", "ran": 0, "equal": 0, "rejected": 10, "rejections": ["needs sm_100"]},
              {"entry": "g_dbias", "ran": 0, "equal": 0, "rejected": 5, "rejections": ["needs sm_100", "bad shape"]},
              {"entry": "f", "ran": 10, "equal": 10, "rejected": 0, "rejections": []}]

    def bench(entry, ms):
        return {"entry": entry, "input": "bf16", "format": "fp8", "first_ms": {"migrated": ms, "original": 0.2},
                "warm_median_ms": {"migrated": 1.0, "original": 1.0}, "ratio": 1.0}

    md = render_markdown(_result(combinations=combos, bench=[bench("first", 200.0), bench("a", 100.0),
                                                              bench("a_v2", 0.2), bench("b", 400.0),
                                                              bench("c", 300.0)]))
    assert "- `needs sm_100`: `f_dbias` (1), `g_dbias` (2)\n- `bad shape`: `g_dbias` (1)" in md
    # the process's first call is excluded; a_v2 found its variant compiled; 100, 300, 400 compiled
    assert ("1 of the other 4 first calls took under 1 ms: their variant was already compiled by an "
            "earlier call; over the 3 that compiled, median 300.0 ms, max 400.0 ms, 2 within 300 ms.") in md


def test_report_verb_renders_a_result_again_and_refuses_other_json(tmp_path, capsys):
    from codemod.cli import main as cli

    good = tmp_path / "r.json"
    good.write_text(json.dumps(_result(builds={"migrated": {"build": {"wall_s": 2.0, "cpu_s": 3.0}},
                                               "original": {"build": {"wall_s": 1.0, "cpu_s": 1.5}}})))
    assert cli(["parity", "report", str(good), "-o", str(tmp_path / "r.md")]) == 0
    md = (tmp_path / "r.md").read_text()
    assert md.index("| original | 1.0 |") < md.index("| migrated | 2.0 |")   # original first, whatever the key order
    other = tmp_path / "o.json"
    other.write_text('{"schema": "codemod-analysis/1"}')
    assert cli(["parity", "report", str(other)]) == 2
    assert "not a parity result" in capsys.readouterr().err


def test_markdown_sums_the_variants_of_an_entry_point():
    from codemod.parity.report import render_markdown

    combos = [{"entry": "f/a+x", "ran": 10, "equal": 10, "rejected": 0, "rejections": []},
              {"entry": "f/b+x", "ran": 8, "equal": 8, "rejected": 2, "rejections": ["bad shape"]},
              {"entry": "g", "ran": 10, "equal": 10, "rejected": 0, "rejections": []}]
    md = render_markdown(_result(combinations=combos))
    assert "| `f` (2 variants) | 2 | 18 | 18 | 2 |" in md and "| `g` | 1 | 10 | 10 | 0 |" in md


def test_module_entry_point_takes_the_run_verb_too(tmp_path, capsys):
    """`python -m codemod.parity run ARGS` as the docs spell it (the verb was left in argv)."""
    assert main(["run", "--original", "o", "--migrated", "m", "--build-cmd", "true", "--driver",
                 str(tmp_path / "nope"), "--work", str(tmp_path / "w"), "--json", str(tmp_path / "r.json"),
                 "--skip-build"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" not in err and "cannot read the driver plan" in err


def test_build_records_lose_their_commands_in_the_result():
    """The library's configure/build commands (its recipe, machine paths) never reach the result
    document that gets committed; timings and environment stay."""
    from codemod.parity.runner import REDACTED, without_commands
    record = {"schema": "codemod-build/1", "side": "original",
              "configure": {"cmd": "cmake -S /tmp/x -B /tmp/b -DFOO=1", "wall_s": 3.5},
              "build": {"cmd": "ninja -C /tmp/b", "wall_s": 500.0, "cpu_s": 4000.0},
              "environment": {"cpus": 16}}
    out = without_commands(record)
    assert out["configure"] == {"cmd": REDACTED, "wall_s": 3.5}
    assert out["build"] == {"cmd": REDACTED, "wall_s": 500.0, "cpu_s": 4000.0}
    assert out["environment"] == {"cpus": 16} and "/tmp" not in json.dumps(out)


def test_markdown_of_a_run_without_timings_says_so_instead_of_empty_cells():
    from codemod.parity.report import render_markdown

    md = render_markdown(_result(bench=[], builds={"original": {"build": {"wall_s": 1.0, "cpu_s": 1.5}}}))
    assert "Not measured in this run (`parity run --no-timings`): outputs only." in md
    assert "**– ms**" not in md and "| entry point | input | format |" not in md
    assert "| original | 1.0 | 1.5 | – |" in md


@pytest.mark.parametrize("cmd, said", [("kill -FPE $$", "exit code -8 (SIGFPE)"),
                                       ("exit 136", "exit code 136 (SIGFPE)"), ("exit 3", "exit code 3")])
def test_a_command_killed_by_a_signal_says_which(tmp_path, cmd, said):
    """A driver shard the library killed (SIGFPE on the H200) failed "with exit code 136": the
    message names the signal; an ordinary exit status names none."""
    from codemod.parity.runner import run_logged

    with pytest.raises(ParityError) as err:
        run_logged(cmd, tmp_path / "log.txt")
    assert err.value.message == f"`{cmd}` failed with {said}"
