"""One OpenAI-compatible endpoint: its URL, model, key and the health the runners report.

The key is a :class:`~vocero.contracts.secrets.Secret`: it leaves only in the ``Authorization``
header, never in a log event, a status detail or an error message. Health follows the requests:
a transport failure or a 5xx marks the endpoint ``degraded`` (``/readyz`` names it; the session
gets the stage's ``*_UNAVAILABLE`` error and the orchestrator's DEGRADED path), the next success
marks it ``ready`` again.

Each endpoint has a circuit breaker (``contracts/breaker.py``, the one the MCP gateway keeps per
server) in its HTTP transport: after ``breaker_threshold`` failures in a row no request goes out
for ``breaker_reset_s``, so a dead engine costs a turn nothing but the error, not a connect or
read timeout each; then one probe request may pass, and its answer closes or re-opens it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import httpx
import structlog

from vocero.contracts.breaker import BreakerState, CircuitBreaker
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
    """Connect and per-read timeout (``--llm-timeout`` and its twins): a silent endpoint fails
    the turn, never hangs it."""
    max_connections: int = 32
    breaker_threshold: int = 3
    """Failures in a row that open the endpoint's circuit breaker."""
    breaker_reset_s: float = 5.0
    """How long an open breaker refuses before it lets one probe through."""

    def base(self) -> str:
        url = self.url.rstrip("/")
        return url if url.endswith("/v1") else url + "/v1"

    def headers(self) -> dict[str, str]:
        if self.api_key.reveal():
            return {"Authorization": "Bearer " + self.api_key.reveal()}
        return {}

    def client(self, breaker: CircuitBreaker | None = None) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=self.max_connections)
        transport: httpx.AsyncBaseTransport = httpx.AsyncHTTPTransport(limits=limits)
        if breaker is not None:
            transport = BreakerTransport(transport, breaker)
        return httpx.AsyncClient(
            base_url=self.base(), headers=self.headers(), timeout=httpx.Timeout(self.timeout_s),
            transport=transport,
        )


class CircuitOpenError(httpx.TransportError):
    """The endpoint's breaker is open: the request was never sent."""


class BreakerTransport(httpx.AsyncBaseTransport):
    """An HTTP transport that asks the breaker before each request and tells it the outcome:
    an answer below 500 is a success; no answer, a 5xx, or a body that breaks off mid-stream is
    a failure. A request cancelled by the caller (barge-in) is neither."""

    def __init__(self, inner: httpx.AsyncBaseTransport, breaker: CircuitBreaker) -> None:
        self._inner = inner
        self._breaker = breaker

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not self._breaker.allow():
            raise CircuitOpenError("circuit open", request=request)
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.TransportError:
            self._breaker.record_failure()
            raise
        except BaseException:
            self._breaker.release_probe()
            raise
        if response.status_code >= 500:
            self._breaker.record_failure()
            return response
        self._breaker.record_success()
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _Watched(stream, self._breaker)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Watched(httpx.AsyncByteStream):
    """A response body whose transport failure half-way counts against the breaker."""

    def __init__(self, inner: httpx.AsyncByteStream, breaker: CircuitBreaker) -> None:
        self._inner = inner
        self._breaker = breaker

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx.TransportError:
            self._breaker.record_failure()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


class EndpointHealth:
    """What ``status()`` says about one stage's endpoint, from its last requests."""

    def __init__(
        self, stage: str, endpoint: Endpoint, code: ErrorCode,
        *, monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stage = stage
        self.endpoint = endpoint
        self.code = code
        self.health: Health = "starting"
        self.detail = ""
        self.in_flight = 0
        self.errors: dict[str, int] = {}
        """Failed requests by HTTP status (``0``: no answer; ``open``: refused by the breaker),
        for metrics and ``/readyz``."""
        self.first_token_ms: list[float] = []
        """Time to the first streamed event (LLM: token; TTS: audio), the last 256 requests."""
        self.tokens_per_s: list[float] = []
        """LLM: streamed content events per second after the first, the last 256 replies."""
        self.breaker = CircuitBreaker(
            threshold=endpoint.breaker_threshold, reset_s=endpoint.breaker_reset_s,
            monotonic=monotonic, on_change=self._breaker_changed,
        )

    def client(self) -> httpx.AsyncClient:
        """A client whose requests pass this endpoint's breaker."""
        return self.endpoint.client(self.breaker)

    def first_event(self, start: float) -> None:
        _keep(self.first_token_ms, ms_since(start))

    def streamed(self, events: int, first: float) -> None:
        """``events`` content events arrived, the first at ``first`` (``perf_counter``)."""
        seconds = time.perf_counter() - first
        if events > 1 and seconds > 0:
            _keep(self.tokens_per_s, (events - 1) / seconds)

    def _breaker_changed(self, before: BreakerState, after: BreakerState) -> None:
        log.warning("endpoint.breaker", stage=self.stage, before=before, after=after)

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
        if isinstance(exc, CircuitOpenError):
            self.errors["open"] = self.errors.get("open", 0) + 1
            self.health, self.detail = "degraded", "circuit open after repeated failures"
            return EndpointError(self.stage, 0, self.detail, code=self.code)
        if isinstance(exc, httpx.HTTPStatusError):
            return self.failed(exc.response.status_code, f"HTTP {exc.response.status_code}")
        if isinstance(exc, httpx.TimeoutException):
            return self.failed(0, "timed out")
        return self.failed(0, type(exc).__name__)


class EndpointRunner:
    """What a stage's runner on an endpoint holds: its name, health and one pooled client whose
    requests pass the endpoint's breaker."""

    def __init__(self, stage: str, endpoint: Endpoint, code: ErrorCode) -> None:
        self.name = f"{stage}.remote"
        self.endpoint = endpoint
        self.health = EndpointHealth(stage, endpoint, code)
        self._client: httpx.AsyncClient | None = None

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = self.health.client()
        return self._client

    def status(self) -> RunnerStatus:
        return self.health.status()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _keep(values: list[float], value: float) -> None:
    values.append(value)
    del values[:-256]
