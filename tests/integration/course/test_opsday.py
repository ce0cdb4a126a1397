"""The simulated day: without fairness the quiet tenants wait behind the noisy one; with it
they do not. The quota caps throughput wherever concurrency goes (the knee)."""

from cachequeue.course.labs import opsday


def test_fairness_on_the_simulated_day(conn):
    day = opsday.Day(hours=1.0)
    plain = opsday.run_day(conn, opsday.plain, day)
    fair = opsday.run_day(conn, opsday.fair(), day)
    quiet = plain.tenant != day.noisy_tenant
    assert plain[quiet].oldest_wait.max() > 1800  # half an hour behind the noisy backlog
    assert fair[fair.tenant != day.noisy_tenant].oldest_wait.max() == 0
    assert opsday.shares(plain, 10, 30)[day.noisy_tenant] == 1.0
    share = opsday.shares(fair, 10, 30)
    assert share[day.noisy_tenant] < 1.0 and share.drop(day.noisy_tenant).gt(0).all()
    # Fairness reorders, it does not lose work: both days claimed the same number of jobs.
    assert plain.claimed.sum() == fair.claimed.sum()


def test_the_quota_knee(conn):
    knee = opsday.quota_knee(conn, [1, 2, 4, 6, 8, 12], per_second=3, job_seconds=2)
    rate = dict(zip(knee.concurrency, knee.jobs_per_second, strict=True))
    assert abs(rate[2] - 1.0) < 0.05 and abs(rate[4] - 2.0) < 0.05  # c / job_seconds
    assert all(abs(rate[c] - 3.0) < 0.1 for c in (6, 8, 12))  # the quota, not the workers
