"""Command-line flags and their ``VOCERO_*`` environment twins (README.md "Using it")."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from vocero.contracts.secrets import NO_SECRET, Secret

REPO_ROOT = Path(__file__).resolve().parents[2]
"""The source checkout, when running from one (benchmarks and ``vocero schema`` need it)."""


def shipped(relative: str) -> Path:
    """A file the defaults need (the demo's profiles, identities and MCP servers): read in place
    in a source checkout, else from the copy the wheel carries under ``vocero/_data/``
    (``setup.py``), so an installed wheel runs the demo from any directory."""
    in_checkout = REPO_ROOT / relative
    if in_checkout.exists():
        return in_checkout
    return Path(__file__).resolve().parents[1] / "_data" / relative


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8765
    runners: str = "cpu"
    profiles: str = ""
    identities: str = ""
    db: str = field(default="sqlite+aiosqlite:///./var/vocero.db", repr=False)
    """Not in ``repr``: a PostgreSQL URL may carry a password."""
    sim_script: str = ""
    operator_token: Secret = NO_SECRET
    """The single admin's bearer token (a plain ``str`` given here is wrapped)."""
    operators: str = ""
    operator_jwks: str = ""
    """JWKS (``https://`` URL or file) operator bearer JWTs are verified against
    (docs/operators.md "Operators from the identity provider"); empty: no operator JWTs."""
    operator_issuer: str = ""
    operator_audience: str = ""
    log_format: str = "console"
    max_sessions: int = 100
    """Live sessions one worker admits: what one worker held within its real-time limits on
    2 cores (``vocero bench sessions``, docs/scaling.md)."""
    resume_window_s: float = 120.0
    """How long after its connection ends a session may be resumed with its ``resume_token``."""
    allowed_origins: str = ""
    """Comma-separated origins a browser may open ``/v1/realtime`` from; ``*`` allows any.
    Empty: the server's own origin only (see :func:`vocero.relay.origins.default_origins`)."""
    max_pending_per_address: int = 32
    """Connections from one address that may be open without a ``session.connect.v1`` yet."""
    caller_jwks: str = ""
    """JWKS (``https://`` URL or file) caller JWTs are verified against (SPEC §11,
    docs/deployment.md "Callers from your identity provider"); empty: identities file only."""
    caller_issuer: str = ""
    caller_audience: str = ""
    caller_claims: str = ""
    """Claim names over the defaults, ``field=claim,...``
    (``tenant=org_id,roles=realm_access.roles``)."""
    ssl_certfile: str = ""
    """PEM certificate (chain) to serve https and wss with; empty: plain http and ws."""
    ssl_keyfile: str = ""
    forwarded_allow_ips: str = ""
    """Comma-separated proxy addresses (or ``*``) whose ``X-Forwarded-For``/``-Proto`` are
    believed; empty: none is."""
    mcp_input_timeout_s: float = 60.0
    """How long a tool server's question (MCP elicitation) waits for the caller's answer before
    it is cancelled (the agent then says the call stopped)."""
    tool_approval: str = "auto"
    """``auto``: an MCP tool seen for the first time is pinned and callable (trust on first use);
    ``review``: it is ``pending`` and refused (``tool_pending``) until an operator approves its
    definition hash (docs/mcp.md "Discovery and pinning")."""
    followups_tick_s: float = 30.0
    """How often ``serve`` runs a pass of the follow-up queue (docs/followups.md); 0 turns it
    off."""
    workers: str = "1"
    """``serve`` processes sharing the port and the store: a number, or ``auto`` (one per
    core). More than one needs PostgreSQL (docs/scaling.md)."""
    lease_ttl_s: float = 15.0
    """How long this process's hold on its sessions and outbox rows lasts unrenewed (renewed
    every third of it): the takeover delay after a crash on another host, and the longest
    database outage a live process rides out without losing its sessions to a peer."""
    lease_local_liveness: bool = True
    """Take over at once what a process of this host that is gone held (not after its lease)."""
    resume_false_interruptions: bool = True
    """An answer stopped by a sound with no words (a cough, an "mm-hmm") resumes from what the
    caller heard (ADR-0038); off: it is dropped."""
    false_interruption_window_ms: int = 1500
    """... only when that sound ended within this long of the stop."""
    false_interruption_grace_ms: int = 300
    """... decided this long after the sound ended once its transcription holds no words, not
    at the end of the turn's silence (held within 160-1,000 ms; 0: at the end, as before)."""
    caller_pace: bool = True
    """Each caller's within-turn pauses move the least silence that ends their turn (ADR-0038)."""
    pace_floor_min_ms: int = 250
    pace_floor_max_ms: int = 900
    """The bounds of that learnt floor."""
    pace_after_pauses: int = 2
    """Pauses heard before a caller's floor moves."""
    outbox_concurrency: int = 16
    """Operations this process's outbox worker dispatches at once (a bulkhead); the rest wait
    ``authorized``, held by this process, until a slot frees."""
    outbox_retry_s: float = 0.5
    """Wait before an operation refused before it ran (server busy, not connected) is tried
    again; it stays ``dispatch_pending`` meanwhile."""
    otlp_endpoint: str = ""
    """OTLP/HTTP collector for traces (``http://collector:4318``); empty: no traces exported."""
    retention: str = ""
    """YAML file of retention periods per data class (docs/operators.md); empty: defaults."""
    purge_every_s: float = 3600.0
    """How often ``serve`` runs the retention purge; 0 turns it off."""
    heap_trim_s: float = 60.0
    """How often ``serve`` hands the C allocator's free pages back to the kernel (glibc
    ``malloc_trim``, vocero/observability/heap_trim.py; docs/scaling.md "Soak"); above 0 every
    thread also allocates from the one main arena, which the trim reaches. 0: glibc's defaults
    (an arena per thread, never trimmed)."""
    prepared_answers: bool = True
    """Prepare the answer at a caller's pause and speak it the moment the turn is committed,
    if the words did not change (``--prepared-answers off``: the model is asked only once the
    turn is committed; ADR-0037)."""
    merge_window_ms: float = 1_500.0
    """A caller who takes the turn back this soon after it was committed is joined to it and
    answered once (ADR-0037); 0 turns it off."""
    freeze_heap: bool = False
    """Once warm, collect the heap and freeze it out of the cyclic garbage collector (``serve``
    does): with the models loaded a full collection walks every object the process holds,
    240 ms with the event loop stopped, in the middle of whatever call was live."""

    llm_url: str = ""
    """An OpenAI-compatible chat completions endpoint for the LLM stage (docs/deployment.md); empty:
    the in-process runner of ``runners``."""
    llm_model: str = ""
    stt_url: str = ""
    """``/v1/audio/transcriptions`` endpoint for the STT stage; empty: in process."""
    stt_model: str = ""
    tts_url: str = ""
    """``/v1/audio/speech`` endpoint for the TTS stage; empty: in process."""
    tts_model: str = ""
    tts_voice: str = ""
    llm_mode: str = "agent"
    """``agent``: the model behind ``llm_url`` does the LLM's whole job, tools included
    (ADR-0021); ``routed``: the CPU runners' dialogue manager keeps deciding and the endpoint
    serves only as its language model (a small model on a llama.cpp server; ``--runners cpu``)."""
    llm_timeout_s: float = 10.0
    """Connect and per-read timeout of the LLM endpoint's requests."""
    stt_timeout_s: float = 10.0
    tts_timeout_s: float = 10.0

    public_url: str = ""
    """The https base a carrier reaches this server at (``--public-url``, SPEC §10): the
    webhook's signature is computed over it and the media stream's ``wss://`` URL built from it."""
    twilio_auth_token: Secret = NO_SECRET
    """Twilio's auth token (``--twilio-auth-token``, env ``VOCERO_TWILIO_AUTH_TOKEN``): the
    webhook signature key. Empty: the telephony routes answer 404 (docs/telephony.md)."""
    twilio_api_base: str = "https://api.twilio.com"
    """Twilio's REST API (``--twilio-api-base``): a handoff puts a call through there (tests
    point it at a local fake; docs/telephony.md "Handing a caller to a person")."""
    twilio_account_sid: str = ""
    """The Twilio account call-backs are placed on (``--twilio-account-sid``, env
    ``VOCERO_TWILIO_ACCOUNT_SID``); with ``--twilio-auth-token`` and ``--public-url`` it enables
    the built-in call tool ``carrier.call`` (docs/followups.md)."""
    twilio_from: str = ""
    """The number call-backs ring from, E.164 (``--twilio-from``, env ``VOCERO_TWILIO_FROM``),
    unless the profile's ``followups.from_number`` names one."""

    def __post_init__(self) -> None:
        if not isinstance(self.operator_token, Secret):
            object.__setattr__(self, "operator_token", Secret(self.operator_token))
        if not isinstance(self.twilio_auth_token, Secret):
            object.__setattr__(self, "twilio_auth_token", Secret(self.twilio_auth_token))

    @property
    def scheme(self) -> str:
        """``https`` with ``--ssl-certfile``, else ``http``."""
        return "https" if self.ssl_certfile else "http"

    @property
    def profiles_dir(self) -> Path:
        return Path(self.profiles) if self.profiles else shipped("fixtures/profiles")

    @property
    def identities_file(self) -> Path:
        return Path(self.identities) if self.identities else shipped("fixtures/identities.yaml")


def _env(name: str, default: str) -> str:
    return os.environ.get(f"VOCERO_{name.upper()}", default)


def _number(
    parser: argparse.ArgumentParser, defaults: Settings, field: str, kind: type[int | float],
    help: str | None = None,
) -> None:
    """``--field-name N`` for a numeric setting: ``VOCERO_FIELD_NAME`` or the built-in value
    when not given."""
    parser.add_argument(
        "--" + field.replace("_", "-"),
        dest=field,
        type=kind,
        default=kind(_env(field, str(getattr(defaults, field)))),
        help=help,
    )


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    d = Settings()
    parser.add_argument("--host", default=_env("host", d.host))
    _number(parser, d, "port", int)
    parser.add_argument(
        "--runners", choices=["cpu", "sim", "gb10"], default=_env("runners", d.runners)
    )
    parser.add_argument("--profiles", default=_env("profiles", d.profiles))
    parser.add_argument("--identities", default=_env("identities", d.identities))
    parser.add_argument("--db", default=_env("db", d.db))
    parser.add_argument("--sim-script", dest="sim_script", default=_env("sim_script", d.sim_script))
    parser.add_argument(
        "--operator-token",
        dest="operator_token",
        default=_env("operator_token", d.operator_token.reveal()),
    )
    parser.add_argument("--operators", default=_env("operators", d.operators))
    for name, what in (("operator_jwks", "JWKS URL or file operator bearer JWTs verify against"),
                       ("operator_issuer", "the iss operator JWTs must carry"),
                       ("operator_audience", "the aud operator JWTs must carry")):
        parser.add_argument("--" + name.replace("_", "-"), dest=name,
                            default=_env(name, getattr(d, name)), help=what)
    parser.add_argument(
        "--log-format",
        dest="log_format",
        choices=["console", "json"],
        default=_env("log_format", d.log_format),
    )
    _number(parser, d, "max_sessions", int)
    _number(parser, d, "resume_window_s", float,
            "how long after a dropped connection its session may be resumed")
    _number(parser, d, "mcp_input_timeout_s", float,
            "seconds a tool server's question waits for the caller's answer")
    parser.add_argument(
        "--tool-approval", dest="tool_approval", choices=["auto", "review"],
        default=_env("tool_approval", d.tool_approval),
        help="auto: a first-seen MCP tool is trusted as listed; review: it waits for an "
        "operator's approval (default auto)",
    )
    _number(parser, d, "followups_tick_s", float,
            "seconds between passes of the follow-up queue (0: off)")
    parser.add_argument(
        "--otlp-endpoint",
        dest="otlp_endpoint",
        default=_env("otlp_endpoint", d.otlp_endpoint),
        help="OTLP/HTTP endpoint traces are exported to (default: none, no traces)",
    )
    add_retention_arguments(parser)
    _number(parser, d, "purge_every_s", float,
            "seconds between retention purges (0: off)")
    _number(parser, d, "heap_trim_s", float,
            "seconds between returns of the C heap's free pages to the kernel (0: off)")
    parser.add_argument(
        "--allowed-origins",
        dest="allowed_origins",
        default=_env("allowed_origins", d.allowed_origins),
        help="comma-separated browser origins allowed on /v1/realtime ('*': any); "
        "default: the server's own origin",
    )
    parser.add_argument(
        "--workers",
        default=_env("workers", d.workers),
        help="server processes sharing the port and the store: N or 'auto' (one per core); "
        "more than one needs a PostgreSQL --db",
    )
    _number(parser, d, "lease_ttl_s", float,
            "how long this process's hold on sessions and outbox rows lasts unrenewed")
    _number(parser, d, "outbox_concurrency", int,
            "operations the outbox worker dispatches at once")
    _number(parser, d, "outbox_retry_s", float,
            "wait before an operation refused before it ran is tried again")
    parser.add_argument(
        "--lease-local-liveness",
        dest="lease_local_liveness",
        choices=["on", "off"],
        default=_env("lease_local_liveness", "on"),
        help="take over at once what a gone process of this host held (default on)",
    )
    _number(parser, d, "max_pending_per_address", int,
            "connections one address may hold open before sending session.connect.v1")
    add_turn_recovery_arguments(parser)
    parser.add_argument(
        "--prepared-answers",
        dest="prepared_answers",
        choices=["on", "off"],
        default=_env("prepared_answers", "on"),
        help="prepare the answer at a caller's pause, speak it at the commit (default on)",
    )
    _number(parser, d, "merge_window_ms", float,
            "a caller who takes the turn back this soon after its commit is joined to it")
    add_identity_arguments(parser)
    add_telephony_arguments(parser)
    parser.add_argument(
        "--print-config", dest="print_config", action="store_true",
        help="print the effective settings with their source (flag, env, default) as JSON, "
        "secrets redacted, and exit",
    )
    add_endpoint_arguments(parser)


def add_turn_recovery_arguments(parser: argparse.ArgumentParser) -> None:
    """False interruptions and each caller's pace (ADR-0038)."""
    d = Settings()
    for name, what in (
        ("resume_false_interruptions", "resume an answer a sound with no words stopped"),
        ("caller_pace", "learn each caller's pauses to move their end-of-turn silence floor"),
    ):
        parser.add_argument("--" + name.replace("_", "-"), dest=name, choices=["on", "off"],
                            default=_env(name, "on" if getattr(d, name) else "off"),
                            help=what + " (default on)")
    _number(parser, d, "false_interruption_window_ms", int,
            "the sound must have ended within this long of the stop")
    _number(parser, d, "false_interruption_grace_ms", int,
            "decide this long after a sound with no words ended (160-1000; 0: at its end)")
    _number(parser, d, "pace_floor_min_ms", int, "the least learnt silence floor")
    _number(parser, d, "pace_floor_max_ms", int, "the greatest learnt silence floor")
    _number(parser, d, "pace_after_pauses", int, "pauses heard before a caller's floor moves")


def add_identity_arguments(parser: argparse.ArgumentParser) -> None:
    """Caller JWTs, TLS and trusted proxies (SPEC §11, docs/deployment.md)."""
    d = Settings()
    for name, what in (
        ("caller_jwks", "JWKS URL or file caller JWTs (session.connect.v1 token) verify against"),
        ("caller_issuer", "the iss caller JWTs must carry"),
        ("caller_audience", "the aud caller JWTs must carry"),
        ("caller_claims", "claim names over the defaults: field=claim,... (fields subject, "
         "tenant, roles, scopes, locale, timezone, phone)"),
        ("ssl_certfile", "PEM certificate: serve https and wss"),
        ("ssl_keyfile", "PEM private key of --ssl-certfile"),
        ("forwarded_allow_ips", "comma-separated proxy addresses ('*': any) whose "
         "X-Forwarded-For/-Proto are believed (default: none)"),
    ):
        parser.add_argument("--" + name.replace("_", "-"), dest=name,
                            default=_env(name, getattr(d, name)), help=what)


def add_telephony_arguments(parser: argparse.ArgumentParser) -> None:
    """The phone leg (SPEC §10, docs/telephony.md)."""
    d = Settings()
    parser.add_argument(
        "--public-url", dest="public_url", default=_env("public_url", d.public_url),
        help="the https base URL a carrier reaches this server at (webhook signatures)",
    )
    parser.add_argument(
        "--twilio-auth-token", dest="twilio_auth_token",
        default=_env("twilio_auth_token", d.twilio_auth_token.reveal()),
        help="Twilio auth token (prefer VOCERO_TWILIO_AUTH_TOKEN); without it the telephony "
        "routes answer 404",
    )
    parser.add_argument(
        "--twilio-api-base", dest="twilio_api_base",
        default=_env("twilio_api_base", d.twilio_api_base),
        help="Twilio's REST API base URL, where a handoff puts a call through",
    )
    parser.add_argument(
        "--twilio-account-sid", dest="twilio_account_sid",
        default=_env("twilio_account_sid", d.twilio_account_sid),
        help="Twilio account SID call-backs are placed on (built-in call tool carrier.call)",
    )
    parser.add_argument(
        "--twilio-from", dest="twilio_from", default=_env("twilio_from", d.twilio_from),
        help="E.164 number call-backs ring from (a profile's followups.from_number wins)",
    )


def add_endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    """Per-stage serving engines (docs/deployment.md): ``--llm-url URL --llm-model NAME`` and the
    STT and TTS twins; keys only from ``VOCERO_LLM_API_KEY`` and its twins
    (:func:`endpoint_keys`)."""
    d = Settings()
    for name in ("llm_url", "llm_model", "stt_url", "stt_model", "tts_url", "tts_model",
                 "tts_voice"):
        parser.add_argument(
            "--" + name.replace("_", "-"), dest=name, default=_env(name, getattr(d, name)),
        )
    parser.add_argument(
        "--llm-mode", dest="llm_mode", choices=["agent", "routed"],
        default=_env("llm_mode", d.llm_mode),
        help="agent: the endpoint's model chooses tools itself; routed: the CPU runners' "
        "dialogue manager decides and the endpoint is its language model",
    )
    for stage in ("llm", "stt", "tts"):
        _number(parser, d, f"{stage}_timeout_s", float,
                f"connect and per-read timeout of the {stage.upper()} endpoint, in seconds")


def endpoint_keys() -> dict[str, Secret]:
    """The API key of each stage's endpoint, from the environment only (never a flag: every
    local user can read a command line)."""
    return {stage: Secret(_env(f"{stage}_api_key", "")) for stage in ("llm", "stt", "tts")}


def add_retention_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--retention",
        default=_env("retention", Settings().retention),
        help="YAML file of retention periods per data class (default: the built-in ones)",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    fields = Settings.__dataclass_fields__
    values = {name: getattr(args, name) for name in fields if hasattr(args, name)}
    if isinstance(values.get("lease_local_liveness"), str):
        values["lease_local_liveness"] = values["lease_local_liveness"] != "off"
    for switch in ("resume_false_interruptions", "caller_pace"):
        if isinstance(values.get(switch), str):
            values[switch] = values[switch] != "off"
    if isinstance(values.get("prepared_answers"), str):
        values["prepared_answers"] = values["prepared_answers"] != "off"
    return Settings(**values)


def db_url(url: str) -> str:
    """Accept plain ``sqlite:///`` URLs and give SQLAlchemy its async driver."""
    if url.startswith("sqlite:///"):
        return "sqlite+aiosqlite:///" + url.removeprefix("sqlite:///")
    if url.startswith("postgresql://"):
        return "postgresql+asyncpg://" + url.removeprefix("postgresql://")
    return url
