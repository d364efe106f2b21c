"""The V1-like step loop: budget order, chunking, max_num_seqs, preemption, prefix hits, drafts."""

from dataclasses import replace

from cockpit_sim.engine.calibration import for_lane
from cockpit_sim.engine.scheduler import Request, Scheduler, SchedulerConfig

CAL = for_lane("flash", 4)


def _req(rid: str, n: int, max_tokens: int = 4, base: int = 0) -> Request:
    return Request(rid, list(range(base, base + n)), max_tokens, 0.0, ignore_eos=True)


def test_long_prompt_is_chunked_and_second_request_takes_only_the_leftover_budget() -> None:
    s = Scheduler(CAL, SchedulerConfig(max_num_batched_tokens=8192))
    s.add(_req("a", 20_000))
    s.add(_req("b", 20_000, base=10**6))
    chunks = [s.step(0.0).shape.prefill for _ in range(3)]
    assert [(c.start, c.tokens) for c in chunks[0]] == [(0, 8192)]
    assert [(c.start, c.tokens) for c in chunks[1]] == [(8192, 8192)]
    # a's last 3616 tokens, then b admitted with what is left of the budget
    assert [(c.start, c.tokens) for c in chunks[2]] == [(16384, 3616), (0, 4576)]
    assert len(s.waiting) == 0


def test_decodes_are_scheduled_before_prefill_and_count_their_drafts() -> None:
    s = Scheduler(CAL, SchedulerConfig(max_num_batched_tokens=100, num_spec_tokens=5))
    s.add(_req("a", 10, max_tokens=50))
    first = s.step(0.0)
    assert first.tokens[0].first and first.prompt_tokens == 10
    s.add(_req("b", 500, base=1000))
    step = s.step(1.0)
    assert list(step.shape.decode_depths) == [10]
    assert [c.tokens for c in step.shape.prefill] == [100 - 6]  # 1 + 5 drafts came first
    assert step.spec.drafts == 1 and step.spec.draft_tokens == 5


def test_max_num_seqs_caps_running_requests() -> None:
    s = Scheduler(CAL, SchedulerConfig(max_num_seqs=2))
    for i in range(3):
        s.add(_req(f"r{i}", 10, base=i * 1000))
    s.step(0.0)
    assert len(s.running) == 2 and len(s.waiting) == 1


def test_kv_pressure_preempts_the_newest_running_request() -> None:
    config = SchedulerConfig(block_size=16, num_blocks=8, max_num_batched_tokens=256)
    s = Scheduler(CAL, config)
    s.add(_req("old", 60, max_tokens=200))
    s.add(_req("new", 60, max_tokens=200, base=1000))
    preempted = 0
    for _ in range(40):
        preempted += s.step(0.0).preemptions
    assert preempted >= 1
    assert s.requests["new"].num_preemptions >= 1
    assert s.requests["old"].num_preemptions == 0


def test_prefix_hit_skips_cached_blocks() -> None:
    s = Scheduler(CAL, SchedulerConfig(block_size=16))
    context = list(range(1000))
    s.add(Request("load", [*context, 7], 1, 0.0, ignore_eos=True))
    while s.has_work:
        s.step(0.0)
    s.add(Request("inf", [*context, *range(5000, 5100)], 1, 0.0, ignore_eos=True))
    step = s.step(0.0)
    assert step.prefix_hits == 992  # 62 full blocks of the shared context
    assert [(c.start, c.tokens) for c in step.shape.prefill] == [(992, 108)]


def test_acceptance_length_sets_tokens_per_decode_step() -> None:
    cal = replace(CAL, accept_len_0=3.0, accept_len_inf=3.0)
    s = Scheduler(cal, SchedulerConfig(num_spec_tokens=5))
    s.add(_req("a", 10, max_tokens=31))
    counts = []
    while s.has_work:
        counts += [e.count for e in s.step(0.0).tokens]
    assert counts == [1] + [3] * 10


def test_requests_received_after_the_admission_bound_wait_and_early_ones_are_redated() -> None:
    s = Scheduler(CAL, SchedulerConfig())
    early, late = _req("early", 100), _req("late", 100, base=1000)
    early.arrival, late.arrival = 5.02, 9.0
    s.add(early)
    s.add(late)
    step = s.step(5.0, admit_until=5.05)
    assert [c.tokens for c in step.shape.prefill] == [100]
    assert [r.request_id for r in s.waiting] == ["late"]
    assert early.arrival == early.first_scheduled_at == 5.0  # joined a step begun before receipt


def test_ngram_acceptance_comes_from_the_lane_calibration() -> None:
    """The real vLLM 0.32 CPU lane accepted 83 % of its n-gram drafts; the small lane's
    calibration carries that figure (the drafter-model curve gave it 0 %)."""
    small = for_lane("small", 1)
    totals = {}
    for method in ("ngram", None):
        s = Scheduler(small, SchedulerConfig(num_spec_tokens=3, spec_method=method))
        s.add(_req("a", 64, max_tokens=400))
        drafted = accepted = 0
        while s.has_work:
            spec = s.step(0.0).spec
            drafted, accepted = drafted + spec.draft_tokens, accepted + spec.accepted
        totals[method] = accepted / drafted
    assert abs(totals["ngram"] - small.ngram_accept_rate) < 0.03 and small.ngram_accept_rate == 0.83
    assert totals[None] == 0.0
