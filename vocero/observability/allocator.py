"""The C allocator's own view of the process heap, for ``/metrics`` and ``vocero bench soak``.

A long-running server's resident memory can grow while Python's own objects (what
``tracemalloc`` sees) stay flat: what SQLite, the database driver, the model libraries and
Python's larger objects take from the C library's allocator, and what that allocator keeps free
inside its arenas (one per thread that allocated) after they are freed. :func:`heap` reads
glibc's ``mallinfo2``, summed over every arena: bytes handed out, bytes free inside the arenas,
and bytes of blocks mapped on their own. Python's small-object arenas are mapped apart and are in
none of them. It exists only on glibc 2.33 or later; elsewhere :func:`heap` answers ``None`` and
the gauges are not set.

:func:`trim` asks glibc (``malloc_trim(0)``) to hand the whole free pages inside every arena back
to the kernel; ``serve`` calls it every ``heap_trim_s`` seconds
(vocero/observability/heap_trim.py, docs/scaling.md "Soak"). It never shrinks the top of a
thread's own arena, which is where the soak's growth was: :func:`single_arena`, set before any
thread allocates, keeps every thread in the main arena, which the trim does reach."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
           "fordblks", "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


@dataclass(frozen=True)
class Heap:
    """Bytes of the C heap: handed out (``in_use``), held free inside the arenas (``free``),
    and in blocks mapped on their own (``mapped``: large allocations, returned when freed)."""

    in_use: int
    free: int
    mapped: int


@cache
def _libc() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _Mallinfo2
    except (OSError, AttributeError):  # not glibc, or a glibc before 2.33
        return None
    return libc


def heap() -> Heap | None:
    """The allocator's figures now, or ``None`` where the C library has no ``mallinfo2``."""
    libc = _libc()
    if libc is None:
        return None
    info = libc.mallinfo2()
    return Heap(in_use=int(info.uordblks), free=int(info.fordblks), mapped=int(info.hblkhd))


M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: the most arenas the process creates (malloc.h)."""


def single_arena() -> bool:
    """Every thread allocates from the main arena from now on (glibc ``mallopt(M_ARENA_MAX,
    1)``; arenas made before stay in use): what one thread frees another reuses, and
    :func:`trim` reaches all of it. True where the C library took it."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(M_ARENA_MAX, 1))


def _resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def trim() -> int | None:
    """Give the free pages inside every arena back to the kernel (glibc ``malloc_trim(0)``:
    the free space at each arena's top is unmapped, every whole free page between live blocks
    is ``madvise``d away; the blocks stay where they are). Answers the resident bytes that
    went (0 when nothing did), or ``None`` where the C library is not glibc."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return None
    before = _resident_bytes()
    libc.malloc_trim(0)
    return max(0, before - _resident_bytes())
