"""The simulated node's tools (docker, nvidia-smi, ssh, the exec wrapper).

Each runs as a short-lived process on every command a client sends, so these modules import the
standard library only and stay quick to start (launched with `python -S`).
"""
