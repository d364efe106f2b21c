"""The simulated node's tools (docker, nvidia-smi, ssh, the exec wrapper).

A fleet's resident tool service (`service`) imports them once and forks a child per command a
client sends; the exec launchers start them with `python -S`. Either way these modules import the
standard library only.
"""
