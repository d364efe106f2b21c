"""A report as one self-contained HTML page (pure): its markdown rendered, the picture inline.

The page is the markdown report rendered by markdown-it (rich's own parser), not a second
report written by hand: the two cannot drift apart. Raw HTML in the markdown is off, so a lane
name or label such as `<script>` is shown as text; markdown-it also refuses `javascript:` links.
The markdown's image line naming the picture becomes the SVG itself, so the page needs no other
file, and nothing is fetched (no CDN, no font, no script): it opens the same from a mail, a
share or a laptop without network.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

if TYPE_CHECKING:
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; max-width: 64rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ccc; padding: .2rem .5rem; }
th { background: #f3f3f3; }
code, pre { font: 13px ui-monospace, monospace; background: #f6f6f6; }
pre { padding: .5rem; overflow: auto; }
svg { max-width: 100%; height: auto; }
"""


def _inline_svg(svg: str) -> str:
    """The `<svg>` element of an SVG document (its XML prolog and doctype do not belong in
    HTML)."""
    start = svg.find("<svg")
    return svg[start:].strip() if start >= 0 else ""


def render_html(markdown: str, title: str, picture: str, svg: str) -> str:
    """The page: `markdown` rendered, its image `picture` replaced by `svg` inline (markdown-it is
    imported here: every command that reads a report imports this module, few draw a page)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False}).enable("table")

    def image(
        renderer: RendererHTML,
        tokens: Sequence[Token],
        idx: int,
        options: Any,
        env: Any,
    ) -> str:
        if unquote(str(tokens[idx].attrGet("src"))) == picture:
            return _inline_svg(svg)
        return renderer.image(tokens, idx, options, env)  # the rule replaced, not the method

    md.add_render_rule("image", image)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"{md.render(markdown)}</body>\n</html>\n"
    )
