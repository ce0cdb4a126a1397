"""The job queue on a dedicated broker (chapter 13): jobs in a NATS JetStream stream, results
in PostgreSQL fenced per delivery. Production-shaped: never imports `cachequeue.course`.

    streams    one schema's stream, subjects and durable pull consumer (`names`, `ensure`)
    publish    `submit` (async) and `Publisher` (sync; outbox relay) with Nats-Msg-Id dedupe
    fence      the delivery register and the fenced result write (SQL in sql/broker.sql)
    worker     `BrokerWorker`: ack_wait lease, in_progress heartbeat, max_deliver cap,
               nak(delay) backoff, dead letters; `cachequeue worker --broker nats` runs it
"""

from .fence import Delivery
from .publish import Publisher, Submitted, submit
from .streams import Names, names
from .worker import BrokerContext, BrokerWorker

__all__ = ["BrokerContext", "BrokerWorker", "Delivery", "Names", "Publisher", "Submitted",
           "names", "submit"]
