"""structlog configuration: context from contextvars, level, timestamp, redaction, one renderer.

Logs are events with static names (``log.info("turn.committed", turn_id=...)``); the session and
turn ride along through contextvars (:mod:`vocero.observability.context`). Sensitive values are
redacted before rendering unless a developer explicitly passes ``allow_sensitive=True``.
Exceptions render in every format as plain tracebacks without local variables, scrubbed of
every live secret (:mod:`vocero.observability.exceptions`), whatever ``allow_sensitive`` says.
Control characters in any field are escaped, so one record is one line plus its traceback
(:mod:`vocero.observability.escaping`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Collection
from typing import Any, Literal, TextIO

import structlog
from structlog.typing import Processor

from vocero.observability.escaping import OneLine, escape_event
from vocero.observability.exceptions import plain_traceback, render_exception
from vocero.observability.redaction import redact_event, redact_target

LogFormat = Literal["console", "json"]

_HANDLER_NAME = "vocero"


class _Stderr:
    """Writes to whatever ``sys.stderr`` is at the time (test runners swap it)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(
    fmt: LogFormat = "console",
    level: str = "info",
    *,
    allow_sensitive: bool = False,
    file: TextIO | None = None,
    route_stdlib: bool = False,
    private_paths: Collection[str] = (),
) -> None:
    """Configure structlog for the process (logs go to ``file``, default standard error).

    ``allow_sensitive=True`` turns redaction off; it exists for local debugging only.
    ``route_stdlib=True`` also renders standard-library records (uvicorn, alembic) through the
    same redacting chain, replacing the root handler this function installed before; the
    access log's request targets lose their query on ``private_paths`` and their credential
    parameters everywhere (:func:`~vocero.observability.redaction.redact_target`).
    """
    threshold = level_number(level)
    structlog.configure(
        processors=[*shared_processors(allow_sensitive=allow_sensitive), *_tail(fmt)],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=_logger_factory(file),
        # Off so that structlog.testing.capture_logs() also sees module-level loggers.
        cache_logger_on_first_use=False,
    )
    if route_stdlib:
        handler = _route_stdlib(fmt, threshold, allow_sensitive=allow_sensitive, file=file)
        if not allow_sensitive:
            handler.addFilter(AccessTargets(private_paths))
    if allow_sensitive:
        structlog.get_logger(__name__).warning("logging.redaction_disabled")


def shared_processors(*, allow_sensitive: bool = False) -> list[Processor]:
    """The chain before rendering: contextvars first, then level, timestamp and redaction."""
    chain: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if not allow_sensitive:
        chain.append(redact_event)
    return chain


def renderer(fmt: LogFormat) -> Processor:
    """The final processor for a format."""
    if fmt == "json":
        return structlog.processors.JSONRenderer(sort_keys=True)
    if fmt == "console":
        return OneLine(
            structlog.dev.ConsoleRenderer(colors=False, exception_formatter=plain_traceback)
        )
    raise ValueError(f"unknown log format {fmt!r} (console|json)")


def level_number(level: str) -> int:
    """``"info"`` -> ``logging.INFO``; unknown names raise ``ValueError``."""
    number = logging.getLevelNamesMapping().get(level.upper())
    if number is None:
        raise ValueError(f"unknown log level {level!r}")
    return number


def _tail(fmt: LogFormat) -> list[Processor]:
    # Exceptions are rendered here for both formats: ConsoleRenderer's own formatter (Rich)
    # would print every frame's local variables, secrets among them. Then no field can break
    # its record's line (a newline in a value a client chose would forge a record).
    return [
        structlog.processors.StackInfoRenderer(),
        render_exception,
        escape_event,
        renderer(fmt),
    ]


def _logger_factory(file: TextIO | None) -> Any:
    if file is not None:
        return structlog.PrintLoggerFactory(file=file)
    return lambda *_args: structlog.PrintLogger(file=sys.stderr)


class AccessTargets(logging.Filter):
    """uvicorn's access record (``'%s - "%s %s HTTP/%s" %d'``: client, method, target,
    version, status) gets its target redacted before it is formatted."""

    def __init__(self, private_paths: Collection[str] = ()) -> None:
        super().__init__()
        self.private_paths = frozenset(private_paths)

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if record.name != "uvicorn.access" or not isinstance(args, tuple) or len(args) < 3:
            return True
        if isinstance(target := args[2], str):
            record.args = (*args[:2], redact_target(target, self.private_paths), *args[3:])
        return True


_SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic")


def _route_stdlib(
    fmt: LogFormat, threshold: int, *, allow_sensitive: bool, file: TextIO | None
) -> logging.Handler:
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared_processors(allow_sensitive=allow_sensitive),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *_tail(fmt)],
    )
    handler = logging.StreamHandler(file if file is not None else _Stderr())
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(threshold)
    # A server configured with uvicorn's own logging (its default ``log_config``) gives these
    # loggers their own plain handlers and stops them propagating: their records, the access
    # log's request targets among them, would then reach the output unredacted. Routed means
    # every record goes through the one chain above.
    for name in _SERVER_LOGGERS:
        own = logging.getLogger(name)
        for old in list(own.handlers):
            own.removeHandler(old)
        own.propagate = True
        own.disabled = False
        own.setLevel(logging.NOTSET)  # the chain's threshold, not one a server config set
    return handler
