"""Issue 33: the inputs that still ended in an internal error (a traceback's last line) are one
line naming the file, exit 2: disk full while storing the manifest, malformed journals, a
symlink loop in the tree, a latin-1 byte in an edited CMakeLists, a non-UTF-8 file name, a
5,000-digit integer. Names holding escape sequences reach the terminal sanitised
(codemod.text.printable, used by the CLI's printers)."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil

import pytest

from codemod.text import printable

from .conftest import ACTLIB_RULE, GOLDEN, LOG

BIG = "9" * 5000


@pytest.fixture
def actlib(tmp_path):
    lib = tmp_path / "lib"
    shutil.copytree(GOLDEN / "actlib" / "input", lib)
    return lib


def tree_hash(root) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames[:] = sorted(d for d in dirnames if d != ".codemod")
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            h.update(p.encode("utf-8", "surrogateescape"))
            if not os.path.islink(p):
                h.update(open(p, "rb").read())
    return h.hexdigest()


# -- disk full -------------------------------------------------------------------------------------

def test_disk_full_storing_the_manifest(cli, actlib, monkeypatch):
    """The manifest is written in the journaled transaction with the files: a full disk while its
    temp file is written (os.write fails, naming no file) rolls everything back and names that file."""
    write = os.write

    def full(fd, data):
        if "manifests" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write(fd, data)

    monkeypatch.setattr(os, "write", full)
    before = tree_hash(actlib)
    err = cli.fails("apply", actlib, "--target", ACTLIB_RULE, "-q", "--no-precheck", "--write",
                    says=("No space left on device", "activation.json"))
    assert "manifests" in err
    assert tree_hash(actlib) == before


def test_disk_full_while_writing_names_the_file(tmp_path, monkeypatch):
    """_write_tmp itself: an OSError of os.write (which names no file) names the temp file."""
    from codemod.apply.write import journal

    def no_space(fd, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal.os, "write", no_space)
    with pytest.raises(OSError) as info:
        journal._write_tmp(tmp_path / ".x.codemod-tmp", b"data", None)
    assert info.value.filename == str(tmp_path / ".x.codemod-tmp") and info.value.errno == errno.ENOSPC


# -- journals --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    b"{ nope",
    b"[" * 100_000,
    b'{"schema": "codemod-journal/1", "files": [1, "x", null]}',
    b'{"schema": "codemod-journal/1", "files": [{"path": 3}]}',
    b'{"schema": "codemod-journal/1", "files": [], "dirs": 7}',
    b'{"schema": "codemod-journal/1", "files": [{"path": "a", "mode": ' + BIG.encode() + b"}]}",
    b'{"schema": "codemod-journal/1", "files": [{"path": "a", "mode": NaN}]}',
    b"\xff\xfe{",
])
def test_malformed_journal(cli, actlib, text):
    from codemod.apply.write.journal import state
    from codemod.tool_state import make_folder

    st = state(actlib)                          # the tree's state folder (per user, outside the tree)
    make_folder(st.folder, st.folder)           # 0700, as codemod makes it
    st.journal.write_bytes(text)
    before = tree_hash(actlib)
    cli.fails("apply", actlib, "--target", ACTLIB_RULE, "-q", "--no-precheck", says=("journal",))
    assert tree_hash(actlib) == before


# -- trees -----------------------------------------------------------------------------------------

def test_symlink_loop_in_the_tree(cli, actlib):
    (actlib / "loop_a").symlink_to(actlib / "loop_b")
    (actlib / "loop_b").symlink_to(actlib / "loop_a")
    (actlib / "cast" / "self").symlink_to(actlib / "cast")
    code, out, err = cli("analyze", actlib, "-q", "--target", ACTLIB_RULE)
    assert "internal error" not in err and "Traceback" not in err, err
    assert code in (0, 1), err


def test_symlink_loop_named_as_a_tu(cli, lib, tmp_path):
    (lib / "x.cu").unlink() if (lib / "x.cu").exists() else None
    (lib / "x.cu").symlink_to(lib / "x.cu")
    cli.fails("analyze", lib / "x.cu", "-q", says=("x.cu",))


def test_latin1_byte_in_the_edited_cmakelists(cli, actlib):
    cmake = actlib / "CMakeLists.txt"
    cmake.write_bytes(b"# caf\xe9 au lait\n" + cmake.read_bytes())
    before = tree_hash(actlib)
    cli.fails("apply", actlib, "--target", ACTLIB_RULE, "-q", "--no-precheck", "--write",
              says=("CMakeLists.txt:1", "UTF-8"))
    assert tree_hash(actlib) == before


def test_non_utf8_file_name(cli, actlib, tmp_path):
    name = os.fsencode(str(actlib / "activation")) + b"/caf\xe9.cu"
    with open(name, "wb") as fh:
        fh.write(b"void nothing() {}\n")
    code, out, err = cli("analyze", actlib, "-q", "--target", ACTLIB_RULE, "--json", tmp_path / "a.json")
    assert "internal error" not in err and "Traceback" not in err, err
    assert code in (0, 1) or (code == 2 and err.count("\n") == 1), err
    if code == 0:
        json.loads((tmp_path / "a.json").read_text())


def test_non_utf8_file_name_in_apply(cli, actlib, tmp_path):
    name = os.fsencode(str(actlib / "activation")) + b"/caf\xe9.cu"
    with open(name, "wb") as fh:
        fh.write(b"void nothing() {}\n")
    code, out, err = cli("apply", actlib, "--target", ACTLIB_RULE, "-q", "--no-precheck")
    assert "internal error" not in err and "Traceback" not in err, err


# -- 5,000-digit integers --------------------------------------------------------------------------

def test_big_integer_in_a_rule(cli, lib, tmp_path):
    rule = tmp_path / "rule.yaml"
    rule.write_text(ACTLIB_RULE.read_text().replace("id: ", f"bogus_number: {BIG}\nid: ", 1))
    cli.fails("analyze", lib, "-q", "--target", rule, says=(str(rule),))


def test_big_integer_in_a_compile_db(cli, lib, tmp_path):
    db = tmp_path / "compile_commands.json"
    db.write_text(f'[{{"directory": {BIG}, "file": "k.cu", "command": "nvcc k.cu"}}]')
    cli.fails("analyze", lib, "-q", "--compile-db", db, says=(str(db),))


def test_big_integer_in_a_ninja_log(cli, tmp_path):
    lines = LOG.read_text().splitlines()
    first = lines[1].split("\t")
    log = tmp_path / "big.ninja_log"
    log.write_text("\n".join([lines[0], "\t".join([first[0], BIG] + first[2:])] + lines[2:]) + "\n")
    cli.fails("impact", log, says=(f"{log}:2",))


def test_big_integer_in_a_pool_depth(cli, tmp_path):
    manifest = tmp_path / "build.ninja"
    manifest.write_text(f"pool p\n  depth = {BIG}\n")
    cli.fails("impact", LOG, "--build-ninja", manifest, says=("build.ninja",))


def test_big_integer_in_a_parity_analysis(cli, tmp_path):
    analysis = tmp_path / "analysis.json"
    analysis.write_text(f'{{"schema_version": {BIG}}}')
    cli.fails("parity", "generate", GOLDEN / "actlib" / "input", "--target", ACTLIB_RULE, "--analysis", analysis,
              "--profile", "actlib", "-o", tmp_path / "out", says=(str(analysis),))


# -- names reach the terminal sanitised --------------------------------------------------------------

def test_printable():
    assert printable("a\x1b[2Jb\rc\x07d\x9be") == "a\\x1b[2Jb\\x0dc\\x07d\\x9be"
    assert printable("caf\udce9.cu") == "caf\\xe9.cu"
    assert printable("tab\tok") == "tab\tok"
    assert printable("x" * 100, 10) == "xxxxxxx..."
    assert printable("\u202eevil") == "\\u202eevil"


def test_escape_in_a_file_name_is_sanitised(cli, tmp_path):
    bad = tmp_path / "log\x1b]0;pwned\x07\r.ninja_log"
    err = cli.fails("impact", bad)
    assert "\x1b" not in err and "\r" not in err and "\x07" not in err
    assert "\\x1b]0;pwned" in err


def test_escape_in_a_kernel_file_name_is_sanitised(cli, lib, tmp_path):
    (lib / "k\x1b[31m.cu").write_text((lib / "k.cu").read_text().replace("entry(", "entry2("))
    code, out, err = cli("analyze", lib)
    assert "internal error" not in err, err
    assert "\x1b" not in out + err and "k\\x1b[31m.cu" in out, out


def test_escape_in_a_rule_id_is_refused_or_sanitised(cli, lib, tmp_path):
    rule = tmp_path / "rule.yaml"
    rule.write_text(ACTLIB_RULE.read_text().replace("id: activation", 'id: "act\\e[2J\\rivation"', 1))
    code, out, err = cli("analyze", lib, "-q", "--target", rule)
    assert "\x1b" not in out + err and "\r" not in out + err, err
    assert "internal error" not in err
