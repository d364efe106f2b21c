"""An ETA is shown only when it means something (issue 31: `~837767m40s left` at a transfer's
first bytes), and in hours when it is that long."""

from __future__ import annotations

from cockpit.cli.ops_cmds import PlainPrinter, duration
from cockpit.events import Progress
from cockpit.ops.sync_plan import ETA_AFTER_S, ETA_MAX_S, transfer_eta

GIB = 2**30


def test_no_eta_from_the_first_bytes_nor_beyond_a_day() -> None:
    assert transfer_eta(4096, 100 * GIB, 0.05) is None, "a few packets say nothing"
    assert transfer_eta(4096, 100 * GIB, ETA_AFTER_S) is None, "a stalled link: over a day"
    assert transfer_eta(GIB, 10 * GIB, 10.0) == 90.0
    assert transfer_eta(0, GIB, 10.0) is None and transfer_eta(GIB, None, 10.0) is None
    assert transfer_eta(GIB, GIB, 10.0) is None, "done"
    slowest = transfer_eta(GIB, 2 * GIB, ETA_MAX_S)
    assert slowest == ETA_MAX_S


def test_durations_read_in_hours_when_long() -> None:
    assert [duration(s) for s in (7, 185, 7620, 86399)] == ["7s", "3m05s", "2h07m", "23h59m"]
    lines: list[str] = []
    PlainPrinter(lines.append, clock=lambda: 0.0).show(
        Progress(op="sync-image", step="transfer", node="dgx2", done=GIB, total=10 * GIB,
                 unit="B", eta_s=transfer_eta(GIB, 10 * GIB, 4000.0))
    )  # fmt: skip
    assert lines == ["    dgx2 transfer: 10% 1024.0 MiB (~10h00m left)"]
