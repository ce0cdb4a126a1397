"""schemathesis against the service's own OpenAPI document, on a real uvicorn socket.

Bounded: for each operation of /openapi.json, hypothesis draws EXAMPLES valid cases
(from the document) and EXAMPLES invalid ones (that break it), derandomized (the same
cases every run, so a failure reproduces), no example database, and the whole run stops
itself after BUDGET seconds. Half the cases carry a valid token (a member of tenant 1),
half none or a wrong one. Every answer must pass schemathesis's checks (no 5xx, a status
and content type the document lists, a body that matches the documented schema, invalid
input refused) and ours: every 4xx is application/problem+json with a `code`, and every
job written belongs to the caller's tenant. `positive_data_acceptance` is not run: valid
per the document is not valid per the database (a kind must be a row of job_kinds, a
summary's document must be the caller's to read), and those refusals are the point.
"""

from __future__ import annotations

import time

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)
from servicekit import auth

EXAMPLES = 40  # per operation and mode: 7 operations x 2 modes x 40 = 560 cases at most
BUDGET = 120.0  # seconds for the whole run; cases after that are skipped
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance, negative_data_rejection]
TOKENS = [auth(11), {}, {"Authorization": "Bearer cq99-0000000000000000"}]


def test_the_service_keeps_its_own_openapi_document(live, conn):
    schema = schemathesis.openapi.from_url(live.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 6, [op.label for op in operations]
    deadline = time.monotonic() + BUDGET
    seen: dict[str, set[int]] = {}
    calls = []

    def fuzz(operation, mode) -> None:
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  phases=[Phase.explicit, Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy(generation_mode=mode), token=st.sampled_from(TOKENS))
        def run(case, token):
            if time.monotonic() > deadline:
                return
            response = case.call(base_url=live.url, headers=token, timeout=30)
            calls.append(response.status_code)
            case.validate_response(response, checks=CHECKS)
            status = response.status_code
            seen.setdefault(operation.label, set()).add(status)
            if 400 <= status < 500:
                assert response.headers["content-type"] == ["application/problem+json"]
                assert response.json()["code"], response.text

        try:
            run()
        except Unsatisfiable:  # nothing to break: an operation with no input at all
            assert mode == GenerationMode.NEGATIVE, operation.label

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            fuzz(operation, mode)

    assert time.monotonic() < deadline + 30, "the run did not stop by itself"
    print(f"schemathesis: {len(calls)} cases, statuses {sorted(set(calls))}, {seen}")
    assert len(calls) >= 150, f"only {len(calls)} cases ran"
    # Every job that any case managed to write is tenant 1's (the only valid token).
    tenants = {row[0] for row in conn.execute("SELECT DISTINCT tenant_id FROM jobs")}
    assert tenants <= {1}
    # The run reached more than the front door: some request of each operation got past
    # authentication.
    assert all(statuses - {401} for statuses in seen.values()), seen
