-- Editing a document, and which summary is current (cachequeue.course.app.editing, chapter 09).

-- name: bump_version
-- Make a new version of a tenant's document with this body; returns the new version number.
WITH bumped AS (
    UPDATE documents SET version = version + 1
    WHERE id = %(document_id)s AND tenant_id = %(tenant_id)s AND deleted_at IS NULL
    RETURNING id, version
)
INSERT INTO document_versions (document_id, version, body)
SELECT id, version, %(body)s FROM bumped
RETURNING version;

-- name: latest_summary
-- The naive read: the newest stored summarise result of the document, whatever its version.
SELECT (j.payload ->> 'version')::integer AS version, r.output
FROM job_results r
JOIN jobs j ON j.id = r.job_id
WHERE j.kind = 'summarise' AND j.tenant_id = %(tenant_id)s
  AND (j.payload ->> 'document_id')::integer = %(document_id)s
ORDER BY r.created_at DESC, r.job_id DESC
LIMIT 1;

-- name: current_summary
-- The summary of the document's current version only; none while that one is not done.
SELECT (j.payload ->> 'version')::integer AS version, r.output
FROM job_results r
JOIN jobs j ON j.id = r.job_id
JOIN documents d ON d.id = (j.payload ->> 'document_id')::integer AND d.tenant_id = j.tenant_id
WHERE j.kind = 'summarise' AND j.tenant_id = %(tenant_id)s AND d.id = %(document_id)s
  AND d.deleted_at IS NULL
  AND (j.payload ->> 'version')::integer = d.version
ORDER BY r.created_at DESC, r.job_id DESC
LIMIT 1;

-- name: delete_document
-- Soft-delete a tenant's document; its summaries stop being current at once.
UPDATE documents SET deleted_at = cq_now()
WHERE id = %(document_id)s AND tenant_id = %(tenant_id)s AND deleted_at IS NULL
RETURNING id;

-- name: version
-- The current version of a tenant's document.
SELECT version FROM documents WHERE id = %(document_id)s AND tenant_id = %(tenant_id)s;
