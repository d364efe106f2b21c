"""The interactive cockpit (Textual): `cockpit.tui.app.CockpitApp` over a state store
(`cockpit.tui.state`) fed by feeds (`cockpit.tui.feeds`) and operations (`cockpit.tui.operations`).

Textual is imported only by the modules that need it, so `cockpit` commands that never open the
TUI do not pay for it.
"""
