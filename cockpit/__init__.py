"""cockpit: a terminal cockpit for vLLM serving lanes on a DGX Spark fleet."""

from cockpit.dep_warnings import silence_known

__version__ = "0.1.0"

silence_known()  # before any dependency is imported, whichever entry point runs first
