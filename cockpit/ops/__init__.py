"""Lane operations: async generators of typed events (`cockpit.events`).

- `cockpit.ops.launch.launch(ctx, recipe, cluster, *, sync_image, dry_run, boot_timeout_s,
  stall_timeout_s, ready_watch_s)`
- `cockpit.ops.stop.stop(ctx, *, lane=None, cluster=None)`
- `cockpit.ops.sync.sync_image(ctx, recipe, cluster, source=None)`
- `cockpit.ops.switch.switch(ctx, recipe, cluster, *, confirm=None, restore_on_failure=False,
  previous=None, …)` and `cockpit.ops.switch.restore(ctx, lanes)` (what a failed switch replaced)

with `ctx = cockpit.ops.context.OpContext(inventory, pool)`. Nothing is imported here: importing
`cockpit.events` (as the TUI and bench do) must not pay for asyncssh and httpx.
"""
