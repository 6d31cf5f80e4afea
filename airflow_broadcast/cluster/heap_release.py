"""Hand the memory a burst of work freed back to the operating system (glibc's `malloc_trim`).

When 1,000 triggers start, their first passes parse manifests, build pods and read responses; once
the jobs are quiet that memory is free again, but glibc keeps the freed pages in the process. Measured
in one triggerer, about 9 KiB per idle job of its resident memory was such free heap. `malloc_trim(0)`
returns free pages to the kernel. It runs in a worker thread (ctypes releases the GIL for the call),
at most once per MIN_GAP_SECONDS per process, when a job goes quiet or ends. Where the C library has
no `malloc_trim` (musl, macOS) nothing happens. `[airflow_broadcast] release_freed_heap` turns it off.
"""

from __future__ import annotations

import asyncio
import ctypes
import time
from collections.abc import Callable

MIN_GAP_SECONDS = 30.0


def _libc_trim() -> Callable[[], int] | None:
    """The C library's `malloc_trim(0)`, or None where it has none.

    Looked up among the symbols the process has loaded (`dlopen(NULL)`), not with `find_library`,
    which runs `ldconfig` in a subprocess.
    """
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return lambda: int(function(0))


class HeapRelease:
    """Debounced `trim` calls: one pending at most, each at least `gap` seconds after the last one started."""

    def __init__(self, trim: Callable[[], int] | None, gap: float = MIN_GAP_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = True
        self.released = 0  # trims run so far
        self._trim, self._gap, self._clock = trim, gap, clock
        self._last = float("-inf")
        self._pending: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None

    @property
    def available(self) -> bool:
        return self._trim is not None

    def request(self) -> None:
        """Release soon, on the running loop: now if the last release is `gap` ago, else once it is."""
        if not self.enabled or self._trim is None:
            return
        loop = asyncio.get_running_loop()
        if self._pending is not None:
            pending_loop, handle = self._pending
            if pending_loop is loop and not handle.cancelled():
                return
            handle.cancel()  # left on a loop that has ended (tests run many loops)
        delay = max(0.0, self._last + self._gap - self._clock())
        self._pending = (loop, loop.call_later(delay, self._start, loop))

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending = None
        self._last = self._clock()
        try:
            loop.run_in_executor(None, self._run)
        except RuntimeError:  # the loop is shutting its executor down: nothing left to release for
            pass

    def _run(self) -> None:
        trim = self._trim
        if trim is not None:
            trim()
            self.released += 1


_process = HeapRelease(_libc_trim())  # module state on purpose: the heap is per process


def configure(enabled: bool) -> None:
    """Turn releases on or off for this process (from the provider's settings)."""
    _process.enabled = enabled


def request() -> None:
    """A job went quiet or ended: release the freed heap soon (see the module docstring)."""
    _process.request()


def after(action: Callable[[], None]) -> Callable[[], None]:
    """`action`, then a release: for the moment a job goes quiet."""
    def run() -> None:
        action()
        request()
    return run


def process_release() -> HeapRelease:
    """This process's releaser (for tests)."""
    return _process
