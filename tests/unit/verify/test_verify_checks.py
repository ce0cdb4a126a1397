"""Each check of cachequeue.verify.checks passes a good hand-written history and fails a bad one,
naming its check and giving the few operations that prove it."""

from __future__ import annotations

import copy
import json

import pytest

from cachequeue.queue.retry import RetryPolicy
from cachequeue.verify import checks, timeline

LEASE, POLL = 1.0, 0.5
POLICY = RetryPolicy(max_attempts=3, base=0.2, cap=1.0, jitter="equal")
T = 1000.0  # every time in these histories is T + a few seconds
A1, A2, A3 = "tok-a1", "tok-a2", "tok-a3"


def op(type_, f, time, process="w1", **fields):
    return {"process": process, "type": type_, "f": f, "time": T + time} | fields


def claim(time, token, attempt, process="w1", job=1):
    return [op("invoke", "claim", time, process, call=f"{process}:c{token}"),
            op("ok", "claim", time, process, call=f"{process}:c{token}", job=job, attempt=attempt,
               token=token, **{"from": T + time, "until": T + time + LEASE}, lease=LEASE)]


def report(f, time, token, attempt, outcome="accepted", process="w1", job=1, type_="ok",
           delay=None, **extra):
    """An invoke and its completion. A fail's drawn `delay` is on the COMPLETION, where
    verify.instrument writes it (jobs.fail draws it while it runs): a fixture that put it
    on the invoke once hid a checker that read it only there."""
    call = f"{process}:{f}{token}{time}"
    done = op(type_, f, time + 0.01, process, call=call, job=job, attempt=attempt, token=token)
    if type_ == "ok":
        done["outcome"] = outcome
    if delay is not None:
        done["delay"] = delay
    return [op("invoke", f, time, process, call=call, job=job, attempt=attempt, token=token,
               **extra), done]


def effect(time, token, attempt, applied=True, process="w1", job=1, key="k1"):
    return [op("info", "effect", time, process, job=job, attempt=attempt, token=token, key=key,
               applied=applied)]


def attempt_row(attempt, token, started, finished, outcome, job=1, worker="w1"):
    return {"job_id": job, "attempt": attempt, "lease_token": token, "worker": worker,
            "started_at": T + started, "finished_at": None if finished is None else T + finished,
            "outcome": outcome, "rejected_report": None, "rejected_at": None}


def good():
    """Job 1: attempt 1 by w1 fails (retry after 0.15 s), attempt 2 by w2 finishes."""
    ops = [op("ok", "submit", 0, "driver", job=1, key="k1"),
           *claim(0.1, A1, 1),
           *report("fail", 0.3, A1, 1, delay=0.15),
           *claim(0.5, A2, 2, "w2"),
           *effect(0.6, A2, 2, process="w2"),
           *report("finish", 0.7, A2, 2, process="w2")]
    snap = {
        "jobs": [{"job_id": 1, "kind": "effect", "state": "done", "attempts": 2, "handbacks": 0,
                  "max_attempts": 3, "payload": {"key": "k1"}, "finished_at": T + 0.7}],
        "attempts": [attempt_row(1, A1, 0.1, 0.3, "retry"),
                     attempt_row(2, A2, 0.5, 0.7, "done", worker="w2")],
        "results": [{"job_id": 1, "lease_token": A2, "output": {}, "created_at": T + 0.7}],
        "effects": [{"key": "k1", "job_id": 1, "lease_token": A2, "applied_at": T + 0.6}],
        "now": T + 10,
    }
    return ops, snap


def run(ops, snap):
    return checks.check(ops, snap, lease=LEASE, poll=POLL, policy=POLICY)


def names(found):
    return sorted({v.check for v in found})


def test_a_good_history_passes():
    assert run(*good()) == []


def test_a_lost_job_is_found():
    ops, snap = good()
    snap["jobs"][0]["state"] = "running"
    found = [v for v in run(ops, snap) if v.check == "lost"]
    assert len(found) == 1 and found[0].job == 1 and found[0].witness[0]["f"] == "submit"


def test_a_claim_the_tables_forgot_is_lost_unless_the_server_restarted():
    ops, snap = good()
    ops += claim(0.9, A3, 3, "w3")  # answered, but no attempt row has it
    found = [v for v in run(ops, snap) if v.check == "lost"]
    assert len(found) == 1 and found[0].witness[0]["token"] == A3
    ops.append(op("info", "restart", 1.0, "nemesis", started=T + 0.95, until=T + 1.0))
    assert [v for v in run(ops, snap) if v.check == "lost"] == []


def test_a_claim_answered_after_a_restart_that_lost_it_is_not_lost():
    """The claim ran before the crash (its lease starts there); a partition held its answer
    back until after the restart: the crash explains the missing row."""
    ops, snap = good()
    late = claim(1.5, A3, 3, "w3")
    late[1]["from"] = T + 0.9  # ran at 0.9 on the server, answered at 1.5
    ops += late
    ops.append(op("info", "restart", 1.0, "nemesis", started=T + 0.95, until=T + 1.0))
    assert [v for v in run(ops, snap) if v.check == "lost"] == []
    late[1]["from"] = T + 1.2  # ran after the restart: nothing explains the missing row
    assert [v.check for v in run(ops, snap) if v.check == "lost"] == ["lost"]


def test_an_unexpected_job_is_found():
    ops, snap = good()
    snap["jobs"].append(dict(snap["jobs"][0], job_id=2, payload={}))
    assert [v.job for v in run(ops, snap) if v.check == "unexpected"] == [2]


def test_two_accepted_finishes_are_found():
    ops, snap = good()
    ops += report("finish", 0.75, A1, 1)  # the first attempt's report accepted too
    found = [v for v in run(ops, snap) if v.check == "one-result"]
    assert found and "2 finishes accepted" in found[0].message
    assert {o["token"] for o in found[0].witness} == {A1, A2}


def test_a_result_written_by_an_attempt_that_lost_the_lease_is_found():
    ops, snap = good()
    snap["results"][0]["lease_token"] = A1  # attempt 1 wrote it, after attempt 2 had claimed
    found = [v for v in run(ops, snap) if v.check == "one-result"]
    assert found and "after attempt 2 had taken the lease" in found[0].message


def test_an_ambiguous_commit_called_refused_is_found():
    ops, snap = good()
    ops = ops[:-1] + [op("unknown", "finish", 0.71, "w2", call=ops[-1]["call"], job=1,
                         attempt=2, token=A2),
                      op("info", "verdict", 0.9, "w2", job=1, attempt=2, token=A2,
                         event="finished")]
    assert run(ops, snap) == []  # unknown, resolved by the result row: accepted once
    resend = [op("invoke", "finish", 0.8, "w2", call="w2:again", job=1, attempt=2, token=A2),
              op("unknown", "finish", 0.81, "w2", call="w2:again", job=1, attempt=2, token=A2)]
    assert run(ops + resend, snap) == []  # sent again, cut again: still one commit at most
    ops[-1]["event"] = "rejected"
    assert names(run(ops, snap)) == ["ambiguous-as-failure"]
    ops[-1]["event"] = "finished"
    snap["results"][0]["lease_token"] = A1  # the worker said done, but attempt 1's result is there
    assert "false-success" in names(run(ops, snap))


def test_an_accepted_stale_report_is_found():
    ops, snap = good()
    ops += report("fail", 0.8, A1, 1, delay=0.1)  # attempt 1 reports again, after attempt 2
    found = [v for v in run(ops, snap) if v.check == "stale-accepted"]
    assert len(found) == 1 and found[0].witness[-1]["outcome"] == "accepted"
    ops[-1]["outcome"] = "rejected"
    assert [v for v in run(ops, snap) if v.check == "stale-accepted"] == []


def test_a_report_after_the_lease_ran_out_is_found():
    ops, snap = good()
    late = report("finish", 1.55, A2, 2, process="w2")  # claimed at 0.5, lease 1 s
    ops = ops[:-2] + late
    snap["attempts"][1]["finished_at"] = snap["results"][0]["created_at"] = T + 1.55
    found = names(run(ops, snap))
    assert "stale-accepted" in found and "one-result" in found


def test_overlapping_leases_are_found():
    ops, snap = good()
    ops = ops[:5] + claim(0.25, A2, 2, "w2") + ops[7:]  # claimed while attempt 1 held it
    snap["attempts"][1]["started_at"] = T + 0.25
    found = [v for v in run(ops, snap) if v.check == "lease-overlap"]
    assert len(found) == 1
    assert [w.get("token", w.get("lease_token")) for w in found[0].witness] == [A1, A1, A2]


def test_a_lease_that_never_ended_is_found():
    ops, snap = good()
    snap["attempts"][0].update(finished_at=None, outcome=None)  # reset, not reported
    ops = ops[:3] + ops[5:]  # attempt 1 never reported
    found = [v for v in run(ops, snap) if v.check == "lease-overlap"]
    assert len(found) == 1 and "never ended" in found[0].message


def test_a_renewal_after_expiry_is_found():
    ops, snap = good()
    ops = ops[:-2]
    tokens = {"tokens": [A2]}
    ops += [op("invoke", "renew", 1.6, "w2", call="w2:r", **tokens, db_before=T + 1.6),
            op("ok", "renew", 1.61, "w2", call="w2:r", **tokens, held=[A2], db_before=T + 1.6,
               db_after=T + 1.61)]
    snap["attempts"][1]["finished_at"] = snap["results"][0]["created_at"] = T + 1.9
    ops += report("finish", 1.9, A2, 2, process="w2")
    assert "renew-after-expiry" in names(run(ops, snap))
    ops[-4]["db_before"] = ops[-3]["db_before"] = T + 1.4  # renewed in time: fine
    ops[-3]["db_after"] = T + 1.41
    assert run(ops, snap) == []


def test_attempt_numbers_and_the_cap_are_checked():
    ops, snap = good()
    snap["attempts"][1]["attempt"] = 3
    assert names(run(ops, snap)) == ["attempts"]
    ops, snap = good()
    snap["jobs"][0].update(attempts=2, max_attempts=1)
    assert "attempts" in names(run(ops, snap))
    ops, snap = good()
    snap["jobs"][0].update(handbacks=1)  # no attempt was released
    assert "attempts" in names(run(ops, snap))


def test_retry_delays_are_checked_against_the_policy_and_the_next_start():
    ops, snap = good()
    bad = copy.deepcopy(ops)
    assert bad[3]["type"] == "invoke" and "delay" not in bad[3]  # on the completion only
    bad[4]["delay"] = 0.05  # equal jitter after attempt 1: within [0.1, 0.2]
    assert names(run(bad, snap)) == ["retry-delay"]
    bad = copy.deepcopy(ops)
    bad[4]["delay"] = 0.19  # within bounds, but attempt 2 started 0.1 s after the failure
    snap2 = copy.deepcopy(snap)
    snap2["attempts"][1]["started_at"] = T + 0.4
    bad[6]["from"] = T + 0.4
    found = [v for v in run(bad, snap2) if v.check == "retry-delay"]
    assert len(found) == 1 and "before its delay" in found[0].message


def test_side_effects_are_checked_by_business_key():
    ops, snap = good()
    ops += effect(0.2, A1, 1)  # attempt 1 applied the effect as well
    found = [v for v in run(ops, snap) if v.check == "side-effect"]
    assert len(found) == 1 and len(found[0].witness) == 2
    ops, snap = good()
    snap["effects"] = []
    assert names(run(ops, snap)) == ["side-effect"]


def kill_history(reclaimed_at):
    """w1 claims at 0.1 (lease to 1.1) and is killed at 0.2; w2 claims again at `reclaimed_at`."""
    ops = [op("ok", "submit", 0, "driver", job=1, key="k1"), *claim(0.1, A1, 1),
           op("info", "kill", 0.2, "nemesis", target="w1", pid=42),
           *claim(reclaimed_at, A2, 2, "w2"),
           *effect(reclaimed_at + 0.1, A2, 2, process="w2"),
           *report("finish", reclaimed_at + 0.2, A2, 2, process="w2")]
    snap = {
        "jobs": [{"job_id": 1, "kind": "effect", "state": "done", "attempts": 2, "handbacks": 0,
                  "max_attempts": 3, "payload": {"key": "k1"}}],
        "attempts": [attempt_row(1, A1, 0.1, 1.1, "expired"),
                     attempt_row(2, A2, reclaimed_at, reclaimed_at + 0.2, "done", worker="w2")],
        "results": [{"job_id": 1, "lease_token": A2, "output": {},
                     "created_at": T + reclaimed_at + 0.2}],
        "effects": [{"key": "k1", "job_id": 1, "lease_token": A2}],
        "now": T + 30,
    }
    return ops, snap


@pytest.mark.parametrize(("at", "caught"), [(1.4, False), (1.1 + POLL + 1.0 + 0.5, True)])
def test_a_killed_workers_job_must_be_claimed_again_within_lease_and_poll(at, caught):
    found = run(*kill_history(at))
    assert names(found) == (["reclaim"] if caught else [])
    if caught:
        assert [w["f"] for w in found[0].witness] == ["kill", "claim", "claim"]


def test_the_reclaim_clock_starts_when_a_worker_has_a_free_slot():
    late = 1.1 + POLL + 1.0 + 0.5
    ops, snap = kill_history(late)
    started = [op("info", "started", 0.0, "w2"), op("info", "started", 0.0, "w1")]
    busy = [*claim(0.05, "tok-b1", 1, "w2", job=2), *claim(0.06, "tok-b2", 1, "w2", job=3),
            op("info", "verdict", late - 1.0, "w2", job=2, attempt=1, event="finished")]
    snap["jobs"] += [dict(snap["jobs"][0], job_id=j, attempts=1) for j in (2, 3)]
    ops = ops[:1] + started + busy + ops[1:] + [op("ok", "submit", 0, "driver", job=j, key=f"k{j}")
                                               for j in (2, 3)]
    found = checks.check(ops, snap, lease=LEASE, poll=POLL, only=["reclaim"], concurrency=2)
    assert found == []  # w2 had no free slot until late - 1.0
    found = checks.check(ops, snap, lease=LEASE, poll=POLL, only=["reclaim"], concurrency=3)
    assert [v.check for v in found] == ["reclaim"]


def test_a_restart_extends_the_reclaim_window():
    ops, snap = kill_history(1.1 + POLL + 1.0 + 0.5)
    ops.append(op("info", "restart", 0.5, "nemesis", until=T + 1.5))
    assert run(ops, snap) == []


def capped_history(second_starts_at):
    """Tenant 7's jobs 1 and 2 (attempt rows only): job 1 open from 0.1 to 0.5, job 2 from
    `second_starts_at` to 0.9."""
    snap = {"jobs": [{"job_id": j, "tenant_id": 7, "state": "done"} for j in (1, 2)],
            "attempts": [attempt_row(1, A1, 0.1, 0.5, "done", job=1),
                         attempt_row(1, A2, second_starts_at, 0.9, "done", job=2, worker="w2")],
            "now": T + 10}
    return snap


@pytest.mark.parametrize("second_starts_at, caught", [(0.3, True), (0.5, False), (0.6, False)])
def test_the_tenant_cap_is_checked_by_the_database_clock(second_starts_at, caught):
    """With cap 1, two attempts of one tenant open at once break it; one that starts the
    instant the other closes does not."""
    found = checks._tenant_cap(checks._Index([], capped_history(second_starts_at), LEASE), 1)
    found = list(found)
    assert bool(found) is caught, found
    if caught:
        assert found[0].check == "tenant-cap" and found[0].number == 8
        assert {w["lease_token"] for w in found[0].witness} == {A1, A2}


def test_the_tenant_cap_check_runs_only_when_a_cap_is_given():
    snap = capped_history(0.3)
    assert "tenant-cap" not in names(checks.check([], snap, lease=LEASE, poll=POLL,
                                                  only=["tenant-cap"]))
    assert names(checks.check([], snap, lease=LEASE, poll=POLL, tenant_cap=1,
                              only=["tenant-cap"])) == ["tenant-cap"]
    assert checks.check([], snap, lease=LEASE, poll=POLL, tenant_cap=2, only=["tenant-cap"]) == []


def test_a_violation_says_its_number_and_serialises():
    ops, snap = good()
    snap["jobs"][0]["state"] = "pending"
    (v,) = [v for v in run(ops, snap) if v.check == "lost"]
    assert v.as_dict()["number"] == 1 and v.as_dict()["witness"]


def test_the_timeline_draws_one_bar_per_attempt_and_the_witness_in_red(tmp_path):
    ops, snap = good()
    ops.append(op("info", "kill", 0.4, "nemesis", target="w1", pid=1))
    snap["attempts"][0].update(finished_at=None, outcome=None)  # left open: a violation
    (violation,) = [v for v in run(ops, snap) if v.check == "lease-overlap"]
    ax = timeline.figure(ops, snap, violation).axes[0]
    bars = [p for p in ax.patches if p.get_gid() == "span"]
    assert len(bars) == 2
    assert all(b.get_linewidth() > 0 for b in bars)  # both attempts are in the witness
    assert [t.get_text() for t in reversed(ax.get_yticklabels())] == ["w1", "w2"]  # top down
    assert "lease-overlap" in ax.get_title()
    plain = timeline.figure(ops, snap).axes[0]
    assert not any(p.get_linewidth() > 0 for p in plain.patches if p.get_gid() == "span")
    fig = timeline.figure(ops, snap, violation)
    fig.savefig(tmp_path / "t.png")
    assert (tmp_path / "t.png").stat().st_size > 1000


def test_a_lease_of_the_wrong_length_is_caught_on_its_claim():
    ops, snap = good()
    assert [v for v in run(ops, snap) if v.check == "lease-length"] == []
    bad = copy.deepcopy(ops)
    bad[2]["until"] = T + 0.1 + 3600  # a claim whose lease came from a clock an hour ahead
    found = [v for v in run(bad, snap) if v.check == "lease-length"]
    assert len(found) == 1 and "3600.000 s" in found[0].message
    assert found[0].witness[0] is not None and found[0].witness[1]["row"] == "attempts"


def test_the_start_of_a_claim_is_the_recorded_one_not_lease_end_minus_lease():
    # Attempt 1's lease (0.1 .. 1.1) expires; attempt 2 claims at 1.5 with a lease of 0.2 s
    # (a claim that sets the wrong length). Lease end minus the configured lease would put
    # its start at 0.7, "0.4 s before attempt 1's lease ended", a message its own witness
    # (a claim at 1.5) contradicts. The attempt row recorded the start: no overlap, and the
    # wrong length is what is reported.
    ops = [op("ok", "submit", 0, "driver", job=1, key="k1"),
           *claim(0.1, A1, 1),
           *claim(1.5, A2, 2, "w2"),
           *effect(1.6, A2, 2, process="w2"),
           *report("finish", 1.6, A2, 2, process="w2")]
    ops[-4]["until"] = T + 1.7
    ops[-4]["from"] = T + 0.7  # what the recorder used to infer
    snap = {
        "jobs": [{"job_id": 1, "kind": "effect", "state": "done", "attempts": 2, "handbacks": 0,
                  "max_attempts": 3, "payload": {"key": "k1"}, "finished_at": T + 1.6}],
        "attempts": [attempt_row(1, A1, 0.1, 1.1, "expired"),
                     attempt_row(2, A2, 1.5, 1.6, "done", worker="w2")],
        "results": [{"job_id": 1, "lease_token": A2, "output": {}, "created_at": T + 1.6}],
        "effects": [{"key": "k1", "job_id": 1, "lease_token": A2, "applied_at": T + 1.6}],
        "now": T + 10,
    }
    found = run(ops, snap)
    assert [v.check for v in found] == ["lease-length"], [v.message for v in found]
    assert "a lease of 0.200 s" in found[0].message


def test_a_job_that_leaves_a_terminal_state_without_an_audited_retry_is_caught():
    ops, snap = good()
    snap["transitions"] = [{"id": 1, "job_id": 1, "old_state": "failed", "new_state": "done",
                            "at": T + 0.7}]
    found = [v for v in run(ops, snap) if v.check == "terminal-left"]
    assert len(found) == 1 and "failed for done" in found[0].message
    assert found[0].witness[0]["row"] == "transitions"
    snap["transitions"] = [{"id": 1, "job_id": 1, "old_state": "failed", "new_state": "pending",
                            "at": T + 0.4}]
    assert [v.check for v in run(ops, snap)] == ["terminal-left"]  # no retry was audited
    snap["audit"] = [{"job_id": 1, "action": "retry", "actor": "op", "at": T + 0.4}]
    assert run(ops, snap) == []  # an operator's audited retry is allowed


def test_a_worker_that_died_of_an_error_is_a_violation_with_its_log_line():
    ops, snap = good()
    ops.append(op("info", "exit", 2, "driver", target="w1", status=1, cause="error",
                  line="psycopg.errors.UniqueViolation: duplicate key"))
    ops.append(op("info", "exit", 2, "driver", target="w2", status=-9, cause="nemesis"))
    found = run(ops, snap)
    assert [v.check for v in found] == ["worker-died"]
    assert "UniqueViolation" in found[0].message and found[0].witness[0]["cause"] == "error"


def test_a_run_cut_short_reports_unsettled_jobs_as_inconclusive_not_lost():
    ops, snap = good()
    snap["jobs"][0]["state"] = "pending"
    snap["results"] = []
    assert "lost" in names(checks.check(ops, snap, lease=LEASE, poll=POLL,
                                        only=["lost"]))
    cause = "the time limit of 60 s passed with 1 jobs unsettled"
    assert checks.check(ops, snap, lease=LEASE, poll=POLL, only=["lost"], cut_short=cause) == []
    assert checks.unsettled(snap, cause) == [{"job": 1, "state": "pending", "attempts": 2,
                                              "cause": cause}]


def test_a_cancelled_job_is_settled_only_when_a_cancel_was_recorded():
    ops, snap = good()
    snap["jobs"][0]["state"] = "cancelled"
    snap["results"] = []
    assert names(checks.check(ops, snap, lease=LEASE, poll=POLL, only=["lost"])) == ["lost"]
    ops.append(op("ok", "cancel", 0.6, "probe", call="p:1", job=1, outcome="accepted"))
    assert checks.check(ops, snap, lease=LEASE, poll=POLL, only=["lost"]) == []


def test_opportunities_count_what_each_check_judged():
    ops, snap = good()
    found = checks.opportunities(ops, snap, lease=LEASE)
    assert set(found) >= set(checks.CHECKS) - {"tenant-cap"}
    assert found["retry-delay"]["count"] == 1  # the delay is read from the completion
    assert found["lease-length"]["count"] == 2 and found["lost"]["count"] == 1
    assert found["reclaim"]["count"] == 0 and found["renew-after-expiry"]["count"] == 0


def test_a_job_never_claimed_is_no_trouble_for_the_reclaim_check():
    # A job cancelled while pending has no attempt row; with a kill in the history the
    # reclaim check walks every job's attempts (it once failed on the empty list).
    ops, snap = good()
    snap["jobs"].append({"job_id": 2, "kind": "effect", "state": "cancelled", "attempts": 0,
                         "handbacks": 0, "max_attempts": 3, "payload": {}, "finished_at": T + 0.2})
    ops += [op("ok", "submit", 0.05, "driver", job=2, key="k2"),
            op("ok", "cancel", 0.2, "probe", call="p:1", job=2, outcome="accepted"),
            op("info", "kill", 0.4, "driver", target="w1")]
    assert [v for v in run(ops, snap) if v.check != "reclaim"] == []


def test_the_witness_figure_shows_only_the_witness_and_marks_the_stale_report():
    ops, snap = good()
    ops += report("fail", 0.8, A1, 1, delay=0.1)  # attempt 1 reports again, after attempt 2
    (violation,) = [v for v in run(ops, snap) if v.check == "stale-accepted"]
    shown = timeline.witness_chart(ops, snap, violation)
    assert shown.order() == ["w1", "w2"] and "stale-accepted" in shown.title
    assert {s.highlight for s in shown.spans if s.lane == "w1"} == {True}
    late = [m for m in shown.marks if m.lane == "w1" and m.at > 0.75]
    assert [(m.kind, m.label) for m in late] == [("late", "报告失败：迟到却被接受")], \
        "the stale report that was accepted is drawn where it happened"
    claims = sorted((m.lane, round(m.at, 3)) for m in shown.marks if m.kind == "claim")
    assert claims == [("w1", 0.1), ("w2", 0.5)]
    ops[-1]["outcome"] = "rejected"
    refused = timeline.witness_chart(ops, snap, violation)
    assert [m.kind for m in refused.marks if m.at > 0.75] == ["refused"]
    fig = timeline.witness_figure(ops, snap, violation.as_dict())  # a dict from the JSON too
    assert "stale-accepted" in fig.axes[0].get_title()
    with pytest.raises(ValueError, match="give a violation"):
        timeline.witness_chart(ops, snap, None)


def test_a_kept_run_is_read_back_from_its_folder(tmp_path):
    ops, snap = good()
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
    (tmp_path / "snapshot.json").write_text(json.dumps(snap))
    assert timeline.kept({"history": str(tmp_path / "history.jsonl")}) == (ops, snap)
    assert timeline.kept(tmp_path) == (ops, snap)
    with pytest.raises(ValueError, match="not kept"):
        timeline.kept({"violations": []})


def test_the_timeline_page_is_offline_html_with_every_attempt(tmp_path):
    ops, snap = good()
    page = timeline.save_html(ops, snap, None, tmp_path / "timeline.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "http" not in page
    assert page.count('class="span ') == len(snap["attempts"])
