"""Fleet status: a telemetry probe per node over SSH, a pure model of rows, rich/JSON rendering."""

from cockpit.status.model import (
    FleetStatus,
    Health,
    ImageRow,
    NodeRow,
    Presence,
    WantedImage,
    fleet_status,
    wanted_images,
)
from cockpit.status.poller import FleetPoller
from cockpit.status.probe import NodeFacts, Pace, ProbeParser, probe_script
from cockpit.status.render import status_json, status_renderable

__all__ = [
    "FleetPoller",
    "FleetStatus",
    "Health",
    "ImageRow",
    "NodeFacts",
    "NodeRow",
    "Pace",
    "Presence",
    "ProbeParser",
    "WantedImage",
    "fleet_status",
    "probe_script",
    "status_json",
    "status_renderable",
    "wanted_images",
]
