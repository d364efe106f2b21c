"""Plans: recipe × cluster → per-node launch specs and command lines (pure)."""

from cockpit.plan.render import LanePlan, RankCommand, plan_lane, recipe_hash, redact_argv

__all__ = ["LanePlan", "RankCommand", "plan_lane", "recipe_hash", "redact_argv"]
