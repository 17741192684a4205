"""bench/te_tu_times.py (issue 14's per-TU sm_100a measurement): the commands it derives from a
compile database and its tables, over a fake nvcc that records its arguments."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("te_tu_times", ROOT / "bench" / "te_tu_times.py")
te_tu_times = importlib.util.module_from_spec(spec)
spec.loader.exec_module(te_tu_times)

FAKE_COMPILER = """import json, sys, time
args = sys.argv[1:]
out = args[args.index("-o") + 1]
open(out, "w").write("obj")
with open(sys.argv[0] + ".calls", "a") as f:
    f.write(json.dumps(args) + "\\n")
if "bad.cu" in " ".join(args):
    print("error: broken")
    sys.exit(1)
"""
CUDA_TUS = ("activation/gelu.cu", "activation/gelu_grouped.cu", "cast/cast.cu", "cast/bad.cu",
            "transpose/cast_transpose.cu")


def _compiler(tmp_path: Path, name: str) -> Path:
    """An executable named like the compiler (nvcc is told apart by its basename), recording its
    arguments in NAME.calls."""
    exe = tmp_path / "bin" / name
    if not exe.exists():
        exe.parent.mkdir(exist_ok=True)
        exe.write_text(f"#!{sys.executable}\n" + FAKE_COMPILER)
        exe.chmod(0o755)
    return exe


def _calls(tmp_path: Path, name: str) -> list[list[str]]:
    return [json.loads(l) for l in (tmp_path / "bin" / f"{name}.calls").read_text().splitlines()]


def _tree(tmp_path: Path, name: str) -> Path:
    """A configured build: five nvcc units, then TE's host-only transformer_engine.cpp (a g++
    `command` string, as CMake writes it) in the middle of the source list, as in TE's."""
    build = tmp_path / name
    build.mkdir()
    nvcc, gxx = _compiler(tmp_path, "nvcc"), _compiler(tmp_path, "g++")
    src = tmp_path / "src" / "transformer_engine" / "common"
    entries = []
    for tu in CUDA_TUS[:2] + ("transformer_engine.cpp",) + CUDA_TUS[2:]:
        if tu.endswith(".cpp"):
            entries.append({"directory": str(build), "file": str(src / tu), "output": f"{tu}.o",
                            "command": f"{gxx} -O3 -fPIC -DNDEBUG -o CMakeFiles/{tu}.o -c {src / tu}"})
            continue
        entries.append({"directory": str(build), "file": str(src / tu), "output": f"{tu}.o",
                        "arguments": [str(nvcc), "-O3", "--generate-code=arch=compute_90,code=sm_90",
                                      "-gencode", "arch=compute_100a,code=sm_100a", "-arch", "sm_80",
                                      "--expt-relaxed-constexpr", "-o", f"CMakeFiles/{tu}.o", "-c", str(src / tu)]})
    (build / "compile_commands.json").write_text(json.dumps(entries))
    return build


def test_commands_keep_the_flags_and_replace_the_arch(tmp_path):
    build = _tree(tmp_path, "orig")
    units = te_tu_times.load_units(build, list(te_tu_times.DEFAULT_TUS))
    assert sorted(units) == ["activation/gelu.cu", "activation/gelu_grouped.cu", "cast/bad.cu", "cast/cast.cu"]
    cmd = te_tu_times.command_for(units["activation/gelu.cu"], "activation/gelu.cu", te_tu_times.DEFAULT_GENCODE,
                                  True, tmp_path / "x.o", tmp_path / "t.csv")
    assert "-O3" in cmd and "--expt-relaxed-constexpr" in cmd and "-c" in cmd
    assert not any("compute_90" in a or a == "sm_80" or a == "-arch" for a in cmd)
    assert cmd.count("-gencode") == 1 and cmd[cmd.index("-gencode") + 1] == "arch=compute_100a,code=sm_100a"
    assert cmd.count("--use_fast_math") == 1
    assert cmd[-2:] == ["-o", str(tmp_path / "x.o")] and cmd.count("-o") == 1
    assert cmd[cmd.index("--time") + 1] == str(tmp_path / "t.csv")
    cast = te_tu_times.command_for(units["cast/cast.cu"], "cast/cast.cu", te_tu_times.DEFAULT_GENCODE,
                                   False, tmp_path / "y.o", tmp_path / "u.csv")
    assert "--use_fast_math" not in cast


def test_commands_take_several_gencodes_or_keep_the_configured_archs(tmp_path):
    """TE's default build (six archs) gives an arch-specific unit seven targets: --gencode repeated,
    or --keep-archs for the command's own arch flags, in their order, values included."""
    build = _tree(tmp_path, "orig")
    units = te_tu_times.load_units(build, list(te_tu_times.DEFAULT_TUS))
    two = ["arch=compute_90,code=sm_90", "arch=compute_120f,code=sm_120f"]
    cmd = te_tu_times.command_for(units["cast/cast.cu"], "cast/cast.cu", two, False, tmp_path / "x.o", tmp_path / "t.csv")
    assert [cmd[i + 1] for i, a in enumerate(cmd) if a == "-gencode"] == two
    assert not any(a == "-arch" or a.startswith("--generate-code") for a in cmd)
    kept = te_tu_times.command_for(units["cast/cast.cu"], "cast/cast.cu", None, False, tmp_path / "x.o", tmp_path / "t.csv")
    at = kept.index("--generate-code=arch=compute_90,code=sm_90")
    assert kept[at:at + 5] == ["--generate-code=arch=compute_90,code=sm_90", "-gencode", "arch=compute_100a,code=sm_100a",
                               "-arch", "sm_80"]
    assert kept.count("-gencode") == 1


def test_run_and_report_both_trees(tmp_path, capsys):
    orig, migr = _tree(tmp_path, "orig"), _tree(tmp_path, "migr")
    out = tmp_path / "run"
    assert te_tu_times.main(["run", "--tree", f"original={orig}", "--tree", f"migrated={migr}", "-j", "3",
                             "--out", str(out)]) == 0
    rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    assert {(r["tu"], r["tree"]) for r in rows if r["rc"] != 0} == {("cast/bad.cu", "original"), ("cast/bad.cu", "migrated")}
    assert "error: broken" in next(r for r in rows if r["rc"] != 0)["log_tail"]
    calls = _calls(tmp_path, "nvcc")
    fast = [c for c in calls if "--use_fast_math" in c]
    assert len(fast) == 4 and all(any("/common/activation/" in a for a in c) for c in fast)
    # --resume compiles only what failed
    assert te_tu_times.main(["run", "--tree", f"original={orig}", "--tree", f"migrated={migr}", "-j", "2",
                             "--out", str(out), "--resume", "--commit", "abc1234"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 10
    md, js = tmp_path / "t.md", tmp_path / "t.json"
    assert te_tu_times.main(["report", str(out), "--json", str(js), "--md", str(md)]) == 0
    text = md.read_text()
    assert "| `activation/gelu.cu` |" in text and "FAILED rc 1" in text
    assert "arch=compute_100a,code=sm_100a" in text
    # where the times were taken (the device copy has no .git: the commit is given)
    assert "codemod abc1234." in text and "CPUs usable" in text
    doc = json.loads(js.read_text())
    assert doc["run"]["environment"]["commit"] == "abc1234"
    assert doc["schema"] == "te-tu-times/1" and len(doc["rows"]) == 8
    # what is committed names no machine: no command, no path, the options kept
    assert all("cmd" not in r and "/" not in r["flags"] for r in doc["rows"])
    assert all("-gencode arch=compute_100a,code=sm_100a" in r["flags"] for r in doc["rows"])
    assert str(tmp_path) not in js.read_text()


NVCC_TIME_CSV = """source file name , phase name , phase input files , phase output file , arch , tool, metric , unit
/src/a.cu , cicc ,  a.ii  , a.ptx , compute_100a , nvcc , 10460.8721 , ms
/src/a.cu , ptxas , a.ptx  , a.cubin , sm_100a , nvcc , 2016.8300 , ms
/src/a.cu , g++ (compiling) ,   , a.o , compute_100a , nvcc , 139069.6406 , ms
"""


def test_report_as_a_script_reads_the_phases(tmp_path):
    """The device runs `python3 bench/te_tu_times.py report` from the repository root: the phase
    columns come from nvcc's --time file (they read "-" when the parser could not be imported). `-S`:
    no site-packages, so codemod is not importable from an installation, as on the device."""
    import subprocess

    out = tmp_path / "run"
    (out / "time").mkdir(parents=True)
    (out / "time" / "migrated__activation__gelu.cu.csv").write_text(NVCC_TIME_CSV)
    (out / "results.jsonl").write_text(json.dumps({"tu": "activation/gelu.cu", "tree": "migrated", "rc": 0,
                                                   "seconds": 160.4, "started_s": 0.0, "cmd": "nvcc -c"}) + "\n")
    js = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-S", str(ROOT / "bench" / "te_tu_times.py"), "report", str(out), "--json", str(js)],
                          cwd=tmp_path, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "| `activation/gelu.cu` | 160.4 | 139/10/2 | no |" in proc.stdout
    assert json.loads(js.read_text())["rows"][0]["phases"] == {"host_compile": 139.07, "cicc": 10.46, "ptxas": 2.02}


def test_host_units_compile_as_configured(tmp_path):
    """`.cpp` units are g++ commands: no arch flags to replace, no fast math, no --time (g++'s
    `-time` is another option); only the object moves. nvcc is told by the compiler's basename."""
    build = _tree(tmp_path, "orig")
    units = te_tu_times.load_units(build, ["*"])
    assert list(units) == ["activation/gelu.cu", "activation/gelu_grouped.cu", "transformer_engine.cpp",
                           "cast/cast.cu", "cast/bad.cu", "transpose/cast_transpose.cu"]  # the database's order
    cmd = te_tu_times.command_for(units["transformer_engine.cpp"], "transformer_engine.cpp",
                                  te_tu_times.DEFAULT_GENCODE, True, tmp_path / "x.o", tmp_path / "t.csv")
    assert cmd == [str(tmp_path / "bin" / "g++"), "-O3", "-fPIC", "-DNDEBUG", "-c",
                   str(tmp_path / "src" / "transformer_engine" / "common" / "transformer_engine.cpp"),
                   "-o", str(tmp_path / "x.o")]
    assert te_tu_times.is_nvcc(["/usr/local/cuda/bin/nvcc", "-c"]) and te_tu_times.is_nvcc(["ccache", "nvcc"])
    assert not te_tu_times.is_nvcc(["/usr/bin/c++", "-c"]) and not te_tu_times.is_nvcc(["ccache", "g++", "-c"])


def test_run_all_times_every_compile(tmp_path):
    orig = _tree(tmp_path, "orig")
    out = tmp_path / "run"
    assert te_tu_times.main(["run", "--all", "--tree", f"original={orig}", "--fast-math", "*", "-j", "2",
                             "--out", str(out)]) == 0
    rows = {r["tu"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}
    assert len(rows) == 6 and rows["transformer_engine.cpp"]["compiler"] == "host"
    assert rows["transformer_engine.cpp"]["rc"] == 0 and rows["cast/cast.cu"]["compiler"] == "nvcc"
    [gxx] = _calls(tmp_path, "g++")
    assert not any(a in gxx for a in ("--time", "-time", "-gencode", "--use_fast_math"))
    assert gxx[-2:] == ["-o", str(out / "obj" / "original__transformer_engine.cpp.o")]
    nvcc = _calls(tmp_path, "nvcc")
    assert len(nvcc) == 5 and all("--time" in c and "--use_fast_math" in c for c in nvcc)
    run = json.loads((out / "run.json").read_text())
    assert run["tus"] == ["*"] and run["database_entries"] == {"original": 6}
    assert run["order"]["original"][2] == "transformer_engine.cpp"
    # a later session's tree into the same folder keeps this one's record (replay needs both)
    migr = _tree(tmp_path, "migr")
    assert te_tu_times.main(["run", "--all", "--tree", f"migrated={migr}", "-j", "3", "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert set(run["order"]) == {"original", "migrated"} and run["jobs_by_tree"] == {"original": 2, "migrated": 3}


def _replay_dir(tmp_path: Path) -> Path:
    """A run folder made by hand. CMake order z1.cu, z2.cu, z3.cpp, a.cu, original 10, 10, 10, 30 s.
    ninja -j 2 in that order: z1, z2 0-10; z3 10-20 and a.cu 10-40: 40 s. Longest first (or name
    order, a.cu first) would give 30, -j unlimited 30, -j 1 60, equal durations 20.
    Migrated 5, 5, 5, 10: z1, z2 0-5; z3 5-10, a.cu 5-15: 15 s (-62.5%), CPU 60 -> 25 s."""
    d = tmp_path / "run"
    d.mkdir()
    order = ["z1.cu", "z2.cu", "z3.cpp", "a.cu"]
    (d / "run.json").write_text(json.dumps({"order": {"original": order, "migrated": order},
                                            "database_entries": {"original": 4, "migrated": 4}, "jobs": 2,
                                            "gencode": te_tu_times.DEFAULT_GENCODE}))
    rows = [("a.cu", "original", 0, 30.0), ("z2.cu", "original", 1, 0.5), ("z1.cu", "original", 0, 10.0),
            ("z2.cu", "original", 0, 10.0), ("z3.cpp", "original", 0, 10.0)]
    rows += [(tu, "migrated", 0, s) for tu, s in (("a.cu", 10.0), ("z1.cu", 5.0), ("z2.cu", 5.0), ("z3.cpp", 5.0))]
    (d / "results.jsonl").write_text("".join(json.dumps({"tu": tu, "tree": t, "rc": rc, "seconds": s}) + "\n"
                                             for tu, t, rc, s in rows))
    return d


def test_replay_is_ninja_greedy_in_cmake_order(tmp_path, capsys):
    d = _replay_dir(tmp_path)
    walls = {}
    for j in (1, 2, 4):
        js = tmp_path / f"j{j}.json"
        assert te_tu_times.main(["replay", str(d), "--tree", "original", "-j", str(j), "--json", str(js)]) == 0
        walls[j] = json.loads(js.read_text())["trees"]["original"]["replayed_wall_s"]
    assert walls == {1: 60.0, 2: 40.0, 4: 30.0}
    js, logs = tmp_path / "both.json", tmp_path / "logs"
    assert te_tu_times.main(["replay", str(d), "--tree", "original", "--tree", "migrated", "-j", "2",
                             "--json", str(js), "--ninja-log-dir", str(logs)]) == 0
    doc = json.loads(js.read_text())
    o, m = doc["trees"]["original"], doc["trees"]["migrated"]
    assert (o["replayed_wall_s"], o["cpu_s"], m["replayed_wall_s"], m["cpu_s"]) == (40.0, 60.0, 15.0, 25.0)
    assert o["critical_step"] == {"name": "a.cu", "elapsed_s": 30.0, "start_s": 10.0, "end_s": 40.0}
    assert [(r["tu"], r["start_s"], r["end_s"]) for r in o["schedule"]] == [
        ("z1.cu", 0.0, 10.0), ("z2.cu", 0.0, 10.0), ("z3.cpp", 10.0, 20.0), ("a.cu", 10.0, 40.0)]
    assert doc["change_pct"] == {"from": "original", "to": "migrated", "replayed_wall": -62.5, "cpu": -58.33}
    # labelled as what it is, in the JSON and on the terminal
    assert doc["kind"] == "replay of per-TU times" and "not a measured build" in doc["label"]
    assert "no link" in doc["label"] and "compile_commands.json order" in doc["order"]
    text = capsys.readouterr().out
    assert "REPLAY: replay of per-TU compile times" in text and "not a measured build" in text
    assert "replayed wall -62.5%" in text
    # the synthetic log is codemod impact's own input: `codemod impact LOG -j 2` reads the same build
    from codemod.impact.predict import analyse, load
    assert analyse(load(str(logs / "original.ninja_log")), jobs=2)["replayed_wall_s"] == 40.0


def test_replay_refuses_what_it_cannot_replay(tmp_path, capsys):
    d = _replay_dir(tmp_path)
    with (d / "results.jsonl").open("a") as f:  # the last row of a TU wins only when it compiled
        f.write(json.dumps({"tu": "a.cu", "tree": "migrated", "rc": 1, "seconds": 0.1}) + "\n")
    run = json.loads((d / "run.json").read_text())
    run["order"]["migrated"] = run["order"]["migrated"] + ["never.cu"]
    (d / "run.json").write_text(json.dumps(run))
    assert te_tu_times.main(["replay", str(d), "--tree", "migrated", "-j", "2"]) == 2
    assert "1 of 5 TUs have no successful compile" in capsys.readouterr().err
    (d / "run.json").write_text(json.dumps({"trees": {"original": ["a.cu"]}}))  # a run from before replay
    assert te_tu_times.main(["replay", str(d), "--tree", "original", "-j", "2"]) == 2
    assert "no compile_commands.json order" in capsys.readouterr().err


def test_replay_as_a_script(tmp_path):
    """As the device runs it: `python3 bench/te_tu_times.py replay` with codemod importable only from
    the repository beside the script (no PYTHONPATH, another working directory)."""
    import subprocess

    d = _replay_dir(tmp_path)
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "te_tu_times.py"), "replay", str(d), "--tree",
                           "original", "--tree", "migrated"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert "-j 2" in proc.stdout  # the -j the times were taken at
    assert "original: 4 of 4 compiles, replayed wall 40.0 s, CPU 60.0 s, critical step a.cu 30.0 s" in proc.stdout


def test_replay_of_a_recorded_te_build(tmp_path):
    """TE's recorded sm_90 -j16 build (golden/impact/te_sm90_j16): its 97 compiles as per-TU times,
    in the order ninja started them, replay to where the recorded build's last compile ended in
    codemod impact's own replay of the whole log (554.7 s); the build measured 556.3 s with its
    1.6 s link, the one step a replay of per-TU times leaves out."""
    from codemod.impact.predict import analyse, load

    loaded = load(str(ROOT / "golden" / "impact" / "te_sm90_j16" / "te_sm90_j16.ninja_log"))
    steps = loaded.steps
    rows = sorted(range(len(steps)), key=lambda k: (steps.start_ms[k], steps.lineno[k]))
    compiles = [(steps.name[k], int(steps.end_ms[k] - steps.start_ms[k]) / 1000) for k in rows
                if steps.name[k].endswith(".o")]
    assert len(compiles) == 97
    d = tmp_path / "run"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"order": {"sm90": [n for n, _ in compiles]}, "jobs": 16}))
    (d / "results.jsonl").write_text("".join(json.dumps({"tu": n, "tree": "sm90", "rc": 0, "seconds": s}) + "\n"
                                             for n, s in compiles))
    whole = analyse(loaded, jobs=16)
    last_compile = max(r["replayed"]["end_s"] for r in whole["steps"] if r["name"].endswith(".o"))
    js = tmp_path / "r.json"
    assert te_tu_times.main(["replay", str(d), "--tree", "sm90", "-j", "16", "--json", str(js)]) == 0
    tree = json.loads(js.read_text())["trees"]["sm90"]
    assert tree["replayed_wall_s"] == last_compile == 554.711
    assert tree["critical_step"]["name"].endswith("activation/gelu_grouped.cu.o")  # the TU names are outputs here
    assert whole["measured_wall_s"] - tree["replayed_wall_s"] < 2.0
