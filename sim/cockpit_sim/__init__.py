"""The simulated DGX Spark fleet (cockpit-sim): nodes behind real SSH on loopback, a vLLM engine."""

from cockpit.dep_warnings import silence_known

silence_known()  # the fleet's own processes import asyncssh too, and write their logs for people
