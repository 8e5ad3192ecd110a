"""Which tenants' rows an operator reads (SPEC §11 "Operators", docs/operators.md "Tenancy").

One value, :class:`OperatorScope`, goes into every query the operator API makes: a repository
narrows its own ``WHERE`` with :meth:`OperatorScope.restrict` (a table with a tenant column) or
:meth:`OperatorScope.restrict_by_session` (a table that reaches its tenant through its session,
such as the audit log), so pages hold only the operator's tenants' rows and the keyset cursor
still walks them in order. A row without a session (an audit event such as an authentication
denial) belongs to no tenant: only an operator of every tenant sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Select, select
from sqlalchemy.orm import InstrumentedAttribute

from vocero.store.models import SessionRow

S = TypeVar("S", bound="Select[Any]")


@dataclass(frozen=True, slots=True)
class OperatorScope:
    """``tenants`` an operator may see; ``None``: every tenant (``platform_admin``, the
    ``--operator-token`` admin, an operators-file entry without ``tenants``)."""

    tenants: frozenset[str] | None = None

    @classmethod
    def of(cls, tenants: frozenset[str] | set[str] | tuple[str, ...] | list[str]) -> OperatorScope:
        return cls(frozenset(tenants))

    @property
    def everywhere(self) -> bool:
        return self.tenants is None

    def allows(self, tenant: str | None) -> bool:
        """Whether a row of ``tenant`` (``None``: of no tenant) is visible."""
        if self.tenants is None:
            return True
        return tenant is not None and tenant in self.tenants

    def restrict(self, query: S, column: InstrumentedAttribute[str]) -> S:
        """``query`` narrowed to rows whose ``column`` (a tenant id) is one of the tenants."""
        if self.tenants is None:
            return query
        return query.where(column.in_(sorted(self.tenants)))

    def restrict_by_session(self, query: S, column: InstrumentedAttribute[Any]) -> S:
        """``query`` narrowed to rows whose ``column`` (a session id) names a session of one of
        the tenants; a row without a session is left out."""
        if self.tenants is None:
            return query
        sessions = select(SessionRow.id).where(SessionRow.tenant_id.in_(sorted(self.tenants)))
        return query.where(column.in_(sessions))


EVERY_TENANT = OperatorScope()
