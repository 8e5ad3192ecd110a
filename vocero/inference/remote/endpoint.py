"""One OpenAI-compatible endpoint: its URL, model, key and the health the runners report.

The key is a :class:`~vocero.contracts.secrets.Secret`: it leaves only in the ``Authorization``
header, never in a log event, a status detail or an error message. Health follows the requests:
a transport failure or a 5xx marks the endpoint ``degraded`` (``/readyz`` names it; the session
gets the stage's ``*_UNAVAILABLE`` error and the orchestrator's DEGRADED path), the next success
marks it ``ready`` again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx
import structlog

from vocero.contracts.errors import ErrorCode, VoceroError
from vocero.contracts.ports import Health, RunnerStatus
from vocero.contracts.secrets import NO_SECRET, Secret

log = structlog.get_logger(__name__)


class EndpointError(VoceroError):
    """A serving engine failed a request: ``status`` is its HTTP status (0: no answer)."""

    def __init__(self, stage: str, status: int, reason: str, *, code: ErrorCode) -> None:
        super().__init__(f"{stage} endpoint: {reason}", code=code)
        self.stage = stage
        self.status = status


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    """The base URL, with or without ``/v1`` (``http://gb10:8000/v1``)."""
    model: str
    api_key: Secret = field(default=NO_SECRET, repr=False)
    timeout_s: float = 10.0
    """Connect and per-read timeout: a silent endpoint fails the turn, never hangs it."""
    max_connections: int = 32

    def base(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/v1") else url + "/v1"

    def client(self) -> httpx.AsyncClient:
        headers = {}
        if self.api_key.reveal():
            headers["Authorization"] = "Bearer " + self.api_key.reveal()
        return httpx.AsyncClient(
            base_url=self.base(),
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=self.max_connections),
        )


class EndpointHealth:
    """What ``status()`` says about one stage's endpoint, from its last requests."""

    def __init__(self, stage: str, endpoint: Endpoint, code: ErrorCode) -> None:
        self.stage = stage
        self.endpoint = endpoint
        self.code = code
        self.health: Health = "starting"
        self.detail = ""
        self.in_flight = 0
        self.errors: dict[str, int] = {}
        """Failed requests by HTTP status (``0``: no answer), for metrics and ``/readyz``."""
        self.first_token_ms: list[float] = []

    def status(self) -> RunnerStatus:
        detail = f"{self.endpoint.base()} model={self.endpoint.model}"
        if self.detail:
            detail += f": {self.detail}"
        return RunnerStatus(
            health=self.health, in_flight=self.in_flight,
            capacity=self.endpoint.max_connections, detail=detail,
        )

    def ok(self) -> None:
        if self.health != "ready":
            log.info("endpoint.recovered", stage=self.stage)
        self.health, self.detail = "ready", ""

    def failed(self, status: int, reason: str) -> EndpointError:
        self.errors[str(status)] = self.errors.get(str(status), 0) + 1
        if self.health != "starting":
            self.health = "degraded"
        self.detail = reason
        log.warning("endpoint.request_failed", stage=self.stage, status=status, reason=reason)
        return EndpointError(self.stage, status, reason, code=self.code)

    def from_exception(self, exc: Exception) -> EndpointError:
        if isinstance(exc, httpx.HTTPStatusError):
            return self.failed(exc.response.status_code, f"HTTP {exc.response.status_code}")
        if isinstance(exc, httpx.TimeoutException):
            return self.failed(0, "timed out")
        return self.failed(0, type(exc).__name__)


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0
