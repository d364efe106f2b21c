"""`cockpit exporter` is safe by default: loopback only unless --allow-remote."""

from __future__ import annotations

import subprocess
import sys

from tests.cli_runner import run_cockpit


def test_a_non_loopback_listen_address_is_refused_in_one_line() -> None:
    result = run_cockpit("exporter", "--listen", "10.0.0.1:9464")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --listen 10.0.0.1:9464 is not a loopback address: add --allow-remote to serve "
        "the fleet's metrics beyond this host"
    ]


def test_the_exporter_does_not_import_textual() -> None:
    code = "import sys, cockpit.cli.exporter_cmd, cockpit.exporter.serve; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
