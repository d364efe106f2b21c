"""The simulated DGX Spark fleet: N loopback SSH endpoints, node tools, seeded state."""

from cockpit_sim.fleet.control import FleetError, SimFleet, SimNode, default_dir

__all__ = ["FleetError", "SimFleet", "SimNode", "default_dir"]
