"""A sweep plan as an operator writes it (`0,4K,64K`, `1,2`, `3`), read and checked (pure).

One parser and one set of rules for `cockpit bench`'s options and the TUI's plan editor, so a plan
one of them accepts the other accepts too, and each refusal reads the same in both.
"""

from __future__ import annotations

from collections.abc import Mapping

from cockpit.bench.models import PointSpec, SweepPlan, depth_label

DRIVERS = ("builtin", "llama-benchy")

FIELDS: dict[str, tuple[int, int, bool]] = {
    # field: (smallest value allowed, largest, a comma list?)
    "depths": (0, 16 * 1024 * 1024, True),
    "concurrency": (1, 256, True),
    "runs": (1, 100, False),
    "pp": (1, 1024 * 1024, False),
    "tg": (1, 1024 * 1024, False),
}
"""The plan's written fields, named as `cockpit bench`'s options. The largest values are far past
any lane (a 16M-token context, 256 streams): beyond them a value is a typo that would run for
days, refused before the sweep like one below the smallest."""


def number(word: str, minimum: int, maximum: int | None = None) -> int:
    """`65536` or `64K` (K = 1024), from `minimum` to `maximum`; a ValueError that says why
    otherwise."""
    text = word.strip()
    if not text:
        raise ValueError("give a number")
    upper = text.upper()
    try:
        value = int(upper[:-1]) * 1024 if upper.endswith("K") else int(upper)
    except ValueError:
        raise ValueError(f"{text!r} is not a number (write 4096 or 4K)") from None
    if value < minimum:
        raise ValueError(f"{text} is below {minimum}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{text} is above {depth_label(maximum)}")
    return value


def numbers(text: str, minimum: int, maximum: int | None = None) -> tuple[int, ...]:
    """A comma list of `number`s, each once."""
    values = tuple(number(word, minimum, maximum) for word in text.split(",") if word.strip())
    if not values:
        raise ValueError("give at least one value")
    twice = sorted({v for v in values if values.count(v) > 1})
    if twice:
        raise ValueError(f"{', '.join(depth_label(v) for v in twice)} given twice")
    return values


def field_value(name: str, text: str) -> int | tuple[int, ...]:
    """One written field of `FIELDS`, read by its rule."""
    minimum, maximum, many = FIELDS[name]
    return numbers(text, minimum, maximum) if many else number(text, minimum, maximum)


def written(plan: SweepPlan) -> dict[str, str]:
    """The plan's fields as an operator would write them (`0,4K,64K`): the editor's prefill."""
    return {
        "depths": ",".join(depth_label(d) for d in plan.depths),
        "concurrency": ",".join(str(c) for c in plan.concurrency),
        "runs": str(plan.runs),
        "pp": str(plan.pp),
        "tg": str(plan.tg),
    }


def read_plan(
    texts: Mapping[str, str], *, cold: bool, driver: str
) -> tuple[SweepPlan | None, dict[str, str]]:
    """The plan the written fields make, or None and why, field by field."""
    values: dict[str, object] = {}
    errors: dict[str, str] = {}
    for name in FIELDS:
        try:
            values[name] = field_value(name, texts.get(name, ""))
        except ValueError as exc:
            errors[name] = str(exc)
    if errors:
        return None, errors
    return SweepPlan(cold=cold, driver=driver, **values), {}  # type: ignore[arg-type]


def beyond_context(points: tuple[PointSpec, ...], max_model_len: int | None) -> list[PointSpec]:
    """The points whose context + prompt + response cannot fit the lane's max-model-len."""
    if max_model_len is None:
        return []
    return [p for p in points if p.depth + p.pp + p.tg > max_model_len]


def nothing_fits(max_model_len: int) -> str:
    """Why a plan none of whose points fits is refused (an empty sweep measures nothing)."""
    return f"no point fits the lane's max-model-len {max_model_len} (depth + pp + tg)"


def context_note(plan: SweepPlan, max_model_len: int | None) -> tuple[str, bool]:
    """What the lane's max-model-len does to the plan, and whether that refuses it: the points
    beyond it are skipped, as the bench skips them; a plan with none left is refused."""
    beyond = beyond_context(plan.points, max_model_len)
    if not beyond or max_model_len is None:
        return "", False
    if len(beyond) == len(plan.points):
        return nothing_fits(max_model_len), True
    depths = ", ".join(dict.fromkeys(depth_label(p.depth) for p in beyond))
    return f"{depths} skipped: beyond the lane's max-model-len {max_model_len}", False
