"""The C heap's figures ``/metrics`` and the soak report (glibc: this project's Linux images
and CI; vocero/observability/allocator.py)."""

from __future__ import annotations

from vocero.observability import allocator

BLOCK = 64 * 1024
"""Under glibc's mmap threshold (128 KiB): served from an arena, not mapped on its own."""


def test_what_is_freed_between_live_blocks_stays_free_inside_the_arena() -> None:
    """The figures follow the allocator: blocks handed out count as in use; every other block
    freed cannot shrink the arena from its top, so those bytes count as free, still held."""
    before = allocator.heap()
    assert before is not None
    blocks = [bytearray(BLOCK) for _ in range(1600)]  # 100 MiB
    held = allocator.heap()
    assert held is not None
    assert held.in_use - before.in_use >= 95 * 2**20
    del blocks[::2]
    freed = allocator.heap()
    assert freed is not None
    assert held.in_use - freed.in_use >= 45 * 2**20
    # the holes: free, but not given back (measured from after the allocation: the arena may
    # have had free space from earlier work that the new blocks took first)
    assert freed.free - held.free >= 45 * 2**20
    assert len(blocks) == 800
