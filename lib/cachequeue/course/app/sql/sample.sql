-- The sample domain of the course: the "team documents assistant" of the chapter.
-- Tenants, their users, documents with versions. Loaded from the package's data/*.csv by
-- cachequeue.course.app.data.load_sample(). Applied by data.install(conn), which
-- cachequeue.course.chapter.reset composes with the queue's install.

CREATE TABLE tenants (
    id   integer PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE users (
    id        integer PRIMARY KEY,
    tenant_id integer NOT NULL REFERENCES tenants (id),
    name      text NOT NULL,
    role      text NOT NULL CHECK (role IN ('admin', 'member')),
    -- The sample user's bearer token for the HTTP service (chapter 07). Published in the
    -- README: these are demonstration credentials. A real service stores only a hash.
    api_token text NOT NULL UNIQUE
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
