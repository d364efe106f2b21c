"""Simulated vLLM engine: a pure scheduler/cost core calibrated on the seed, behind a real HTTP API.

Run as `python -m cockpit_sim.engine serve MODEL_PATH --tensor-parallel-size N ...` (the launcher
contract of the recipes); see `__main__` for the environment it reads.
"""
