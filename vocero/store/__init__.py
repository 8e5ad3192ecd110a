"""Durable store: SQLAlchemy models, migrations, the hash-chained audit log.

The plane's public surface: :class:`Store` (engine and sessions), :mod:`~vocero.store.migrate`
(Alembic from code), :class:`AuditLog` and :class:`Conversations`. Tables live in
:mod:`vocero.store.models`; other planes add their own queries against them.
"""

from vocero.store.audit import AuditLog
from vocero.store.engine import Store, create_engine, session_factory
from vocero.store.migrate import MigrationsNotFoundError, downgrade, upgrade, upgrade_async
from vocero.store.records import (
    AuditRecord,
    ChainVerification,
    GenerationRecord,
    HistoryEntry,
    SessionRecord,
    TurnRecord,
)
from vocero.store.repositories import Conversations, SessionNotFoundError

__all__ = [
    "AuditLog",
    "AuditRecord",
    "ChainVerification",
    "Conversations",
    "GenerationRecord",
    "HistoryEntry",
    "MigrationsNotFoundError",
    "SessionNotFoundError",
    "SessionRecord",
    "Store",
    "TurnRecord",
    "create_engine",
    "downgrade",
    "session_factory",
    "upgrade",
    "upgrade_async",
]
