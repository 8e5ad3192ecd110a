"""Traces: one per caller turn, a span per stage (docs/operators.md "Traces"), W3C trace context in
and out.

The orchestrator marks stage boundaries through the module functions here (:func:`turn`,
:func:`span`, :func:`backdated` happen inside :func:`turn`, :func:`traceparent`), which delegate
to the installed :class:`Tracer`, the port. Two adapters exist:

* :class:`NullTracer` (the default): records nothing and costs a function call per boundary;
  :func:`traceparent` passes the client's own ``traceparent`` through unchanged, so an MCP
  server still joins the client's trace.
* :class:`OtelTracer`: the OpenTelemetry SDK. :func:`otel_from_endpoint` builds one that
  exports over OTLP/HTTP when ``VOCERO_OTLP_ENDPOINT`` is set; tests hand it an in-memory
  exporter.

Like OpenTelemetry's own global provider, the tracer is one per process: the composition root
(:mod:`vocero.app.runtime`) installs it with :func:`installed` for as long as the server runs.

Where a turn's spans come from:

``vocero.turn``        the whole turn, from the first captured audio (audio turns) or the frame
                       (text turns) until its answer was played; child of the client envelope's
                       ``traceparent`` when the frame that closed the turn carried one
``vocero.capture``     the caller's speech, first frame of the utterance to its end of speech
``vocero.endpointing`` the trailing silence the endpointer waited through before the turn
``vocero.relay``       the relay accepting the frame that closed the turn, to the turn starting
``vocero.stt``         the final transcription
``vocero.llm``         one model request, until its last output (or its tool intent)
``vocero.policy``      the gate deciding on a tool intent (decision, reason code)
``vocero.mcp``         running an authorized tool operation (the MCP call, or a built-in tool)
``vocero.tts``         synthesizing and sending one spoken unit
``vocero.playout``     first audio sent, until the client reported the answer played

Attributes are redacted by the log rules (:func:`vocero.observability.redaction.redact`), and
only ids, counts, names and reason codes are ever set: never transcripts, arguments or audio.
An exception ends its span with an error status naming the exception's type only (its message
may quote a value); a cancellation (barge-in, close) is ``vocero.outcome=cancelled``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from vocero.observability.redaction import REDACTED, redact

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

AttrValue = str | int | float | bool

TURN, CAPTURE, ENDPOINTING, RELAY = (
    "vocero.turn", "vocero.capture", "vocero.endpointing", "vocero.relay",
)
STT, LLM, POLICY, MCP = "vocero.stt", "vocero.llm", "vocero.policy", "vocero.mcp"
TTS, PLAYOUT = "vocero.tts", "vocero.playout"
STAGES = (CAPTURE, RELAY, ENDPOINTING, STT, LLM, POLICY, MCP, TTS, PLAYOUT)
"""Every stage span a tool-assisted audio turn has below its ``vocero.turn``."""
EXPORT_QUEUE = 2048
"""Finished spans waiting for the OTLP exporter; past it the oldest are dropped, never waited
for (the realtime path must not block on a collector)."""

_INBOUND: ContextVar[tuple[str, int]] = ContextVar("vocero_inbound", default=("", 0))
"""The ``traceparent`` of the last client frame this task accepted, and when (epoch ns)."""


class Timed(Protocol):
    """What a turn's audio tells about its timing (an utterance)."""

    @property
    def duration_ms(self) -> float: ...

    @property
    def pause_ms(self) -> float: ...


class Span(Protocol):
    def set(self, **attributes: AttrValue) -> None:
        """Add attributes (redacted by the log rules)."""
        ...


class Tracer(Protocol):
    """The port the stage functions of this module delegate to."""

    def span(
        self, name: str, start_ns: int | None, attributes: Mapping[str, AttrValue]
    ) -> AbstractContextManager[Span]: ...

    def turn(
        self, parent: str, start_ns: int, attributes: Mapping[str, AttrValue]
    ) -> AbstractContextManager[Span]: ...

    def backdated(
        self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, AttrValue]
    ) -> None: ...

    def traceparent(self) -> str: ...

    def shutdown(self) -> None: ...


# ------------------------------------------------------------------------------ stage functions


def inbound(traceparent: str) -> None:
    """The relay accepted a client frame (its envelope's ``traceparent``, possibly empty).
    A turn this frame closes is a child of it; tasks started from here on inherit it."""
    _INBOUND.set((traceparent, time.time_ns()))


@asynccontextmanager
async def turn(session_id: str, source: str, speech: Timed | None = None) -> AsyncIterator[Span]:
    """One caller turn: the span every stage of it sits in. For an audio turn, ``speech`` is
    its utterance: the turn starts when its audio did, with ``vocero.capture`` and
    ``vocero.endpointing`` recorded for the speech and the trailing silence."""
    tracer = _tracer
    if tracer is _NULL:  # the common case costs nothing more than this
        yield _NULL_SPAN
        return
    parent, received_ns = _INBOUND.get()
    now = time.time_ns()
    audio_ns = int(speech.duration_ms * 1e6) if speech is not None else 0
    pause_ns = int(speech.pause_ms * 1e6) if speech is not None else 0
    attributes = {"vocero.session_id": session_id, "vocero.turn.source": source}
    with tracer.turn(parent, now - audio_ns, attributes) as root:
        if speech is not None:
            spoken_ms = round(speech.duration_ms - speech.pause_ms)
            tracer.backdated(CAPTURE, now - audio_ns, now - pause_ns, {"audio_ms": spoken_ms})
            tracer.backdated(ENDPOINTING, now - pause_ns, now,
                             {"pause_ms": round(speech.pause_ms)})
        if received_ns:
            tracer.backdated(RELAY, min(received_ns, now), now, {})
        yield root


def span(
    name: str, *, start_ns: int | None = None, **attributes: AttrValue
) -> AbstractContextManager[Span]:
    """A stage of the current turn, as long as the block runs."""
    tracer = _tracer
    if tracer is _NULL:
        return _NULL_CONTEXT
    return tracer.span(name, start_ns, attributes)


def traceparent() -> str:
    """The W3C ``traceparent`` of the current span (the client's own when tracing is off), or
    ``""``: what travels to MCP servers in ``_meta`` (docs/mcp.md "A call")."""
    return _tracer.traceparent()


def committed(turn_id: str) -> str:
    """The current turn was committed as ``turn_id``; its ``traceparent``."""
    tracer = _tracer
    if tracer is not _NULL:
        _current_span_set("vocero.turn_id", turn_id)
    return tracer.traceparent()


def now_ns() -> int:
    """Epoch nanoseconds, the clock spans are stamped with."""
    return time.time_ns()


@contextmanager
def installed(tracer: Tracer) -> Iterator[Tracer]:
    """Install ``tracer`` for the block (the previous one comes back after); shut it down."""
    global _tracer
    previous, _tracer = _tracer, tracer
    try:
        yield tracer
    finally:
        _tracer = previous
        tracer.shutdown()


def current() -> Tracer:
    return _tracer


# ----------------------------------------------------------------------------------- adapters


class _NullSpan:
    __slots__ = ()

    def set(self, **attributes: AttrValue) -> None:
        return None


class _NullContext:
    __slots__ = ()

    def __enter__(self) -> Span:
        return _NULL_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NULL_SPAN = _NullSpan()
_NULL_CONTEXT = _NullContext()


class NullTracer:
    """No spans; the client's ``traceparent`` passes through to MCP servers unchanged."""

    def span(
        self, name: str, start_ns: int | None, attributes: Mapping[str, AttrValue]
    ) -> AbstractContextManager[Span]:
        return _NULL_CONTEXT

    def turn(
        self, parent: str, start_ns: int, attributes: Mapping[str, AttrValue]
    ) -> AbstractContextManager[Span]:
        return _NULL_CONTEXT

    def backdated(
        self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, AttrValue]
    ) -> None:
        return None

    def traceparent(self) -> str:
        return _INBOUND.get()[0]

    def shutdown(self) -> None:
        return None


_NULL = NullTracer()
_tracer: Tracer = _NULL


class _OtelSpan:
    __slots__ = ("_span",)

    def __init__(self, span: Any) -> None:
        self._span = span

    def set(self, **attributes: AttrValue) -> None:
        self._span.set_attributes(_clean(attributes))


class OtelTracer:
    """The OpenTelemetry SDK behind the port. ``provider`` owns the exporters."""

    def __init__(self, provider: TracerProvider) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        self._tracer = provider.get_tracer("vocero")
        self._trace = trace
        self._propagator = TraceContextTextMapPropagator()

    @contextmanager
    def span(
        self, name: str, start_ns: int | None, attributes: Mapping[str, AttrValue]
    ) -> Iterator[Span]:
        with self._tracer.start_as_current_span(
            name, start_time=start_ns, attributes=_clean(attributes), record_exception=False,
            set_status_on_exception=False,
        ) as otel_span, _outcome(otel_span):
            yield _OtelSpan(otel_span)

    @contextmanager
    def turn(
        self, parent: str, start_ns: int, attributes: Mapping[str, AttrValue]
    ) -> Iterator[Span]:
        # Child of the client's span when its frame carried a valid traceparent, else a root.
        context = self._propagator.extract({"traceparent": parent} if parent else {})
        with self._tracer.start_as_current_span(
            TURN, context=context, start_time=start_ns, attributes=_clean(attributes),
            record_exception=False, set_status_on_exception=False,
        ) as otel_span, _outcome(otel_span):
            yield _OtelSpan(otel_span)

    def backdated(
        self, name: str, start_ns: int, end_ns: int, attributes: Mapping[str, AttrValue]
    ) -> None:
        otel_span = self._tracer.start_span(name, start_time=start_ns,
                                            attributes=_clean(attributes))
        otel_span.end(end_time=max(start_ns, end_ns))

    def traceparent(self) -> str:
        context = self._trace.get_current_span().get_span_context()
        if not context.is_valid:
            return _INBOUND.get()[0]
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"

    def shutdown(self) -> None:
        self.provider.shutdown()


def otel_tracer(*exporters: SpanExporter, batch: bool = True) -> OtelTracer:
    """An SDK tracer exporting to ``exporters`` (batched off the event loop, or one by one when
    ``batch`` is false: tests read an in-memory exporter right after the turn)."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "vocero"}))
    for exporter in exporters:
        processor = (BatchSpanProcessor(exporter, max_queue_size=EXPORT_QUEUE) if batch
                     else SimpleSpanProcessor(exporter))
        provider.add_span_processor(processor)
    return OtelTracer(provider)


def otel_from_endpoint(endpoint: str) -> Tracer:
    """OTLP/HTTP export to ``endpoint`` (``http://collector:4318``; ``/v1/traces`` is added
    unless the URL names a path); the :class:`NullTracer` when it is empty."""
    if not endpoint:
        return _NULL
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = endpoint if endpoint.rstrip("/").endswith("/v1/traces") else (
        endpoint.rstrip("/") + "/v1/traces"
    )
    return otel_tracer(OTLPSpanExporter(endpoint=url))


# ------------------------------------------------------------------------------------ helpers


@contextmanager
def _outcome(otel_span: Any) -> Iterator[None]:
    from opentelemetry.trace import Status, StatusCode

    try:
        yield
    except BaseException as exc:
        if _cancelled(exc):
            otel_span.set_attribute("vocero.outcome", "cancelled")
        else:
            otel_span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise


def _cancelled(exc: BaseException) -> bool:
    try:
        return isinstance(exc, anyio.get_cancelled_exc_class())
    except Exception:  # no event loop: nothing can have been cancelled
        return False


def _current_span_set(key: str, value: AttrValue) -> None:
    from opentelemetry import trace

    trace.get_current_span().set_attribute(key, value)


def _clean(attributes: Mapping[str, AttrValue]) -> dict[str, AttrValue]:
    """Redacted by the log rules (by key); only plain values; ``vocero.`` names."""
    clean: dict[str, AttrValue] = {}
    for key, value in redact(dict(attributes)).items():
        name = key if "." in key else f"vocero.{key}"
        if isinstance(value, str | int | float | bool):
            clean[name] = value
        else:
            clean[name] = REDACTED
    return clean


if TYPE_CHECKING:
    _null: Tracer = NullTracer()
    _otel: type[Tracer] = OtelTracer
