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

FAKE_NVCC = """import json, sys, time
args = sys.argv[1:]
out = args[args.index("-o") + 1]
open(out, "w").write("obj")
with open(sys.argv[0] + ".calls", "a") as f:
    f.write(json.dumps(args) + "\\n")
if "bad.cu" in " ".join(args):
    print("error: broken")
    sys.exit(1)
"""


def _tree(tmp_path: Path, name: str) -> Path:
    build = tmp_path / name
    build.mkdir()
    nvcc = tmp_path / "nvcc.py"
    nvcc.write_text(FAKE_NVCC)
    src = tmp_path / "src" / "transformer_engine" / "common"
    entries = []
    for tu in ("activation/gelu.cu", "activation/gelu_grouped.cu", "cast/cast.cu", "cast/bad.cu",
               "transpose/cast_transpose.cu"):
        entries.append({"directory": str(build), "file": str(src / tu), "output": f"{tu}.o",
                        "arguments": [sys.executable, str(nvcc), "-O3", "--generate-code=arch=compute_90,code=sm_90",
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


def test_run_and_report_both_trees(tmp_path, capsys):
    orig, migr = _tree(tmp_path, "orig"), _tree(tmp_path, "migr")
    out = tmp_path / "run"
    assert te_tu_times.main(["run", "--tree", f"original={orig}", "--tree", f"migrated={migr}", "-j", "3",
                             "--out", str(out)]) == 0
    rows = [json.loads(l) for l in (out / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 8
    assert {(r["tu"], r["tree"]) for r in rows if r["rc"] != 0} == {("cast/bad.cu", "original"), ("cast/bad.cu", "migrated")}
    assert "error: broken" in next(r for r in rows if r["rc"] != 0)["log_tail"]
    calls = [json.loads(l) for l in (tmp_path / "nvcc.py.calls").read_text().splitlines()]
    fast = [c for c in calls if "--use_fast_math" in c]
    assert len(fast) == 4 and all(any("/common/activation/" in a for a in c) for c in fast)
    # --resume compiles only what failed
    assert te_tu_times.main(["run", "--tree", f"original={orig}", "--tree", f"migrated={migr}", "-j", "2",
                             "--out", str(out), "--resume"]) == 0
    assert len((out / "results.jsonl").read_text().splitlines()) == 10
    md, js = tmp_path / "t.md", tmp_path / "t.json"
    assert te_tu_times.main(["report", str(out), "--json", str(js), "--md", str(md)]) == 0
    text = md.read_text()
    assert "| `activation/gelu.cu` |" in text and "FAILED rc 1" in text
    assert "arch=compute_100a,code=sm_100a" in text
    doc = json.loads(js.read_text())
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
