"""cachequeue: the shared library of the course on caching, job queues and background work."""

__version__ = "0.1.0"
