"""cockpit: a terminal cockpit for vLLM serving lanes on a DGX Spark fleet."""

__version__ = "0.1.0"
