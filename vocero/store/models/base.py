"""Declarative base, naming convention and the portable column types every table uses."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, DateTime, Dialect, Integer, MetaData
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator, TypeEngine

NAMING_CONVENTION: dict[str, str] = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
"""Deterministic constraint names, so migrations name the same thing on every dialect."""

ID = 64
"""Length of every opaque identifier column (``ses_…``, ``op_…``, sha256 hex digests)."""
NAME = 128
"""Length of tenant ids, tool and server names, actors and other short names."""

AutoIncrement: TypeEngine[int] = BigInteger().with_variant(Integer(), "sqlite")
"""A 64-bit surrogate key; SQLite needs ``INTEGER`` exactly for a rowid alias."""


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UtcDateTime(TypeDecorator[datetime]):
    """``DateTime(timezone=True)`` that only accepts aware values and always returns UTC.

    SQLite keeps no offset, so values are normalised to UTC before they are stored and read back
    as UTC; PostgreSQL stores ``timestamptz``. Naive datetimes are refused rather than guessed.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime from the driver, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def one_of(column: str, values: Iterable[str], *, name: str | None = None) -> CheckConstraint:
    """A named CHECK constraint restricting ``column`` to ``values``."""
    allowed = ", ".join(f"'{value}'" for value in values)
    return CheckConstraint(f"{column} IN ({allowed})", name=name or column)


def utcnow() -> datetime:
    return datetime.now(UTC)
