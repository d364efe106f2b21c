"""The local history store: what the cockpit saw and did, kept past the session.

One SQLite file in the user state directory (`schema`, `store`), written by one thread behind a
bounded queue (`writer`) so no caller ever waits on the disk; fed from the consumer side of the
operations' event streams and of the fleet snapshots (`recorder`), downsampled before it is
stored (`downsample`), pruned by a retention setting (`settings`), read by `cockpit history`.
Nothing here imports the TUI.
"""
