"""Lane operations: launch, stop, sync-image, switch — async generators of typed events."""

from cockpit.ops.context import OpContext
from cockpit.ops.launch import launch
from cockpit.ops.stop import stop
from cockpit.ops.switch import switch
from cockpit.ops.sync import sync_image

__all__ = ["OpContext", "launch", "stop", "switch", "sync_image"]
