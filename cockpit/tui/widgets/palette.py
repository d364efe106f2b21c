"""Theme-aware colours for Rich text inside panes (cells and lines are styled in code, not TCSS)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import App
from textual.color import Color


@dataclass(frozen=True)
class Palette:
    ok: str
    warn: str
    error: str
    accent: str
    muted: str

    def phase(self, phase: str) -> str:
        """Colour of a lane phase name."""
        return {
            "serving": self.ok,
            "failed": self.error,
            "booting": self.warn,
            "syncing": self.accent,
            "stopping": self.warn,
            "unresponsive": self.error,
            "unknown": self.warn,
        }.get(phase, self.muted)


_CACHE: dict[str, Palette] = {}


def palette_of(app: App) -> Palette:
    """The current theme's semantic colours (Textual fills the theme's gaps with derived ones)."""
    cached = _CACHE.get(app.theme)
    if cached is None:
        cached = _CACHE[app.theme] = _palette(app)
    return cached


def _palette(app: App) -> Palette:
    v = app.theme_variables
    background = Color.parse(v.get("background", "#000000"))

    def solid(name: str, fallback: str) -> str:
        """Rich needs opaque colours: blend a translucent variable onto the background."""
        return (background + Color.parse(v.get(name, fallback))).hex6

    return Palette(
        ok=solid("success", "green"),
        warn=solid("warning", "yellow"),
        error=solid("error", "red"),
        accent=solid("accent", "cyan"),
        muted=solid("foreground-muted", "grey50"),
    )
