"""The sample application, a "team documents assistant": who reads what, documents, the model, jobs, the HTTP app.

- `access`: Who may read a document, and under which permission view its results are cached.
- `data`: The course's sample data set: two tenants, their users, documents with versions.
- `documents`: A tiny in-memory document store with versions, deletion and role changes.
- `editing`: Editing a document with its event in one transaction, and the summary that is current.
- `effects`: Handlers for real worker processes in the notebooks and the chaos run: `EFFECT_HANDLERS`.
- `pipeline`: A three-stage summary job for the checkpoint lab: split -> summarise parts -> combine.
- `reading`: The read path of the document assistant: snapshot, authorize, key, cache, load.
- `summaries`: The sample app's summary jobs: how a request becomes a job, and what a worker does with it.
- `summariser`: The slow, deterministic "model call" that the course's caches and jobs wrap.
- `tenancy`: Two tenants, one document id: a second tenant's store, and a key that forgets the tenant.
- `webapp`: The course's HTTP app: the generic job service plus the sample app's users, documents and page.

Modules are not imported here (some load pandas or matplotlib); import the one you need.
"""

__all__ = ["access", "data", "documents", "editing", "effects", "pipeline", "reading", "summaries",
           "summariser", "tenancy", "webapp"]
