"""Suite-wide fixtures: the simulated fleets (see tests/fleet_fixtures.py)."""

pytest_plugins = ["tests.fleet_fixtures"]
