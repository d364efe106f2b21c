"""Downsampling: pure, on fixed readings."""

from __future__ import annotations

import math

import pytest

from cockpit.history.downsample import LATE_S, Downsampler, Reading, bucket_of, downsample

LANE = ("qwen3-0.6b-2x", "2nodes-dac")
READINGS = [  # two scrapes a bucket, 2 s apart, as the engine feed scrapes
    Reading(LANE, 100.0, {"gen_tps": 10.0, "kv_usage": 0.2, "waiting": 0.0}),
    Reading(LANE, 102.0, {"gen_tps": 30.0, "kv_usage": 0.4, "waiting": 2.0}),
    Reading(LANE, 110.0, {"gen_tps": 50.0, "kv_usage": None, "waiting": 1.0}),
    Reading(LANE, 119.9, {"gen_tps": math.nan, "kv_usage": 0.8, "waiting": 3.0}),
    Reading(("dgx1",), 101.0, {"gpu_util": 90.0}),
]


def test_buckets_start_on_multiples_of_their_span() -> None:
    assert bucket_of(119.9, 10) == 110 and bucket_of(120.0, 10) == 120 and bucket_of(5, 30) == 0


def test_each_bucket_keeps_means_and_peaks_of_the_readings_that_had_a_figure() -> None:
    buckets = downsample(READINGS, 10.0)
    assert [(b.key, b.at, b.n) for b in buckets] == [
        (("dgx1",), 100.0, 1),
        (LANE, 100.0, 2),
        (LANE, 110.0, 2),
    ]
    first, second = buckets[1], buckets[2]
    assert first.mean == {"gen_tps": 20.0, "kv_usage": pytest.approx(0.3), "waiting": 1.0}
    assert first.peak == {"gen_tps": 30.0, "kv_usage": 0.4, "waiting": 2.0}
    # a missing figure and a NaN count for nothing: not as zero
    assert second.mean == {"gen_tps": 50.0, "kv_usage": 0.8, "waiting": 2.0}


def test_a_figure_no_reading_had_is_none() -> None:
    (bucket,) = downsample([Reading(LANE, 1.0, {"gen_tps": None})], 10.0)
    assert bucket.mean == {"gen_tps": None} and bucket.peak == {"gen_tps": None}


def test_the_downsampler_gives_the_same_buckets_as_the_pure_function() -> None:
    sampler = Downsampler(10.0)
    out = [bucket for reading in READINGS for bucket in sampler.add(reading)]
    out += sampler.flush()
    assert sorted(out, key=lambda b: (b.key, b.at)) == downsample(READINGS, 10.0)


def test_the_same_reading_twice_counts_once_and_an_older_one_not_at_all() -> None:
    sampler = Downsampler(10.0)
    for reading in (READINGS[0], READINGS[0], READINGS[1], READINGS[0]):
        assert sampler.add(reading) == []
    (bucket,) = sampler.flush()
    assert bucket.n == 2


def test_a_bucket_is_due_once_its_span_and_the_late_margin_passed() -> None:
    sampler = Downsampler(10.0)
    sampler.add(READINGS[0])
    assert sampler.due(110.0 + LATE_S - 0.1) == []  # a reading of 109.9 may still come
    (bucket,) = sampler.due(110.0 + LATE_S)
    assert bucket.at == 100.0 and sampler.open == {}
    assert sampler.flush() == []
