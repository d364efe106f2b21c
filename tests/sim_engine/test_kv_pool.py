"""KV block pool: chained-hash prefix hits, LRU eviction of cached blocks, usage."""

from cockpit_sim.engine.kv_pool import KvPool, block_hashes


def test_chained_hashes_only_match_the_same_whole_prefix() -> None:
    a = block_hashes(list(range(64)), 16)
    b = block_hashes([99, *range(1, 64)], 16)
    assert len(a) == 4
    assert a[0] != b[0]
    assert a[1] != b[1]  # same tokens in block 1, different prefix → different hash
    assert block_hashes(list(range(70)), 16) == a  # the partial tail block has no hash


def test_cached_blocks_are_hit_after_free_and_tail_blocks_are_evicted_first() -> None:
    pool = KvPool(num_blocks=4, block_size=16, enable_prefix_caching=True)
    hashes = block_hashes(list(range(32)), 16)
    blocks = pool.allocate(2)
    assert blocks is not None
    for block, h in zip(blocks, hashes, strict=True):
        pool.register(block, h)
    pool.free(blocks)
    assert pool.usage == 0.0
    assert pool.cached_prefix(hashes) == blocks
    fresh = pool.allocate(3)  # two never-used blocks, then evicts the prefix's tail block
    assert fresh is not None
    assert pool.cached_prefix(hashes) == blocks[:1]
    assert pool.allocate(2) is None
    assert pool.usage == 0.75


def test_prefix_caching_off_never_hits() -> None:
    pool = KvPool(num_blocks=4, block_size=16, enable_prefix_caching=False)
    hashes = block_hashes(list(range(16)), 16)
    (block,) = pool.allocate(1) or []
    pool.register(block, hashes[0])
    pool.free([block])
    assert pool.cached_prefix(hashes) == []
