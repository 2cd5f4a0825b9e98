"""Step-trace arithmetic, the drain rule and the summary, on hand-made timestamps."""

import pytest

from perfstudy.measure import steptrace
from perfstudy.measure.steptrace import StepTimes


def make_steps(gaps_ms, fwd_ms=500.0, tail_ms=50.0, compile_ms=8000.0):
    """Contiguous steps: each starts where the previous one ended."""
    records, now = [], 1_700_000_000.0
    for index, gap in enumerate(gaps_ms):
        fwd = compile_ms if index == 0 else fwd_ms
        start = now
        ready = start + gap / 1e3
        fwd_end = ready + fwd / 1e3
        end = fwd_end + tail_ms / 1e3
        records.append(StepTimes(index, start, ready, fwd_end, end, loss=1.0 / (index + 1)))
        now = end
    return records


def test_parts_add_up_to_the_step():
    frame = steptrace.steps_frame(make_steps([10, 200, 300]), batch_size=32)
    assert frame["gap_ms"].tolist() == pytest.approx([10, 200, 300])
    assert frame["fwd_bwd_ms"].tolist() == pytest.approx([8000, 500, 500])
    assert frame["tail_ms"].tolist() == pytest.approx([50, 50, 50])
    assert (frame["gap_ms"] + frame["fwd_bwd_ms"] + frame["tail_ms"]).tolist() == pytest.approx(
        frame["step_ms"].tolist())
    assert frame["images_per_s"].iloc[1] == pytest.approx(32 / 0.75)


def test_input_bound_run_drops_the_steps_served_from_the_compile_buffer():
    # compile, warm-up, 3 steps served from the queue filled during compile, then waiting
    gaps = [5, 1, 1, 1, 1] + [2000] * 10
    frame, reason = steptrace.assign_phases(steptrace.steps_frame(make_steps(gaps), 32), 1)
    assert frame["phase"].tolist() == (["compile", "warmup"] + ["drain"] * 3 + ["measured"] * 10)
    assert "drained at step 5" in reason
    summary = steptrace.summarize(frame, 32, 3)
    assert summary["steps_measured"] == 10
    assert summary["steps_excluded"] == 5
    assert summary["steps_excluded_by_phase"] == {"compile": 1, "warmup": 1, "drain": 3}
    assert summary["steady_step_ms"] == pytest.approx(2550)
    assert summary["gap_share"] == pytest.approx(2000 / 2550)
    assert summary["images_per_s"] == pytest.approx(32 / 2.55)
    assert summary["gap_ms"]["median"] == pytest.approx(2000)


def test_pipeline_that_keeps_up_has_no_drain_steps():
    gaps = [5] + [1.0] * 12
    frame, reason = steptrace.assign_phases(steptrace.steps_frame(make_steps(gaps), 32), 2)
    assert frame["phase"].tolist() == ["compile", "warmup", "warmup"] + ["measured"] * 10
    assert "keeps up" in reason


def test_steady_step_uses_wall_time_not_the_median_of_alternating_steps():
    # fast and slow steps alternate, as in the tuned arm on 2 cores
    records = make_steps([5] + [0, 3000] * 6, fwd_ms=600)
    frame, _ = steptrace.assign_phases(steptrace.steps_frame(records, 32), 0)
    summary = steptrace.summarize(frame, 32, 3)
    measured = frame[frame["phase"] == "measured"]
    assert summary["steady_step_ms"] == pytest.approx(measured["step_ms"].sum() / len(measured))
    assert summary["window_wall_s"] * 1e3 == pytest.approx(measured["step_ms"].sum())


def test_a_late_drain_is_capped_to_keep_the_minimum_of_measured_steps():
    gaps = [5, 1, 1, 1, 1, 1, 1, 2000, 2000, 2000, 2000]  # drains at step 7 of 11
    frame, reason = steptrace.assign_phases(steptrace.steps_frame(make_steps(gaps), 32), 1,
                                            min_measured_steps=6)
    assert (frame["phase"] == "measured").sum() == 6
    assert "raise trainer.steps" in reason


def test_too_few_measured_steps_is_an_error_that_says_what_to_raise():
    frame, _ = steptrace.assign_phases(steptrace.steps_frame(make_steps([1, 1, 1, 1]), 32), 1)
    with pytest.raises(ValueError, match="trainer.steps"):
        steptrace.summarize(frame, 32, 3)


def test_cpu_floor_and_binding_floor():
    assert steptrace.cpu_bound(3000, 1000, 2) == 2000
    floors = steptrace.step_floor(compute_wall_ms=600, compute_cpu_ms=1100,
                                  pipeline_wall_ms=1500, pipeline_cpu_ms=3000, cpu_count=2)
    assert floors["cpu_floor_ms"] == pytest.approx(2050)
    assert floors["binding_floor"] == "cpu"
    assert floors["floor_ms"] == pytest.approx(2050)


def _frame(gaps_ms, compute_ms=100.0):
    """A window's frame from its gaps (step 0 the start-up), every step computing compute_ms."""
    records, t = [], 0.0
    for i, gap in enumerate(gaps_ms):
        ready = t + gap / 1e3
        end = ready + compute_ms / 1e3
        records.append(steptrace.StepTimes(i, t, ready, ready + compute_ms / 2e3, end, 1.0))
        t = end
    return steptrace.steps_frame(records, 4)


def test_a_bursty_pipelines_step_is_its_cycle_not_its_fast_or_slow_steps():
    """Two workers finishing together: slow, fast, slow, fast ... after two buffered batches.
    Its true period is 2 batches per 700 ms (350 ms per step: 500 ms waited and two 100 ms
    computes); 4 steps from the start would read 200 ms (buffered) or 275-425 ms."""
    gaps = [900, 0, 0] + [500, 0] * 4  # buffered batches at the start, then the bursts
    found = steptrace.cycle_estimate(_frame(gaps), 1, 4)
    assert found.step_ms == pytest.approx(350.0) and (found.first, found.last) == (3, 9)
    assert steptrace.cycle_estimate(_frame(gaps[:7]), 1, 4).step_ms is None  # one cycle is not enough


def test_a_pipeline_that_keeps_up_gives_the_networks_step_after_twice_the_steps():
    gaps = [900] + [0] * 8
    found = steptrace.cycle_estimate(_frame(gaps), 1, 4)
    assert found.step_ms == pytest.approx(100.0) and "keeps up" in found.rule
    assert steptrace.cycle_estimate(_frame(gaps[:6]), 1, 4).step_ms is None  # could be buffered
    hiccup = [900, 0, 0, 0, 60, 0, 0, 0, 0]
    assert steptrace.cycle_estimate(_frame(hiccup), 1, 4).step_ms == pytest.approx(107.5)


def test_a_window_that_keeps_up_averages_its_steady_steps_when_set():
    """verify.steady_steps: a keeping-up window's error is the change in what the pipeline
    holds ahead over it (bounded), so it may be asked to run longer than 2 x min_steps."""
    gaps = [900] + [0] * 12
    assert steptrace.cycle_estimate(_frame(gaps[:9]), 1, 4, steady_steps=12).step_ms is None
    found = steptrace.cycle_estimate(_frame(gaps), 1, 4, steady_steps=12)
    assert found.step_ms == pytest.approx(100.0) and "12 steps waited" in found.rule


def _stepped(steps_ms):
    """A keeping-up window's frame (no gaps) from its steps' lengths (step 0 the start-up)."""
    records, t = [], 0.0
    for i, ms in enumerate(steps_ms):
        records.append(steptrace.StepTimes(i, t, t, t + ms / 2e3, t + ms / 1e3, 1.0))
        t += ms / 1e3
    return steptrace.steps_frame(records, 32)


# cpu_demo's tuned arm (2 map workers on 2 cores), its 30 training steps as measured
# (2026-12-06): the pipeline fills its buffer beside the network (slow steps), then idles
# while the network drains it (runs of ~590 ms)
TUNED = [3399, 2597, 2295, 1306, 610, 598, 588, 922, 3100, 577, 3246, 2297, 654, 3164, 2049, 2431,
         1303, 430, 1316, 1108, 634, 595, 588, 588, 628, 587, 596, 593, 590, 2696]


def test_a_pipeline_that_keeps_up_by_cycles_is_counted_over_whole_buffer_cycles():
    """Between two steps that each open a run of fast steps after slow ones, the buffer was
    full at both ends: the steps between are the pipeline's own (1525 ms, beside a CPU floor
    of 1531 ms), where the mean of all 28 read 1289 ms (ending in a drain) and a drained
    start's 12 steps 1.6-2.0 s (the fill alone)."""
    points, cycles = steptrace.buffer_full_points(_stepped(TUNED), 2)
    assert points == [4, 20] and cycles
    found = steptrace.cycle_estimate(_stepped(TUNED), 2, 4, steady_steps=12)
    assert found.step_ms == pytest.approx(sum(TUNED[4:20]) / 16) and (found.first, found.last) == (3, 19)
    assert "buffer" in found.rule
    assert 1500 < found.step_ms < 1550 < sum(TUNED[2:]) / 28 + 300
    # one idle run so far: a cycling window waits for the next (not the mean at 12 steps) ...
    assert steptrace.cycle_estimate(_stepped(TUNED[:16]), 2, 4, steady_steps=12).step_ms is None
    # ... until its last step, where the mean is all it has, and says so
    last = steptrace.cycle_estimate(_stepped(TUNED[:16]), 2, 4, steady_steps=12, final=True)
    assert last.step_ms == pytest.approx(sum(TUNED[2:16]) / 14) and "no whole buffer cycle" in last.rule


def test_a_fill_with_no_idle_run_yet_is_not_averaged_before_the_windows_last_step():
    """A drained start's first dozen steps can be the fill alone (slow, uneven, no idle run
    yet): their mean read a two-worker setting 1817 ms where its whole cycles read 1.3-1.4 s.
    Steps that are alike (a prepared pipeline's 350-370 ms) are averaged at steady_steps."""
    fill = [3000, 1300, 2300, 3100, 1400, 2400, 3000, 1300, 2500, 3100, 1350, 2200, 2900, 1500]
    assert steptrace.cycle_estimate(_stepped(fill), 1, 4, steady_steps=12).step_ms is None
    assert steptrace.cycle_estimate(_stepped(fill), 1, 4, steady_steps=12, final=True).step_ms \
        == pytest.approx(sum(fill[1:]) / 13)
    alike = [900] + [350 + 20 * (i % 2) for i in range(13)]
    assert steptrace.cycle_estimate(_stepped(alike), 1, 4, steady_steps=12).step_ms == pytest.approx(
        sum(alike[1:]) / 13)


def test_an_idle_run_cut_by_one_slow_step_is_no_cycle():
    """Two idle runs with one slow step between are one idle run: no fill, no whole cycle (it
    read 711 ms over 4 steps where the setting's cycles read ~1.5 s)."""
    cut = [3000, 2400, 2900, 1500, 600, 590, 600, 1400, 590, 600, 595, 2500, 3000, 2200, 1700, 2900,
           600, 590, 600, 2400]
    points, cycles = steptrace.buffer_full_points(_stepped(cut), 1)
    assert points == [4, 16] and cycles
    assert steptrace.cycle_estimate(_stepped(cut), 1, 4, steady_steps=12).step_ms == pytest.approx(
        sum(cut[4:16]) / 12)


def test_buffer_cycles_are_counted_over_steady_steps_at_least():
    """A baseline round's two-worker window (2026-12-07): after a long fill, an idle run at step
    19, a fill of only 3 slow steps, an idle run at 27. Counted over those 8 steps it read
    1269 ms, under the CPU floor of 1852 ms; the other windows of that setting read 1844-1964.
    Two points a short fill apart need not hold the same buffer: whole cycles are counted over
    steady_steps (12) at least, so the window goes on (and at its last step says it had none)."""
    window = [3855.9, 2826.8, 3112.4, 3127.8, 2897.0, 1418.9, 3090.5, 703.1, 1258.3, 3109.0, 2258.5,
              704.2, 703.4, 896.9, 3116.0, 3156.1, 3248.1, 854.5, 926.6, 720.7, 712.6, 693.9, 728.1,
              711.2, 1830.9, 1897.3, 2855.8, 710.4, 720.8, 712.8]
    points, _ = steptrace.buffer_full_points(_stepped(window), 2)
    assert 19 in points and 27 in points
    assert steptrace.cycle_estimate(_stepped(window), 1, 4, steady_steps=12).step_ms is None
    last = steptrace.cycle_estimate(_stepped(window), 1, 4, steady_steps=12, final=True)
    assert last.step_ms > 1700 and "no whole buffer cycle" in last.rule
