"""Errors the course library raises; each docstring is the situation it names."""

__all__ = [
    "CacheQueueError",
    "ConfigurationError",
    "DatabaseUnavailable",
    "ForeignClaim",
    "InvalidJob",
    "LeaseLost",
    "NatsUnavailable",
    "PayloadTooLarge",
    "RedisUnavailable",
    "UnknownKind",
]


class CacheQueueError(Exception):
    """Base class for every error this library raises on purpose."""


class ConfigurationError(CacheQueueError, ValueError):
    """A setting (such as DATABASE_URL) is malformed; the message says how to fix it."""


class DatabaseUnavailable(CacheQueueError):
    """PostgreSQL could not be reached; the message says where we looked and what to do."""


class RedisUnavailable(CacheQueueError):
    """Redis could not be reached or started; the message says where we looked and what to do."""


class NatsUnavailable(CacheQueueError):
    """NATS could not be reached or started; the message says where we looked and what to do."""


class InvalidJob(CacheQueueError, ValueError):
    """A job (or its result) was refused before anything was written; the message says why."""


class UnknownKind(InvalidJob):
    """The job's kind is not in the job_kinds table, so no worker would know how to run it."""


class PayloadTooLarge(InvalidJob):
    """The payload's JSON text is longer than queue.limits.MAX_PAYLOAD_BYTES; store large data elsewhere."""


class ForeignClaim(CacheQueueError, ValueError):
    """A Claim was used on a connection to another schema than the one it was claimed in."""


class LeaseLost(CacheQueueError):
    """A holder that no longer holds its job's lease tried to record progress; nothing was recorded."""
