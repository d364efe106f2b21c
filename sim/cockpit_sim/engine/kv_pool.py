"""KV block pool with prefix caching by chained block hashes (the shape of vLLM V1's BlockPool).

A block holds `block_size` tokens. A full prompt block is identified by the hash of its tokens
chained with the previous block's hash, so a cached block is only reused under the same whole
prefix. Blocks whose reference count drops to zero stay cached (evictable, least recently freed
first) until a fresh allocation needs them; usage counts referenced blocks only, as
`kv_cache_usage_perc` does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

ROOT_HASH = 0x5EED


def block_hashes(token_ids: Sequence[int], block_size: int) -> list[int]:
    """Chained hashes of the full blocks of `token_ids` (a trailing partial block has none)."""
    hashes: list[int] = []
    parent = ROOT_HASH
    for start in range(0, len(token_ids) - block_size + 1, block_size):
        parent = hash((parent, tuple(token_ids[start : start + block_size])))
        hashes.append(parent)
    return hashes


class KvPool:
    """Fixed number of blocks, handed out lazily so that a 5M-token pool costs nothing."""

    def __init__(self, num_blocks: int, block_size: int, enable_prefix_caching: bool) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.enable_prefix_caching = enable_prefix_caching
        self._next_fresh = 0
        self._recycled: list[int] = []
        self._refs: dict[int, int] = {}
        self._hash_of: dict[int, int] = {}
        self._block_of: dict[int, int] = {}
        self._evictable: OrderedDict[int, None] = OrderedDict()

    @property
    def num_free(self) -> int:
        """Blocks an allocation may take: never used, recycled, or cached but unreferenced."""
        return self.num_blocks - len(self._refs)

    @property
    def usage(self) -> float:
        return len(self._refs) / self.num_blocks if self.num_blocks else 0.0

    def cached_prefix(self, hashes: Sequence[int]) -> list[int]:
        """Blocks of the longest cached prefix of `hashes` (not yet referenced by the caller)."""
        if not self.enable_prefix_caching:
            return []
        found: list[int] = []
        for h in hashes:
            block = self._block_of.get(h)
            if block is None:
                break
            found.append(block)
        return found

    def reference(self, blocks: Sequence[int]) -> None:
        """Take a reference on cache hits; an evictable block becomes in use again."""
        for block in blocks:
            self._evictable.pop(block, None)
            self._refs[block] = self._refs.get(block, 0) + 1

    def allocate(self, count: int) -> list[int] | None:
        """`count` blocks with one reference each, or None (nothing taken) if the pool is short."""
        if count > self.num_free:
            return None
        blocks: list[int] = []
        for _ in range(count):
            if self._recycled:
                block = self._recycled.pop()
            elif self._next_fresh < self.num_blocks:
                block = self._next_fresh
                self._next_fresh += 1
            else:
                block, _ = self._evictable.popitem(last=False)
                self._block_of.pop(self._hash_of.pop(block), None)
            self._refs[block] = 1
            blocks.append(block)
        return blocks

    def register(self, block: int, block_hash: int) -> None:
        """Remember a full block's hash so later requests with the same prefix hit it."""
        if not self.enable_prefix_caching or block in self._hash_of:
            return
        if block_hash in self._block_of:
            return
        self._hash_of[block] = block_hash
        self._block_of[block_hash] = block

    def free(self, blocks: Sequence[int]) -> None:
        """Drop one reference per block; unreferenced cached blocks become evictable (LRU order)."""
        for block in reversed(blocks):
            refs = self._refs[block] - 1
            if refs:
                self._refs[block] = refs
                continue
            del self._refs[block]
            if block in self._hash_of:
                self._evictable[block] = None
            else:
                self._recycled.append(block)
