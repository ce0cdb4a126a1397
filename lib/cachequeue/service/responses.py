"""The shapes of the service's answers: 202 Accepted with Location and Retry-After, and a status.

RFC 9110 §15.3.3: 202 means the request was accepted for processing, which "may or may not
eventually be acted upon"; nothing in it says the work succeeded. Following the Azure
"Asynchronous Request-Reply" pattern, the 202 carries `Location` (where to ask about the
job) and `Retry-After` (how many seconds a polite client waits before asking); the status
answer repeats Retry-After for as long as the job is not final.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from fastapi.responses import JSONResponse

from ..queue.jobs import JobStatus
from .events import FINAL_STATES

__all__ = ["accepted", "job_links", "retry_after_for", "status_body", "status_response"]


def job_links(job_id: int) -> dict[str, str]:
    return {"self": f"/v1/jobs/{job_id}", "events": f"/v1/jobs/{job_id}/events"}


def retry_after_for(default: int, run_after: float | datetime | None = None) -> int:
    """Seconds to wait before polling: the default, or longer when the job starts later."""
    if isinstance(run_after, int | float) and run_after > default:
        return math.ceil(run_after)
    return default


def accepted(job_id: int, *, retry_after: int, state: str = "pending") -> JSONResponse:
    """202 Accepted for a persisted job: its id, state, and where to look next."""
    links = job_links(job_id)
    return JSONResponse({"id": job_id, "state": state, "links": links}, status_code=202,
                        headers={"Location": links["self"], "Retry-After": str(retry_after)})


def status_body(status: JobStatus) -> dict[str, Any]:
    """The JSON of `GET /v1/jobs/{id}`: the jobs table's row, with the result once done."""
    return {
        "id": status.job_id, "kind": status.kind, "state": status.state,
        "attempts": status.attempts, "max_attempts": status.max_attempts,
        "last_error": status.last_error, "output": status.output,
        "created_at": status.created_at.isoformat(),
        "finished_at": None if status.finished_at is None else status.finished_at.isoformat(),
        "links": job_links(status.job_id),
    }


def status_response(status: JobStatus, *, retry_after: int) -> JSONResponse:
    headers = {} if status.state in FINAL_STATES else {"Retry-After": str(retry_after)}
    return JSONResponse(status_body(status), headers=headers)
