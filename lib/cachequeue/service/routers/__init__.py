"""The service's routers, one per resource: `jobs` (/v1/jobs), `health` (/healthz, /readyz)
and `metrics` (/metrics, Prometheus)."""

from . import health, jobs, metrics

__all__ = ["health", "jobs", "metrics"]
