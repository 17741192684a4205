"""`codemod impact --retarget`, several `--what-if`s and `--first`: a single-arch build re-priced
for a target list, with the migration of several rules, replayed in another source order."""

from __future__ import annotations

import json

import pytest

from codemod.cli import main
from codemod.errors import UsageError
from codemod.impact.nvcc_time import parse_path
from codemod.impact.order import first_steps, read_order
from codemod.impact.predict import load, predict
from codemod.impact.targets import (Retarget, Source, TargetList, combine_what_ifs, per_target_ms, retarget_what_if,
                                    static_share)


def _csv(path, units, driver=True):
    """nvcc --time rows: units = [(source, pid, host ms, {target: (cicc ms, ptxas ms)}, fatbinary ms)]."""
    rows = ["source file name , phase name , phase input files , phase output file , arch , tool, metric , unit"]
    for src, pid, host, targets, fatbin in units:
        tmp = f"tmp/tmpxft_{pid}_00000000"
        rows.append(f"{src} , cudafe++ , {tmp}-5_{src}.cpp4.ii , {tmp}-6_x.cpp , , nvcc , {host / 2} , ms")
        for t, (cicc, ptxas) in targets.items():
            rows.append(f"{src} , cicc , {tmp}-7_{src}.cpp1.ii , {tmp}-6_{t}.ptx , compute_{t} , nvcc , {cicc} , ms")
            if ptxas is not None:
                rows.append(f"{src} , ptxas , {tmp}-6_{t}.ptx , {tmp}-8_{t}.cubin , sm_{t} , nvcc , {ptxas} , ms")
        if fatbin:
            rows.append(f"{src} , fatbinary , {tmp}-8.cubin , {tmp}-9.fatbin , , nvcc , {fatbin} , ms")
        if driver:
            rows.append(f"{src} , g++ (compiling) ,  , {src}.o , , nvcc , {host / 2} , ms")
            rows.append(f" , nvcc (driver) ,  , {src}.o ,  , nvcc , 1 , ms")
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _base(tmp_path):
    """An sm_90 build on -j2: a.cu 10 s (host 2, device 8), b.cu 6 s (host 3, device 3), then a link."""
    log = tmp_path / "sm90.ninja_log"
    log.write_text("# ninja log v7\n0\t6000\t0\tb.cu.o\t2b\n0\t10000\t0\ta.cu.o\t1a\n10000\t10500\t0\tlib.so\t3c\n")
    csv = _csv(tmp_path / "sm90.csv", [("a.cu", "0000000a", 2000, {"90": (5000, 3000)}, 0),
                                       ("b.cu", "0000000b", 3000, {"90": (2000, 1000)}, 0)])
    return load(str(log), [csv])


def _blackwell(tmp_path):
    """A build of a.cu at 100a and 103a (a: 12 s + 8 s of device time); b.cu did not finish there."""
    log = tmp_path / "sm100a.ninja_log"
    log.write_text("# ninja log v7\n0\t23000\t0\ta.cu.o\t1a\n")
    csv = _csv(tmp_path / "sm100a.csv",
               [("a.cu", "0000001a", 3000, {"100a": (7000, 4000), "103a": (5000, 3000)}, 1000)])
    return load(str(log), [csv])


def _row(result, name):
    return next(r for r in result[1] if r["name"] == name)["targets"]


def test_per_target_ms_shares_untargeted_device_phases_and_drops_unfinished_targets(tmp_path):
    (a,), _ = parse_path(_csv(tmp_path / "t.csv", [("a.cu", "0000000a", 2000, {"100a": (7000, 4000),
                                                                                 "103a": (5000, 3000)}, 1000)]))
    assert per_target_ms(a) == {"100a": pytest.approx(11500), "103a": pytest.approx(8500)}
    # a compile the log caught in its second target: only the finished one prices
    (part,), _ = parse_path(_csv(tmp_path / "p.csv", [("a.cu", "0000000a", 2000, {"100a": (7000, 4000),
                                                                                    "103a": (5000, None)}, 0)],
                                 driver=False))
    assert not part.complete and per_target_ms(part) == {"100a": pytest.approx(11000)}


def test_static_share_inverts_the_instantiation_share_factor():
    host, device, static = 2000.0, 8000.0, 0.25
    factor = (host + device * static) / (host + device)
    assert static_share(factor, host, device) == pytest.approx(static)
    assert static_share(0.0, host, device) == 0.0 and static_share(1.5, host, device) == 1.0
    assert static_share(0.5, 1000.0, 0.0) == 1.0


def test_combine_what_ifs_adds_the_time_each_rule_takes_out():
    one = {"remove": [], "scale": {"*/a.cu.o": 0.8, "*/b.cu.o": 0.5}, "description": "rule 1"}
    two = {"remove": ["*/c.cu.o"], "scale": {"*/a.cu.o": 0.7}, "description": "rule 2"}
    both = combine_what_ifs([one, two])
    # a.cu: 0.2 and 0.3 of its time taken out by disjoint kernels -> 0.5 left (not 0.8 * 0.7 = 0.56)
    assert both["scale"] == {"*/a.cu.o": pytest.approx(0.5), "*/b.cu.o": pytest.approx(0.5)}
    assert both["remove"] == ["*/c.cu.o"] and "rule 1" in both["description"] and "rule 2" in both["description"]
    assert combine_what_ifs([one, one, one])["scale"]["*/b.cu.o"] == 0.0   # never below 0
    assert combine_what_ifs([one]) is one


def test_retarget_prices_each_target_from_the_build_that_measured_it(tmp_path):
    base = Source(_base(tmp_path), {"remove": [], "scale": {"a.cu.o": (2000 + 8000 * 0.25) / 10000}})
    bw = Source(_blackwell(tmp_path), {"remove": [], "scale": {}}, static={})
    spec = Retarget([TargetList("a.cu", ("75", "90", "100a", "120f"), {"75": ("90", 0.5), "120f": ("100a", 2.0)})],
                    fixed=[("b.cu", 500.0)])
    what_if, rows = retarget_what_if(base, spec, [bw])
    a = next(r for r in rows if r["name"] == "a.cu.o")
    # 90 from the base (8 s x static 0.25), 75 as half of it, 100a from the second build (11.5 s, its own
    # what-if leaves all of it), 120f as twice that
    assert a["targets"]["90"] == {"ms": 2000.0, "from": "0:90", "static": 0.25}
    assert a["targets"]["75"]["ms"] == 1000.0 and a["targets"]["100a"] == {"ms": 11500.0, "from": "1:100a",
                                                                            "static": 1.0}
    assert a["targets"]["120f"] == {"ms": 23000.0, "from": "1:100a*2", "static": 1.0}
    assert what_if["scale"]["a.cu.o"] == pytest.approx((2000 + 1000 + 2000 + 11500 + 23000) / 10000)
    # b.cu keeps its one target (no list matches it) at the fixed device time
    assert what_if["scale"]["b.cu.o"] == pytest.approx((3000 + 500) / 6000)
    assert predict(base.loaded, what_if)["predicted_wall_s"] == pytest.approx(40.0, abs=0.01)   # 39.5 s + link
    # the second build's what-if applies to the targets it prices: a.cu at 100a is 11.5 s of its 23 s
    half = Source(bw.loaded, {"remove": [], "scale": {"a.cu.o": (3000 + 0.5 * 20000) / 23000}})
    assert _row(retarget_what_if(base, spec, [half]), "a.cu.o")["100a"] == {"ms": 5750.0, "from": "1:100a",
                                                                            "static": 0.5}
    # a compile that build did not finish (no step) prices its finished target, at the static share given
    log = tmp_path / "cut.ninja_log"
    log.write_text("# ninja log v7\n0\t500\t0\tother.o\t1a\n")
    cut = _csv(tmp_path / "cut.csv", [("a.cu", "0000002a", 3000, {"100a": (7000, 4000), "103a": (5000, None)}, 0)],
               driver=False)
    unfinished = Source(load(str(log), [cut]), {"remove": [], "scale": {}}, static={"a.cu": 0.1})
    assert _row(retarget_what_if(base, spec, [unfinished]), "a.cu.o")["100a"] == {"ms": 1100.0, "from": "1:100a",
                                                                                  "static": 0.1}
    with pytest.raises(UsageError, match="no build prices target 89 of a.cu.o"):
        retarget_what_if(base, Retarget([TargetList("a.cu", ("89",))]), [bw])


def test_order_reads_a_build_order_diff_or_a_list():
    diff = ("+set(te_longest_sources\n+    activation/gelu.cu  # 12.0 s\n+    cast/cast.cu  # 9.0 s\n+)\n")
    assert read_order(diff) == ["activation/gelu.cu", "cast/cast.cu"]
    assert read_order("# first\ncast/cast.cu\n\nactivation/gelu.cu\n") == ["cast/cast.cu", "activation/gelu.cu"]
    names = ["x.dir/activation/gelu.cu.o", "x.dir/cast/cast.cu.o", "lib.so"]
    assert first_steps(names, ["cast/cast.cu", "activation/gelu.cu"]) == names[1::-1]
    with pytest.raises(UsageError, match="no step compiles no/such.cu"):
        first_steps(names, ["no/such.cu"])


def test_cli_retarget_with_two_what_ifs_and_a_first_list(tmp_path, capsys):
    base = _base(tmp_path)
    _blackwell(tmp_path)
    for n, f in ((1, 0.9), (2, (2000 + 8000 * 0.25) / 10000 + 0.1)):   # together: static 0.25 of a.cu
        (tmp_path / f"r{n}.what_if.json").write_text(json.dumps({"what_if": {"remove": [], "scale": {"a.cu.o": f}}}))
    spec = {"lists": [{"glob": "*.cu", "targets": ["90", "100a"], "like": {"100a": ["90", 1.0]}}],
            "price_from": [{"log": str(tmp_path / "sm100a.ninja_log"), "nvcc_time": [str(tmp_path / "sm100a.csv")]}]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "first.txt").write_text("a.cu\n")
    out = tmp_path / "p.json"
    args = ["impact", base.inputs["log"], "--nvcc-time", str(tmp_path / "sm90.csv"), "--retarget",
            str(tmp_path / "spec.json"), "--ninja-jobs", "1", "--json", str(out)]
    assert main(args + ["--what-if", str(tmp_path / "r1.what_if.json"), "--what-if", str(tmp_path / "r2.what_if.json"),
                        "--first", str(tmp_path / "first.txt")]) == 0
    doc = json.loads(out.read_text())
    units = {u["name"]: u for u in doc["retarget"]["units"]}
    # a.cu: 2 s host + 2 s at 90 (static 0.25) + 11.5 s at 100a; b.cu: 3 s host + 3 s at 90 + 3 s (100a as 90)
    assert units["a.cu.o"]["new_device_s"] == pytest.approx(13.5) and units["b.cu.o"]["new_device_s"] == 6.0
    assert doc["predicted_wall_s"] == pytest.approx(15.5 + 9.0 + 0.5, abs=0.01)
    assert doc["options"]["first"] == ["a.cu.o"]
    assert "retarget: 2 CUDA step(s)" in capsys.readouterr().out
    assert main(["impact", base.inputs["log"], "--retarget", str(tmp_path / "spec.json")]) == 2   # no nvcc rows
    assert main(args + ["--scale", "a.cu=0.5"]) == 2
    assert main(args + ["--first", str(tmp_path / "spec.json")]) == 2          # no such sources
    assert "--retarget needs the nvcc --time CSV" in capsys.readouterr().err


def test_host_scale_shrinks_the_host_phases_and_keeps_the_static_share_readable(tmp_path):
    host, device, static, kept = 2000.0, 8000.0, 0.25, 0.5
    factor = (host * kept + device * static) / (host + device)
    assert static_share(factor, host, device, kept) == pytest.approx(static)
    one = {"remove": [], "scale": {"a.cu.o": 0.9}, "host_scale": {"a.cu.o": 0.8}}
    two = {"remove": [], "scale": {"a.cu.o": 0.9}, "host_scale": {"a.cu.o": 0.7}}
    assert combine_what_ifs([one, two])["host_scale"] == {"a.cu.o": pytest.approx(0.5)}
    # a.cu at sm_90: host 2 s -> 1 s, device 8 s -> 2 s; the retarget keeps both
    base = Source(_base(tmp_path), {"remove": [], "scale": {"a.cu.o": factor}, "host_scale": {"a.cu.o": kept}})
    what_if, rows = retarget_what_if(base, Retarget([TargetList("a.cu", ("90",))]))
    a = next(r for r in rows if r["name"] == "a.cu.o")
    assert a["new_host_s"] == 1.0 and a["new_device_s"] == 2.0
    assert what_if["scale"]["a.cu.o"] == pytest.approx(0.3)


def test_static_at_prices_each_target_with_the_kernels_that_compile_there(tmp_path):
    # a.cu at sm_90: 8 s of device time, a quarter static; at 75 (priced as half of 90) only a tenth of the
    # sm_90 time stays, the rest of its static kernels being gated to sm_90 and later
    base = Source(_base(tmp_path), {"remove": [], "scale": {"a.cu.o": (2000 + 8000 * 0.25) / 10000},
                                    "static_at": {"a.cu.o": {"75": 0.1}}})
    spec = Retarget([TargetList("a.cu", ("75", "90"), {"75": ("90", 0.5)})])
    a = _row(retarget_what_if(base, spec), "a.cu.o")
    assert a["90"] == {"ms": 2000.0, "from": "0:90", "static": 0.25}
    assert a["75"] == {"ms": 400.0, "from": "0:90*0.5", "static": 0.1}
    one = {"remove": [], "scale": {}, "static_at": {"a.cu.o": {"75": 0.1}}}
    assert combine_what_ifs([one, {"remove": [], "scale": {}}])["static_at"] == {"a.cu.o": {"75": 0.1}}
    with pytest.raises(UsageError, match="static_at"):
        combine_what_ifs([one, one])
