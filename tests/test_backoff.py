"""The one retry policy and its users: the SSH pool's reconnects, the status poller's probe
restarts and the TUI's feed restarts wait the same 1, 2, 4 … 30 s."""

from __future__ import annotations

from cockpit.backoff import Backoff
from cockpit.ssh.state import NodeState
from cockpit.status.poller import PROBE_BACKOFF, probe_pause
from cockpit.tui.app import FEED_BACKOFF


def test_the_delay_doubles_from_its_base_up_to_its_cap() -> None:
    assert [Backoff().delay(n) for n in range(8)] == [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert [Backoff(base=0.2, cap=0.5).delay(n) for n in range(5)] == [0.0, 0.2, 0.4, 0.5, 0.5]
    assert Backoff().delay(-1) == 0.0


def test_the_pool_the_poller_and_the_feeds_share_it() -> None:
    assert PROBE_BACKOFF == FEED_BACKOFF == Backoff()


def test_a_node_that_keeps_failing_is_retried_later_each_time() -> None:
    state, waits = NodeState(), []
    for _ in range(7):
        state = state.failed(now=0.0, mono=100.0, error="refused", backoff=Backoff())
        waits.append(state.retry_at - 100.0)
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert state.connected().failures == 0  # a link that came back starts over


def test_a_probe_that_dies_young_waits_longer_each_time_and_a_long_lived_one_at_once() -> None:
    """The sequence the poller had before it used the shared policy: 0.5 s after a probe that
    streamed for a while, then 1, 2, 4 … 30 s while it keeps dying young."""
    assert [probe_pause(n) for n in range(8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
