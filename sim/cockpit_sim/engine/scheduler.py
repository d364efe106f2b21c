"""vLLM V1-like step scheduler in virtual time: pure, no I/O, no clock of its own.

Each `step(now)` decides one batch the way vLLM V1 does and returns what the step produced and how
long it took (engine seconds, from `cost_model`):

1. running requests first, in admission order: a decoding request takes 1 + num_spec tokens of the
   `max_num_batched_tokens` budget (verify the drafts), a request still prefilling takes the next
   chunk of its prompt that fits the budget;
2. then, unless the step had to preempt, waiting requests in arrival order while budget and
   `max_num_seqs` allow; a newly admitted request first takes its cached prefix (full blocks with a
   matching chained hash) and only computes the rest;
3. KV blocks are allocated per scheduled token; when the pool is short the most recently admitted
   running request is preempted (recompute mode: blocks freed, back to the head of the queue).

A request whose prefill completes samples its first token in that step (so a second long prompt
behind it gets only the leftover budget: the seed's §3 serialisation). Token counts per decode step
follow the lane's speculative acceptance length, spread deterministically (a running credit).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from cockpit_sim.engine.calibration import LaneCalibration
from cockpit_sim.engine.cost_model import PrefillChunk, StepShape, step_duration
from cockpit_sim.engine.kv_pool import KvPool, block_hashes


class Status(StrEnum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class SchedulerConfig:
    max_num_seqs: int = 16
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    num_blocks: int = 1 << 20
    num_spec_tokens: int = 0
    spec_method: str | None = None
    graph_max_tokens: int = 96
    enable_prefix_caching: bool = True


@dataclass
class Request:
    """One generation request; `natural_length` is where the pseudo-model would emit EOS."""

    request_id: str
    prompt_token_ids: Sequence[int]
    max_tokens: int
    arrival: float
    min_tokens: int = 0
    ignore_eos: bool = False
    natural_length: int | None = None
    status: Status = Status.WAITING
    num_computed: int = 0
    num_output: int = 0
    num_cached_tokens: int = 0
    num_preemptions: int = 0
    blocks: list[int] = field(default_factory=list)
    hashes: list[int] = field(default_factory=list)
    registered: int = 0
    spec_credit: float = 0.0
    first_scheduled_at: float | None = None
    first_token_at: float | None = None
    finished_at: float | None = None
    finish_reason: str | None = None

    @property
    def prompt_len(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def num_tokens(self) -> int:
        return self.prompt_len + self.num_output

    @property
    def stop_at(self) -> int:
        """Output length at which the request finishes."""
        if self.ignore_eos or self.natural_length is None:
            return self.max_tokens
        return min(self.max_tokens, max(self.min_tokens, self.natural_length))


@dataclass(frozen=True)
class TokenEvent:
    """`count` new tokens of a request at the end of a step; `first` marks its first token."""

    request_id: str
    count: int
    first: bool


@dataclass(frozen=True)
class SpecStats:
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_pos: tuple[int, ...] = ()


@dataclass(frozen=True)
class StepResult:
    """What one step did; `duration` is engine seconds, the step ends at `now + duration`."""

    duration: float
    shape: StepShape
    tokens: list[TokenEvent]
    finished: list[Request]
    prompt_tokens: int
    generation_tokens: int
    preemptions: int
    prefix_queries: int
    prefix_hits: int
    spec: SpecStats

    @property
    def phase(self) -> str:
        if self.shape.prefill_tokens:
            return "prefill"
        return "decode" if self.shape.decode_depths else "idle"


class Scheduler:
    """Waiting queue, running list and KV pool of one engine; advance it with `step`."""

    def __init__(self, cal: LaneCalibration, config: SchedulerConfig) -> None:
        self.cal = cal
        self.config = config
        self.pool = KvPool(config.num_blocks, config.block_size, config.enable_prefix_caching)
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.requests: dict[str, Request] = {}

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, request: Request) -> None:
        if self.config.enable_prefix_caching:
            request.hashes = block_hashes(request.prompt_token_ids, self.config.block_size)
        self.requests[request.request_id] = request
        self.waiting.append(request)

    def abort(self, request_id: str, now: float) -> Request | None:
        """Drop a request (client went away); returns it finished with reason 'abort'."""
        request = self.requests.pop(request_id, None)
        if request is None:
            return None
        if request in self.running:
            self.running.remove(request)
        elif request in self.waiting:
            self.waiting.remove(request)
        self._finish(request, "abort", now)
        return request

    def step(self, now: float, admit_until: float = math.inf) -> StepResult:
        """One batch starting at `now`; waiting requests received after `admit_until` wait.

        A request admitted before its receipt (within the caller's gathering slack, so requests
        sent together share a step) counts as received when the step starts.
        """
        budget = self.config.max_num_batched_tokens
        scheduled: list[tuple[Request, int, bool]] = []
        preemptions = 0
        queries = hits = 0

        for request in list(self.running):
            if request.status is not Status.RUNNING or budget <= 0:
                continue
            needed = request.num_tokens - request.num_computed
            decoding = needed == 1 and request.num_output > 0
            if decoding:
                spec = min(self.config.num_spec_tokens, request.stop_at - request.num_output - 1)
                want = 1 + max(0, spec)
            else:
                want = needed
            n = min(want, budget)
            while not self._grow(request, n):
                victim = self.running[-1]
                self._preempt(victim)
                preemptions += 1
                if victim is request:
                    break
            if request.status is not Status.RUNNING:
                continue
            scheduled.append((request, n, decoding))
            budget -= n

        while (
            not preemptions
            and self.waiting
            and budget > 0
            and len(self.running) < self.config.max_num_seqs
        ):
            request = self.waiting[0]
            if request.arrival > admit_until:
                break
            hit_blocks: list[int] = []
            if request.num_computed == 0:
                usable = (request.num_tokens - 1) // self.config.block_size
                hit_blocks = self.pool.cached_prefix(request.hashes[:usable])
                self.pool.reference(hit_blocks)
                request.blocks = list(hit_blocks)
                request.registered = len(hit_blocks)
                request.num_computed = len(hit_blocks) * self.config.block_size
            n = min(request.num_tokens - request.num_computed, budget)
            if not self._grow(request, n):
                self.pool.free(request.blocks)
                request.blocks, request.registered, request.num_computed = [], 0, 0
                break
            queries += request.num_tokens
            hits += request.num_computed
            if request.first_scheduled_at is None:
                request.num_cached_tokens = request.num_computed
                request.first_scheduled_at = now
                request.arrival = min(request.arrival, now)
            self.waiting.popleft()
            request.status = Status.RUNNING
            self.running.append(request)
            scheduled.append((request, n, False))
            budget -= n

        shape = StepShape(
            decode_depths=[r.num_computed for r, _, d in scheduled if d],
            prefill=[PrefillChunk(r.num_computed, n) for r, n, d in scheduled if not d],
        )
        duration = step_duration(self.cal, shape, self.config.graph_max_tokens)
        return self._apply(scheduled, shape, now + duration, duration, preemptions, queries, hits)

    def _apply(
        self,
        scheduled: list[tuple[Request, int, bool]],
        shape: StepShape,
        end: float,
        duration: float,
        preemptions: int,
        queries: int,
        hits: int,
    ) -> StepResult:
        events: list[TokenEvent] = []
        finished: list[Request] = []
        prompt_tokens = generation = 0
        drafts = draft_tokens = accepted = 0
        per_pos = [0] * self.config.num_spec_tokens
        for request, n, decoding in scheduled:
            if decoding:
                request.spec_credit += self.cal.acceptance_length(
                    request.num_computed, self.config.num_spec_tokens, self.config.spec_method
                )
                emitted = max(1, min(n, math.floor(request.spec_credit)))
                request.spec_credit -= emitted
                emitted = min(emitted, request.stop_at - request.num_output)
                if n > 1:
                    drafts += 1
                    draft_tokens += n - 1
                    accepted += emitted - 1
                    for pos in range(emitted - 1):
                        per_pos[pos] += 1
                request.num_computed += emitted
            else:
                request.num_computed += n
                self._register_blocks(request)
                if request.num_computed < request.num_tokens:
                    continue
                emitted = 1
                if request.first_token_at is None:
                    prompt_tokens += request.prompt_len
            first = request.first_token_at is None
            if first:
                request.first_token_at = end
            request.num_output += emitted
            generation += emitted
            events.append(TokenEvent(request.request_id, emitted, first))
            if request.num_output >= request.stop_at:
                reason = "length" if request.num_output >= request.max_tokens else "stop"
                self.running.remove(request)
                self._finish(request, reason, end)
                finished.append(request)
        return StepResult(
            duration=duration,
            shape=shape,
            tokens=events,
            finished=finished,
            prompt_tokens=prompt_tokens,
            generation_tokens=generation,
            preemptions=preemptions,
            prefix_queries=queries,
            prefix_hits=hits,
            spec=SpecStats(drafts, draft_tokens, accepted, tuple(per_pos)),
        )

    def _grow(self, request: Request, new_tokens: int) -> bool:
        """Make room for `new_tokens` more tokens of `request` in its blocks."""
        need = -(-(request.num_computed + new_tokens) // self.config.block_size)
        extra = need - len(request.blocks)
        if extra <= 0:
            return True
        blocks = self.pool.allocate(extra)
        if blocks is None:
            return False
        request.blocks.extend(blocks)
        return True

    def _register_blocks(self, request: Request) -> None:
        full = min(request.num_computed // self.config.block_size, len(request.hashes))
        for index in range(request.registered, full):
            self.pool.register(request.blocks[index], request.hashes[index])
        request.registered = max(request.registered, full)

    def _preempt(self, request: Request) -> None:
        self.running.remove(request)
        self.pool.free(request.blocks)
        request.blocks, request.registered, request.num_computed = [], 0, 0
        request.status = Status.WAITING
        request.num_preemptions += 1
        self.waiting.appendleft(request)

    def _finish(self, request: Request, reason: str, now: float) -> None:
        if request.blocks:
            self.pool.free(request.blocks)
            request.blocks = []
        request.status = Status.FINISHED
        request.finish_reason = reason
        request.finished_at = now
        self.requests.pop(request.request_id, None)
