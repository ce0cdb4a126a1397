"""The service's routers, one per resource: `jobs` (/v1/jobs), `health` (/healthz, /readyz),
`metrics` (/metrics, Prometheus, on the operator listener) and `page` (an app's page)."""

from . import health, jobs, metrics, page

__all__ = ["health", "jobs", "metrics", "page"]
