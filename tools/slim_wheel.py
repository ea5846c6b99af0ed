"""Cut a bitsandbytes wheel down to the native libraries one GPU runner loads, in place.

The device runner takes at most 64 MiB a call (tracked files and what `carry` names);
bitsandbytes 0.50.2's wheel is 43 MB, most of it libraries for CUDA 11.8-12.8 and ROCm that
a CUDA 13 runner never loads. This rewrites each wheel named (by default every `.whl/*.whl`)
without bitsandbytes' libraries whose target (cuda130, rocm72, cpu) starts with none of KEEP
(another package's files are never touched), and drops their lines from the
wheel's RECORD so pip installs it as it did the full one (7.4 MB for 0.50.2: the CUDA 13.0
and 13.2 libraries, the CPU and XPU ones). A wheel must lie in a `.whl/` folder: the full
one is kept in `.whl-full/` beside it (git ignores both; a call carries only what it names),
unless one of its name is there already; a wheel with nothing to drop is left as it is.

    python tools/slim_wheel.py [--keep cuda13,cpu,xpu] [WHEEL ...]
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import zipfile
from pathlib import Path

# bitsandbytes' native libraries only: another package's lib<x>_<y>.so (libtorch_cuda.so,
# libarrow_python.so) is never touched
NATIVE = re.compile(r"^bitsandbytes/libbitsandbytes_(?P<target>[a-z]+\d*)\.(so|dll|dylib)$")


def dropped(name: str, keep: list[str]) -> bool:
    """A native library of the wheel whose target (cuda130, rocm72, cpu) no KEEP prefix names."""
    m = NATIVE.search(name)
    return bool(m) and not any(m.group("target").startswith(k) for k in keep)


def full_copy(wheel: Path) -> Path:
    """Where the full wheel is kept: `.whl-full/NAME` for `.whl/NAME` (git ignores both)."""
    folder = wheel.resolve().parent
    if folder.name != ".whl":
        raise ValueError(f"{wheel}: not in a .whl/ folder (the full copy goes to .whl-full/ "
                         "beside it, which git ignores)")
    return folder.with_name(".whl-full") / wheel.name


def slim(wheel: Path, keep: list[str]) -> list[str]:
    """Rewrite WHEEL without the dropped libraries; return their names (none: left as is)."""
    full = full_copy(wheel)
    try:
        zin = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{wheel}: not a readable wheel ({exc})") from None
    with zin:
        gone = [i.filename for i in zin.infolist() if dropped(i.filename, keep)]
        if not gone:
            return []
        if not full.exists():  # written whole, then renamed: never a copy cut short
            full.parent.mkdir(exist_ok=True)
            part = full.with_name(full.name + ".part")
            shutil.copy2(wheel, part)
            part.replace(full)
        tmp = wheel.with_name(wheel.name + ".tmp")
        try:
            with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zout:
                for info in zin.infolist():
                    if info.filename in gone:
                        continue
                    data = zin.read(info)
                    if info.filename.endswith(".dist-info/RECORD"):
                        rows = data.decode().splitlines()
                        data = "".join(
                            r + "\n" for r in rows if r and r.split(",")[0] not in gone
                        ).encode()
                    zout.writestr(info, data)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    tmp.replace(wheel)
    return gone


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheels", nargs="*", type=Path)
    ap.add_argument("--keep", default="cuda13,cpu,xpu",
                    help="comma-separated prefixes of the library targets to keep")
    args = ap.parse_args(argv)
    keep = [k for k in args.keep.split(",") if k]
    if not keep:
        print("slim_wheel: --keep names no library target to keep", file=sys.stderr)
        return 2
    wheels = args.wheels or sorted(Path(".whl").glob("*.whl"))
    if not wheels:
        print("slim_wheel: no wheel named and none in .whl/", file=sys.stderr)
        return 2
    for wheel in wheels:
        try:
            before = wheel.stat().st_size
            gone = slim(wheel, keep)
        except (OSError, ValueError) as exc:
            print(f"slim_wheel: {exc}", file=sys.stderr)
            return 2
        print(f"{wheel}: {before / 1e6:.1f} MB -> {wheel.stat().st_size / 1e6:.1f} MB, "
              f"{len(gone)} librar{'y' if len(gone) == 1 else 'ies'} dropped"
              + (f" ({', '.join(Path(g).name for g in gone)})" if gone else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
