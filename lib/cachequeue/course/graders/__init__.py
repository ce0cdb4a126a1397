"""Exercise graders: one module per chapter, each a function that takes the learner's code.

A grader sets up the state it checks (or says which cell to re-run), gives the same verdict
however often it runs, leaves no setting behind when it fails, accepts every answer the
exercise's text allows and rejects the typical wrong ones with an `AssertionError` whose
Chinese message names the cause and the section that teaches it. Their tests keep wrong and
right answers for each (`tests/unit/course/test_graders_*.py`,
`tests/integration/course/test_graders_*.py`).

    ch00  advance_both (the two clocks)
    ch01  summary_or_fallback (degrade when busy)
    ch02  key_v2 (template version and a private instruction)
    ch03  claim_one (the one-statement claim, run by two sessions)
    ch04  run_rounds (retries with a capped backoff, and a permanent failure)
    ch05  exposing_sequence (a boundary the random sequences miss)
    ch06  send_receipt (an external effect made harmless when a job runs twice)
    ch07  missed_events (resume an event stream)
    ch08  fold_other (tenants beyond the top N folded into `other`)
    ch09  handle_once (a consumer that drops duplicates by event id)
    ch10  extend (renew a Redis lock only while still its owner)
    ch11  stops_growing (the batch size where throughput stops growing)
    ch12  check_step (the capstone's seven steps, on labs.capstone's probes)
    ch13  handle (acknowledge a delivery only after its fenced write)
    ch14  holders_sql (the monitoring query that finds who holds the horizon)
"""

__all__ = ["ch00", "ch01", "ch02", "ch03", "ch04", "ch05", "ch06", "ch07", "ch08", "ch09", "ch10", "ch11", "ch12", "ch13", "ch14"]
