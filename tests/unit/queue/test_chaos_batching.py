"""The chaos run's verdict on batching: a planned kill between a handler's return and the
flush must have landed at least once, or the run says so (with its seed)."""

import copy

from cachequeue.course.procs import chaos

BATCHED = {
    "seed": 9, "jobs": 10,
    "planned": {"kills": 1, "stops": 0, "restarts": 0, "flush_kills": 2},
    "carried_out": {"kills": 1, "stops": 0, "restarts": 0, "flush_kills": 2},
    "flush_kills_landed": 1,
    "exit_codes": {"w1": -9, "w1.1": 0},
    "verdict": {"lost": 0, "duplicates": 0, "stuck_running": 0, "open_attempts": 0,
                "not_one_finished_attempt": 0, "results_not_of_their_attempt": 0,
                "outputs_not_of_their_attempt": 0, "not_one_charge": 0, "done": 10,
                "stale_reports_rejected": 0},
}


def test_flush_kills_that_never_hit_the_window_are_a_failure():
    assert chaos.failures(BATCHED) == []
    missed = copy.deepcopy(BATCHED)
    missed["flush_kills_landed"] = 0
    [problem] = chaos.failures(missed)
    assert "between a handler's return and the flush" in problem and "seed=9" in problem


def test_a_flush_kill_not_carried_out_is_a_failure():
    short = copy.deepcopy(BATCHED)
    short["carried_out"]["flush_kills"] = 1
    [problem] = chaos.failures(short)
    assert "carried out" in problem


def test_without_flush_kills_none_is_asked_for():
    plain = copy.deepcopy(BATCHED)
    del plain["planned"]["flush_kills"], plain["carried_out"]["flush_kills"]
    plain["flush_kills_landed"] = 0
    assert chaos.failures(plain) == []


def test_the_chaos_runs_patience_grows_with_the_lease_and_the_poll():
    # Waits for a started job, a batch or a takeover: never below 5 s, four leases+polls above.
    assert chaos.patience(1.0, 0.1) == 5.0
    assert chaos.patience(5.0, 1.0) == 24.0
    assert chaos.patience(2.0, 0.5) > chaos.patience(1.0, 0.5)


def test_a_run_that_reached_its_time_limit_says_so():
    late = copy.deepcopy(BATCHED) | {"timed_out": True, "time_limit_s": 120}
    [problem] = chaos.failures(late)
    assert "time limit (120 s)" in problem and "seed=9" in problem
    assert chaos.failures(copy.deepcopy(BATCHED) | {"timed_out": False, "time_limit_s": 120}) == []

