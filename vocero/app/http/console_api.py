"""Operator routes the console needs beyond the operator API (docs/operators.md "Routes the console
adds"), and the console itself at ``/operator``.

Same bearer token and roles as every ``/v1`` route (:mod:`vocero.app.http.operator_api`): reading
needs ``admin``, ``security`` or ``business_owner`` (``legal`` too for voices). Lists are
``{"items": [...]}``; a bad query answers 400 with ``{"error": {"code", "field", "reason"}}``.

* ``GET /v1/sessions`` (``?live=true``, ``&limit=``, default 50): the newest sessions, live
  ones with their state now, each with its effective configuration.
* ``GET /v1/proposals?session_id=``: the session's proposals, every revision with its
  read-back, expiry, whether it was ``asked`` (read back to the caller) and confirmations.
* ``GET /v1/latency``: per stage, the count and the p50/p90/p95/p99 estimated from the
  Prometheus histogram of this process (as PromQL's ``histogram_quantile`` does), and the
  buckets; tool latency per tool and outcome.
* ``GET /v1/denials``: denials by reason code, counted from the audit log (every process,
  since the beginning of the chain) and from this process's counter.
* ``GET /v1/voices`` (``?status=``): the voices and their versions, never reference audio.
* ``GET /v1/retention``: the retention policy in force, per data class.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from prometheus_client import Histogram
from sqlalchemy import select
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from vocero.app.http.bodies import rejected
from vocero.app.http.operator_api import READERS, guarded, hidden_session, json, problem
from vocero.app.http.operators import Operator
from vocero.app.http.queries import integer
from vocero.app.http.voice_api import READERS as VOICE_READERS
from vocero.app.runtime import Runtime
from vocero.observability.metrics import LATENCY_STAGES
from vocero.policy.evidence import READBACK_STEP
from vocero.store.models import (
    AuditEventRow,
    ConfirmationRow,
    EvidenceStepRow,
    ProposalRevisionRow,
    ProposalRow,
    SessionRow,
    VoiceProfileRow,
)
from vocero.store.retention import CLASSES, load_policy
from vocero.web import CONSOLE

QUANTILES = (0.5, 0.9, 0.95, 0.99)
SESSIONS_PAGE, SESSIONS_MAX = 50, 500
DENIAL_KINDS = (
    "action.denied", "mcp.tool_denied", "session.auth_denied", "session.profile_denied",
    "session.voice_denied", "auth.denied", "confirmation.not_bound",
)
"""Audit events that record a refusal with a ``reason_code`` (or ``reason``)."""
DENIALS_SCANNED = 20_000
"""The newest denial events counted (a bound on the scan, not on the chain)."""


async def list_sessions(request: Request, runtime: Runtime, operator: Operator) -> Response:
    limit = integer(request, "limit", default=SESSIONS_PAGE, low=1, high=SESSIONS_MAX)
    live_only = request.query_params.get("live", "") in ("1", "true")
    await runtime.recorder.flush()
    query = operator.scope.restrict(select(SessionRow), SessionRow.tenant_id)
    query = query.order_by(SessionRow.created_at.desc()).limit(limit)
    if live_only:
        query = query.where(SessionRow.id.in_(list(runtime.live)))
    async with runtime.store.read() as session:
        rows = (await session.scalars(query)).all()
    items = []
    for row in rows:
        live = runtime.live.get(row.id)
        items.append({
            "session_id": row.id,
            "live": live is not None,
            "state": live.state_name if live is not None else row.state,
            "identity": {"subject_ref": row.subject_ref, "tenant_id": row.tenant_id},
            "profile": {"id": row.profile_id, "version": row.profile_version},
            "effective": live.ctx.effective if live is not None else row.effective,
            "created_at": row.created_at,
            "closed_at": row.closed_at,
            "channel": row.channel or "web",
            **({"call_sid": row.call_sid} if row.call_sid else {}),
            **({"followup_id": row.followup_id} if row.followup_id else {}),
        })
    return json({"items": items})


async def list_proposals(request: Request, runtime: Runtime, operator: Operator) -> Response:
    session_id = request.query_params.get("session_id", "").strip()
    if not session_id:
        return rejected("invalid_query", "session_id", "required")
    if await hidden_session(request, runtime, operator):
        return problem(404, "session_not_found")
    async with runtime.store.read() as session:
        proposals = (await session.scalars(
            select(ProposalRow).where(ProposalRow.session_id == session_id)
            .order_by(ProposalRow.created_at)
        )).all()
        ids = [p.id for p in proposals]
        revisions = (await session.scalars(
            select(ProposalRevisionRow).where(ProposalRevisionRow.proposal_id.in_(ids))
            .order_by(ProposalRevisionRow.revision)
        )).all()
        confirmations = (await session.scalars(
            select(ConfirmationRow).where(ConfirmationRow.proposal_id.in_(ids))
            .order_by(ConfirmationRow.created_at)
        )).all()
        read_back = {(proposal_id, step) for proposal_id, step in (await session.execute(
            select(EvidenceStepRow.proposal_id, EvidenceStepRow.step)
            .where(EvidenceStepRow.proposal_id.in_(ids))
        )).all()}
    items = [
        {
            "proposal_id": p.id, "tool": p.tool, "action_class": p.action_class,
            "status": p.status, "current_revision": p.current_revision, "turn_id": p.turn_id,
            "created_at": p.created_at,
            "revisions": [
                {"revision": r.revision, "summary": r.summary, "expires_at": r.expires_at,
                 "invalidated_at": r.invalidated_at, "arguments_hash": r.arguments_hash,
                 "asked": (p.id, f"{READBACK_STEP}@r{r.revision}") in read_back,
                 "confirmations": [
                     {"status": c.status, "decision": c.decision, "turn_id": c.turn_id,
                      "created_at": c.created_at, "used_at": c.used_at}
                     for c in confirmations
                     if (c.proposal_id, c.revision) == (p.id, r.revision)
                 ]}
                for r in revisions if r.proposal_id == p.id
            ],
        }
        for p in proposals
    ]
    return json({"items": items})


async def latency(request: Request, runtime: Runtime, _: Operator) -> Response:
    metrics = runtime.metrics
    stages = [_histogram_view(metrics.latency[stage], {"stage": stage})
              for stage in LATENCY_STAGES]
    return json({"items": [s for s in stages if s is not None],
                 "tools": _labelled(metrics.tool_latency_ms, ("tool", "outcome"))})


async def denials(request: Request, runtime: Runtime, operator: Operator) -> Response:
    """Of an operator of some tenants: only its tenants' sessions' denials, and no process
    counter (it counts every tenant's)."""
    query = select(AuditEventRow.kind, AuditEventRow.data).where(
        AuditEventRow.kind.in_(DENIAL_KINDS))
    query = operator.scope.restrict_by_session(query, AuditEventRow.session_id)
    async with runtime.store.read() as session:
        rows = (await session.execute(
            query.order_by(AuditEventRow.seq.desc()).limit(DENIALS_SCANNED)
        )).all()
    recorded: Counter[tuple[str, str]] = Counter()
    for kind, data in rows:
        reason = data.get("reason_code") or data.get("reason") or "unspecified"
        recorded[(str(reason), kind)] += 1
    process: dict[str, float] = {}
    for family in runtime.metrics.denials_total.collect() if operator.scope.everywhere else []:
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.value:
                process[sample.labels.get("reason_code", "")] = sample.value
    by_reason: Counter[str] = Counter()
    for (reason, _kind), count in recorded.items():
        by_reason[reason] += count
    items = [
        {"reason_code": reason, "recorded": count,
         "kinds": sorted(k for (r, k) in recorded if r == reason),
         "this_process": int(process.get(reason, 0))}
        for reason, count in by_reason.most_common()
    ]
    items += [{"reason_code": r, "recorded": 0, "kinds": [], "this_process": int(v)}
              for r, v in sorted(process.items()) if r not in by_reason]
    return json({"items": items})


async def list_voices(request: Request, runtime: Runtime, operator: Operator) -> Response:
    if runtime.vault is None:
        return json({"items": []})
    status = request.query_params.get("status") or None
    async with runtime.store.read() as session:
        ids = (await session.scalars(operator.scope.restrict(
            select(VoiceProfileRow.voice_id), VoiceProfileRow.tenant
        ).order_by(VoiceProfileRow.created_at))).all()
    voices = [v for v in [await runtime.vault.get(voice_id) for voice_id in ids] if v]
    if status is not None:
        voices = [v for v in voices if any(x.status == status for x in v.versions)]
    return json({"items": voices})


async def retention(request: Request, runtime: Runtime, _: Operator) -> Response:
    policy = load_policy(runtime.settings.retention)
    return json({"items": [
        {"data_class": name, "period": policy.period(name), "stored": info.stored}
        for name, info in CLASSES.items()
    ]})


def _histogram_view(histogram: Histogram, labels: dict[str, str]) -> dict[str, Any] | None:
    for family in histogram.collect():
        return _from_samples(family.samples, labels)
    return None


def _labelled(histogram: Histogram, names: tuple[str, ...]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, ...], list[Any]] = {}
    for family in histogram.collect():
        for sample in family.samples:
            key = tuple(sample.labels.get(n, "") for n in names)
            groups.setdefault(key, []).append(sample)
    views = [_from_samples(samples, dict(zip(names, key, strict=True)))
             for key, samples in sorted(groups.items())]
    return [v for v in views if v["count"]]


def _from_samples(samples: list[Any], labels: dict[str, str]) -> dict[str, Any]:
    cumulative: list[tuple[float, float]] = []
    count = total = 0.0
    for sample in samples:
        if sample.name.endswith("_bucket"):
            cumulative.append((float(sample.labels["le"]), sample.value))
        elif sample.name.endswith("_count"):
            count = sample.value
        elif sample.name.endswith("_sum"):
            total = sample.value
    cumulative.sort()
    buckets, previous = [], 0.0
    for bound, running in cumulative:
        buckets.append({"le": bound if bound != float("inf") else None,
                        "count": int(running - previous)})
        previous = running
    view: dict[str, Any] = {**labels, "count": int(count), "sum_ms": round(total, 3)}
    for q in QUANTILES:
        view[f"p{round(q * 100)}"] = quantile(q, cumulative, count)
    view["buckets"] = buckets
    return view


def quantile(q: float, cumulative: list[tuple[float, float]], count: float) -> float | None:
    """PromQL's ``histogram_quantile``: linear within the bucket the rank falls in; the highest
    finite bound when it falls in ``+Inf``; ``None`` without observations."""
    if count <= 0:
        return None
    rank = q * count
    lower, below = 0.0, 0.0
    for bound, running in cumulative:
        if running >= rank:
            if bound == float("inf"):
                return lower
            inside = running - below
            fraction = (rank - below) / inside if inside else 0.0
            return round(lower + (bound - lower) * fraction, 3)
        lower, below = bound, running
    return lower


async def console(request: Request) -> Response:
    return FileResponse(CONSOLE / "index.html")


async def to_console(request: Request) -> Response:
    return RedirectResponse("/operator/")


def routes() -> list[Route | Mount]:
    return [
        Route("/v1/sessions", guarded(READERS, list_sessions), methods=["GET"]),
        Route("/v1/proposals", guarded(READERS, list_proposals), methods=["GET"]),
        Route("/v1/latency", guarded(READERS, latency), methods=["GET"]),
        Route("/v1/denials", guarded(READERS, denials), methods=["GET"]),
        Route("/v1/voices", guarded(VOICE_READERS, list_voices), methods=["GET"]),
        Route("/v1/retention", guarded(READERS, retention), methods=["GET"]),
        Route("/operator", to_console),
        Route("/operator/", console),
        Mount("/operator", StaticFiles(directory=CONSOLE), name="operator"),
    ]
