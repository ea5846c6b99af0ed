"""tools/slim_wheel.py: a wheel cut to the libraries a CUDA 13 runner loads still installs
with pip, keeps every other file, and the full wheel is kept in a folder beside its own."""

import runpy
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

TOOL = Path(__file__).parents[1] / "tools" / "slim_wheel.py"
LIBS = ["cpu", "cuda118", "cuda128", "cuda130", "cuda132", "rocm72", "xpu2026"]


def make_wheel(where: Path) -> Path:
    (where / ".whl").mkdir(exist_ok=True)
    wheel = where / ".whl" / "fakebnb-1.0-py3-none-any.whl"
    files = {"fakebnb/__init__.py": b"VERSION = '1.0'\n"}
    files.update({f"fakebnb/libfakebnb_{t}.so": t.encode() * 100 for t in LIBS})
    files["fakebnb-1.0.dist-info/METADATA"] = b"Metadata-Version: 2.1\nName: fakebnb\nVersion: 1.0\n"
    files["fakebnb-1.0.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    record = "".join(f"{name},,\n" for name in files) + "fakebnb-1.0.dist-info/RECORD,,\n"
    files["fakebnb-1.0.dist-info/RECORD"] = record.encode()
    with zipfile.ZipFile(wheel, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return wheel


@pytest.fixture
def tool(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # with no wheel named it cuts .whl/*.whl of the working directory
    return runpy.run_path(str(TOOL))


def test_only_the_kept_targets_stay_and_pip_installs_the_cut_wheel(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    assert tool["main"]([str(wheel)]) == 0
    names = zipfile.ZipFile(wheel).namelist()
    kept = sorted(n.split("_")[-1][:-3] for n in names if n.endswith(".so"))
    assert kept == ["cpu", "cuda130", "cuda132", "xpu2026"]
    assert "fakebnb/__init__.py" in names
    record = zipfile.ZipFile(wheel).read("fakebnb-1.0.dist-info/RECORD").decode()
    assert "cuda118" not in record and "rocm72" not in record and "cuda130" in record
    assert "\n\n" not in record  # pip fails on an empty row
    assert (tmp_path / ".whl-full" / wheel.name).exists()
    assert "3 libraries dropped" in capsys.readouterr().out
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--target", str(target), str(wheel)], check=True)
    installed = sorted(p.name for p in (target / "fakebnb").glob("*.so"))
    assert installed == [f"libfakebnb_{t}.so" for t in ["cpu", "cuda130", "cuda132", "xpu2026"]]


def test_a_cut_wheel_is_left_as_it_is_and_the_full_one_never_overwritten(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    tool["main"]([str(wheel)])
    full = tmp_path / ".whl-full" / wheel.name
    full_bytes, cut_bytes = full.read_bytes(), wheel.read_bytes()
    assert tool["main"]([str(wheel)]) == 0
    assert wheel.read_bytes() == cut_bytes and full.read_bytes() == full_bytes
    assert "0 libraries dropped" in capsys.readouterr().out
    assert tool["main"](["--keep", "cpu", str(wheel)]) == 0  # cut further: the full copy stays
    assert [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")] == [
        "fakebnb/libfakebnb_cpu.so"]
    assert full.read_bytes() == full_bytes
    assert len(zipfile.ZipFile(full).namelist()) == len(LIBS) + 4


def test_with_no_wheel_named_it_cuts_those_in_dot_whl(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    assert tool["main"]([]) == 0
    assert len(zipfile.ZipFile(wheel).namelist()) == len(LIBS) + 4 - 3
    assert "3 libraries dropped" in capsys.readouterr().out


def test_no_wheel_or_nothing_to_keep_is_an_error_that_says_so(tool, tmp_path, capsys):
    assert tool["main"]([]) == 2
    assert "no wheel" in capsys.readouterr().err
    wheel = make_wheel(tmp_path)
    assert tool["main"](["--keep", ",", str(wheel)]) == 2
    assert "names no library target" in capsys.readouterr().err
    assert not (tmp_path / ".whl-full" / wheel.name).exists()
