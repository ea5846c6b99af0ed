"""tools/slim_wheel.py: a bitsandbytes wheel cut to the libraries a CUDA 13 runner loads
still installs with pip and keeps every other file with its RECORD hash; the full wheel is
kept in .whl-full/, never overwritten; another package's wheel and bad input are left alone."""

import base64
import hashlib
import runpy
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

TOOL = Path(__file__).parents[1] / "tools" / "slim_wheel.py"
LIBS = ["cpu", "cuda118", "cuda128", "cuda130", "cuda132", "rocm72", "xpu2026"]
KEPT = ["cpu", "cuda130", "cuda132", "xpu2026"]


def digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(where: Path, name: str = "bitsandbytes", libs: dict | None = None) -> Path:
    (where / ".whl").mkdir(exist_ok=True)
    wheel = where / ".whl" / f"{name}-0.0.1-py3-none-any.whl"
    info = f"{name}-0.0.1.dist-info"
    files = {f"{name}/__init__.py": b"VERSION = '0.0.1'\n"}
    files.update(libs if libs is not None else
                 {f"bitsandbytes/libbitsandbytes_{t}.so": t.encode() * 100 for t in LIBS})  # fmt: skip
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.0.1\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{n},{digest(d)},{len(d)}\n" for n, d in files.items()) + f"{info}/RECORD,,\n"
    files[f"{info}/RECORD"] = record.encode()
    with zipfile.ZipFile(wheel, "w") as z:
        for n, data in files.items():
            z.writestr(n, data)
    return wheel


def libs_in(wheel: Path) -> list[str]:
    return sorted(n.rsplit("_", 1)[-1][:-3] for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so"))


@pytest.fixture
def tool(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # with no wheel named it cuts .whl/*.whl of the working directory
    return runpy.run_path(str(TOOL))


def test_only_the_kept_targets_stay_and_pip_installs_the_cut_wheel(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    assert tool["main"]([str(wheel)]) == 0
    assert libs_in(wheel) == KEPT
    z = zipfile.ZipFile(wheel)
    rows = [r.split(",") for r in z.read("bitsandbytes-0.0.1.dist-info/RECORD").decode().splitlines()]
    assert all(r[0] for r in rows)  # pip fails on an empty row
    listed = {r[0]: r[1] for r in rows}
    assert set(listed) == set(z.namelist())  # a row for each file left, none for a dropped one
    for n, h in listed.items():
        assert h == ("" if n.endswith("RECORD") else digest(z.read(n))), n
    assert (tmp_path / ".whl-full" / wheel.name).exists()
    assert "3 libraries dropped" in capsys.readouterr().out
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--target", str(target), str(wheel)], check=True)  # fmt: skip
    installed = sorted(p.name for p in (target / "bitsandbytes").glob("*.so"))
    assert installed == [f"libbitsandbytes_{t}.so" for t in KEPT]


def test_a_cut_wheel_is_left_as_it_is_and_the_full_one_never_overwritten(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    tool["main"]([str(wheel)])
    full = tmp_path / ".whl-full" / wheel.name
    full_bytes, cut_bytes = full.read_bytes(), wheel.read_bytes()
    assert tool["main"]([str(wheel)]) == 0
    assert wheel.read_bytes() == cut_bytes and full.read_bytes() == full_bytes
    assert "0 libraries dropped" in capsys.readouterr().out
    assert tool["main"](["--keep", "cpu", str(wheel)]) == 0  # cut further: the full copy stays
    assert libs_in(wheel) == ["cpu"]
    assert full.read_bytes() == full_bytes and libs_in(full) == sorted(LIBS)
    assert not list(tmp_path.rglob("*.tmp")) and not list(tmp_path.rglob("*.part"))


def test_with_no_wheel_named_it_cuts_those_in_dot_whl(tool, tmp_path, capsys):
    wheel = make_wheel(tmp_path)
    assert tool["main"]([]) == 0
    assert libs_in(wheel) == KEPT
    assert "3 libraries dropped" in capsys.readouterr().out


def test_another_packages_native_libraries_are_never_touched(tool, tmp_path):
    libs = {"torch/lib/libtorch_cuda.so": b"x" * 50, "torch/lib/libtorch_python.so": b"y" * 50}
    wheel = make_wheel(tmp_path, name="torch", libs=libs)
    before = wheel.read_bytes()
    assert tool["main"]([]) == 0
    assert wheel.read_bytes() == before and not (tmp_path / ".whl-full").exists()


def test_bad_input_is_an_error_that_names_it_and_changes_nothing(tool, tmp_path, capsys):
    assert tool["main"]([]) == 2
    assert "no wheel" in capsys.readouterr().err
    wheel = make_wheel(tmp_path)
    assert tool["main"](["--keep", ",", str(wheel)]) == 2
    assert "names no library target" in capsys.readouterr().err
    outside = tmp_path / "dist" / wheel.name
    outside.parent.mkdir()
    outside.write_bytes(wheel.read_bytes())
    assert tool["main"]([str(outside)]) == 2  # its full copy would land where git sees it
    assert "not in a .whl/ folder" in capsys.readouterr().err
    broken = tmp_path / ".whl" / "broken-1.0-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    assert tool["main"]([str(broken)]) == 2
    assert "broken-1.0-py3-none-any.whl: not a readable wheel" in capsys.readouterr().err
    assert tool["main"]([str(tmp_path / ".whl" / "missing.whl")]) == 2
    assert "missing.whl" in capsys.readouterr().err
    assert libs_in(wheel) == sorted(LIBS) and not (tmp_path / ".whl-full").exists()
    assert libs_in(outside) == sorted(LIBS)
