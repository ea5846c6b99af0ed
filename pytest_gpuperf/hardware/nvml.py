"""The one place that talks to NVML.

`pynvml` (from nvidia-ml-py) is imported and NVML initialised on the first call only, so
importing this module costs nothing. Every query goes through `NVML.query`, which turns
"not supported", "no permission", a missing library or a missing function into the given
default instead of an exception: a device that cannot answer a question has a missing
value, not a crash.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class NVML:
    """Lazily initialised NVML session. One per process is enough (`nvml()` below)."""

    def __init__(self, loader: Callable[[], Any] | None = None) -> None:
        self._loader = loader or _import_pynvml
        self._lock = threading.Lock()
        self._lib: Any = None
        self._state: str = "untried"  # untried | ok | unavailable
        self.error: str | None = None

    @property
    def available(self) -> bool:
        return self._ensure() is not None

    def _ensure(self) -> Any:
        with self._lock:
            if self._state == "untried":
                try:
                    lib = self._loader()
                    lib.nvmlInit()
                except Exception as exc:  # library missing, driver missing, no device
                    self._state = "unavailable"
                    self.error = f"{type(exc).__name__}: {exc}"
                else:
                    self._lib = lib
                    self._state = "ok"
            return self._lib

    def query(self, name: str, *args: Any, default: T | None = None) -> Any:
        """Call `pynvml.<name>(*args)`; return `default` if NVML cannot answer."""
        value, why = self.attempt(name, *args)
        return default if why is not None else value

    def attempt(self, name: str, *args: Any) -> tuple[Any, str | None]:
        """`query` that says why NVML did not answer: (value, None), or (None, why): the
        error's name and text ("NVMLError_NotSupported: Not Supported"), "no NVML: ...",
        or "no pynvml.<name>". Never raises."""
        lib = self._ensure()
        if lib is None:
            return None, f"no NVML: {self.error}"
        fn = getattr(lib, name, None)
        if fn is None:
            return None, f"no pynvml.{name}"
        try:
            value = fn(*args)
        except Exception as exc:  # NVMLError_NotSupported, NoPermission, GpuIsLost, ...
            return None, f"{type(exc).__name__}: {exc}".rstrip(": ")
        if isinstance(value, bytes):
            value = value.decode(errors="replace")
        return value, None

    def constant(self, name: str, default: int = 0) -> int:
        lib = self._ensure()
        return int(getattr(lib, name, default)) if lib is not None else default


def _import_pynvml() -> Any:
    import pynvml

    return pynvml


@functools.lru_cache(maxsize=1)
def nvml() -> NVML:
    """The process-wide NVML session, made on the first call (NVML initialises on its first
    query)."""
    return NVML()
