"""Errors the course library raises; each docstring is the situation it names."""

__all__ = ["CacheQueueError", "ConfigurationError", "DatabaseUnavailable"]


class CacheQueueError(Exception):
    """Base class for every error this library raises on purpose."""


class ConfigurationError(CacheQueueError, ValueError):
    """A setting (such as DATABASE_URL) is malformed; the message says how to fix it."""


class DatabaseUnavailable(CacheQueueError):
    """PostgreSQL could not be reached; the message says where we looked and what to do."""
