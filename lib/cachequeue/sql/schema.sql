-- Schema for one chapter. reset_schema() runs this file with search_path set to the
-- chapter's own schema, so nothing here is schema-qualified and every table is persistent.

-- The clock every lease, backoff and timestamp uses. It is the database's clock
-- (clock_timestamp(), which advances within a transaction) unless the session has set
-- `cachequeue.now`, which lets a notebook or a test step time by hand:
--     SET cachequeue.now = '2026-01-01 00:00:30+00';
-- Declared STABLE on purpose: one statement sees one instant, and the planner may use
-- it in index conditions.
CREATE FUNCTION cq_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        nullif(current_setting('cachequeue.now', true), '')::timestamptz,
        clock_timestamp()
    )
$$;

-- ---------------------------------------------------------------- sample domain
-- The "team documents assistant" of the chapter: tenants, their users, documents
-- with versions. Loaded from data/*.csv by cachequeue.data.load_sample().

CREATE TABLE tenants (
    id   integer PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE users (
    id        integer PRIMARY KEY,
    tenant_id integer NOT NULL REFERENCES tenants (id),
    name      text NOT NULL,
    role      text NOT NULL CHECK (role IN ('admin', 'member'))
);

CREATE TABLE documents (
    id         integer PRIMARY KEY,
    tenant_id  integer NOT NULL REFERENCES tenants (id),
    title      text NOT NULL,
    visibility text NOT NULL CHECK (visibility IN ('team', 'admins')),
    version    integer NOT NULL CHECK (version >= 1),
    deleted_at timestamptz
);

CREATE TABLE document_versions (
    document_id integer NOT NULL REFERENCES documents (id),
    version     integer NOT NULL CHECK (version >= 1),
    body        text NOT NULL,
    PRIMARY KEY (document_id, version)
);
