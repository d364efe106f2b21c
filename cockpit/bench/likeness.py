"""Which bench reports compare: the same lane, recipe, model, warm/cold mode and driver (pure).

A cold sweep against a warm one shows the seed's §3 artifact (a serialised prefill read as decode)
as −48 % regressions, a Qwen report against a MiMo one "4 regression(s)": neither is a change of
the lane. One function decides, for `report compare`, for the baseline a bench picks and for the
deltas a report shows; point by point (`point_void`), two points at the same depth and concurrency
compare only when both have a figure and measured the same prompt, response and mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from cockpit.bench.models import PointResult, PointSpec, Report

WARM = "warm prefix"
COLD = "cold"


def mode(report: Report) -> str:
    """`cold`, `warm prefix`, or `mixed` when its points disagree."""
    colds = {p.spec.cold for p in report.points}
    return COLD if colds == {True} else WARM if colds == {False} else "mixed"


@dataclass(frozen=True)
class Likeness:
    """What a report measured; two reports compare when every field agrees."""

    lane: str
    cluster: str
    recipe_hash: str  # "" for an --endpoint run: the model name is all that is known
    model: str
    mode: str
    driver: str  # the client, without the host it ran on


def likeness(report: Report) -> Likeness:
    env = report.environment
    driver = env.driver.split(" on ", 1)[0]  # `builtin on pluto`: the same client, elsewhere
    return Likeness(report.lane, report.cluster, env.recipe_hash, env.model, mode(report), driver)


def differences(a: Likeness, b: Likeness) -> list[str]:
    """Why A and B measure different things, one short phrase each ([] when they compare).

    A recipe hash that differs is named only when lane and model agree: another lane or model
    is a recipe of its own anyway."""
    out = []
    if (a.lane, a.cluster) != (b.lane, b.cluster):
        out.append(f"lane {a.lane} on {a.cluster or '?'} vs {b.lane} on {b.cluster or '?'}")
    if a.model != b.model:
        out.append(f"model {a.model} vs {b.model}")
    if a.recipe_hash != b.recipe_hash and not out:
        out.append(f"recipe {a.recipe_hash or 'unknown'} vs {b.recipe_hash or 'unknown'}")
    if a.mode != b.mode:
        out.append(f"{a.mode} vs {b.mode}")
    if a.driver != b.driver:
        out.append(f"driver {a.driver} vs {b.driver}")
    return out


def point_unlike(a: PointSpec, b: PointSpec) -> str:
    """Why two points at the same depth and concurrency measured different things ("" when
    they did not): a pp64 figure against a pp2048 one is no change of the lane."""
    out = []
    if (a.pp, a.tg) != (b.pp, b.tg):
        out.append(f"pp{a.pp}/tg{a.tg} vs pp{b.pp}/tg{b.tg}")
    if a.cold != b.cold:
        out.append(f"{COLD if a.cold else WARM} vs {COLD if b.cold else WARM}")
    return "; ".join(out)


def point_void(a: PointResult | None, b: PointResult | None) -> str:
    """Why no delta between A's and B's point may be read ("" when one may): one side has no
    figure (not measured, skipped, no rate), or they measured different things."""
    for name, point in (("A", a), ("B", b)):
        if point is None or (point.tg is None and point.pp is None):
            return f"not measured in {name}"
    return point_unlike(a.spec, b.spec) if a is not None and b is not None else ""
