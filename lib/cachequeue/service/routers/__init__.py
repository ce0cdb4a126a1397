"""The service's routers, one per resource: `jobs` (/v1/jobs) and `health` (/healthz, /readyz)."""

from . import health, jobs

__all__ = ["health", "jobs"]
