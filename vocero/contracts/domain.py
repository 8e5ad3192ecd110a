"""Domain records shared across planes: who is calling, which profile governs the session,
which tools exist and how they are classified. Loading and validation live in
``vocero.identity``; these are the validated shapes."""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import msgspec

from vocero.contracts.secrets import Secret

ActionClass = Literal["read", "reversible_write", "irreversible", "prohibited"]


class Caller(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One entry of the identities file (docs/operators.md "Callers")."""

    token: Secret
    """The caller's credential; a plain ``str`` given here is wrapped (never logged)."""
    subject: str
    tenant: str
    roles: list[str] = []
    scopes: list[str] = []
    locale: str = "en-US"
    timezone: str = "UTC"
    phone: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.token, Secret):
            msgspec.structs.force_setattr(self, "token", Secret(self.token))

    @property
    def subject_ref(self) -> str:
        """Opaque, stable reference to the subject; the subject itself never leaves Vocero."""
        digest = hashlib.sha256(f"{self.tenant}\x00{self.subject}".encode()).hexdigest()
        return "sub_" + digest[:24]


class Principal(msgspec.Struct, frozen=True, kw_only=True):
    """What downstream systems learn about the caller (``io.vocero/principal``,
    docs/mcp.md "A call")."""

    subject_ref: str
    tenant_id: str
    scopes: list[str]

    @classmethod
    def of(cls, caller: Caller) -> Principal:
        return cls(
            subject_ref=caller.subject_ref, tenant_id=caller.tenant, scopes=list(caller.scopes)
        )


class ProfileMatch(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    tenant: str
    roles: list[str] = []


class VoiceSelection(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    profile_id: str
    version: str


McpProtocol = Literal["auto", "2025-11-25", "2026-07-28"]
"""``auto`` (default): 2026-07-28 where the server offers it (``server/discover``), else the
2025-11-25 handshake; a version pins that revision (docs/adr/0007)."""


class McpOAuthSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """OAuth 2.1 client settings of a streamable-HTTP server (docs/mcp.md "OAuth").

    Secrets never sit in a profile: ``client_secret_env`` names the environment variable that
    holds the secret. Tokens are obtained, refreshed and stored (encrypted) by the gateway.
    """

    grant: Literal[
        "client_credentials", "authorization_code", "jwt_bearer", "identity_assertion"
    ] = "client_credentials"
    """``jwt_bearer``: Vocero's workload JWT is the grant (RFC 7523, SEP-1933);
    ``identity_assertion``: Vocero's ID token is exchanged at ``idp_token_url`` for an ID-JAG,
    presented as a jwt-bearer grant (SEP-990). Both are server-level (docs/mcp.md)."""
    client_id: str = ""
    """A pre-registered client; empty (``authorization_code`` only): dynamic registration."""
    client_secret_env: str = ""
    token_endpoint_auth: Literal[
        "client_secret_basic", "client_secret_post", "private_key_jwt", "none"
    ] = "client_secret_basic"
    private_key_env: str = ""
    """``private_key_jwt`` only: the environment variable holding the client's PEM key."""
    signing_algorithm: str = "ES256"
    client_metadata_url: str = ""
    """``authorization_code``: an https URL used as client id where the authorization server
    supports client ID metadata documents, instead of dynamic registration."""
    issuer: str = ""
    """The authorization server the credentials belong to; tokens are only requested there."""
    scopes: list[str] = []
    """Requested up front; a ``WWW-Authenticate`` challenge may add more (step-up)."""
    redirect_uri: str = "http://127.0.0.1/oauth/callback"
    """``authorization_code`` only: where the operator's consent redirects."""
    assertion_env: str = ""
    """``jwt_bearer``/``identity_assertion``: the environment variable holding the JWT (the
    workload token, or the ID token at the enterprise IdP)."""
    assertion_file: str = ""
    """The same JWT read from this file at each token request (a rotated, projected token)."""
    idp_token_url: str = ""
    """``identity_assertion``: the enterprise IdP's token endpoint (RFC 8693, the ID-JAG)."""
    idp_client_id: str = ""
    idp_client_secret_env: str = ""


class TokenExchangeSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Delegation (SPEC §11, docs/adr/0027): each caller's JWT is exchanged (RFC 8693) at
    ``token_url`` for a token for this server, sent on that caller's calls only. The client
    authenticates with ``client_secret_basic``; the secret is in the environment variable
    ``client_secret_env``, never in a profile."""

    token_url: str
    audience: str = ""
    scope: str = ""
    client_id: str
    client_secret_env: str


class EnterpriseAuthSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Enterprise-managed authorization per caller (SEP-990, docs/adr/0027 addendum): the
    caller's JWT is exchanged at the IdP (``idp_token_url``) for an ID-JAG for ``issuer`` (the
    MCP server's authorization server), presented there (``token_url``) as a jwt-bearer grant
    (RFC 7523, ``client_secret_basic``); the access token goes on that caller's calls only."""

    idp_token_url: str
    idp_client_id: str = ""
    idp_client_secret_env: str = ""
    """Empty: the IdP client is public (``client_id`` in the form)."""
    subject_token_type: Literal["id_token", "jwt"] = "id_token"
    issuer: str
    token_url: str
    resource: str = ""
    """Empty: the server's URL (its canonical resource identifier)."""
    scope: str = ""
    client_id: str
    client_secret_env: str


class McpServerAuth(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a server's calls are authorized per caller (``auth:`` of a server entry)."""

    token_exchange: TokenExchangeSpec | None = None
    enterprise: EnterpriseAuthSpec | None = None
    """Exclusive with ``token_exchange``."""


class McpServerSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An MCP server: streamable HTTP (``url``) or stdio (``command`` + ``args``)."""

    url: str = ""
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    headers: dict[str, str] = {}
    protocol: McpProtocol = "auto"
    max_concurrency: int = 8
    oauth: McpOAuthSpec | None = None
    auth: McpServerAuth | None = None
    """Per-caller delegation (``token_exchange`` or ``enterprise``); exclusive with ``oauth``."""


class ToolSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    server: str
    resolves_to: str
    action_class: ActionClass
    requires_confirmation: bool = False
    required_scopes: list[str] = []
    timeout_ms: int = 5000
    idempotent: bool = False
    description: str = ""
    lookup_tool: str = ""
    readback: str = ""
    """How a proposal of this tool is read back, with ``{field}`` placeholders of canonical
    values (docs/operators.md "Agent profiles"); empty: a generic read-back that never reads raw
    tool names."""
    readout: str = ""
    """How the tool's result is said, with ``{field}`` placeholders of result fields; empty: a
    generic read-out that never speaks internal fields."""
    examples: list[str] = []
    """Caller lines that ask for this tool (optional): what the CPU dialogue manager's intent
    model learns from besides the tool's description and schema (docs/protocol.md)."""


class StepScope(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which writes a required step guards: profile tools by name (any alias of the same server
    tool counts) and/or action classes (``reversible_write``, ``irreversible``)."""

    tools: list[str] = []
    classes: list[ActionClass] = []


class AskedFact(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One fact a verification step asks the caller for: ``question`` is said verbatim;
    ``type`` says how the answer is read and compared (``date``: normalised dates; ``text``:
    case-, space- and punctuation-insensitive; ``number``: digits only)."""

    field: str
    question: str
    type: Literal["date", "text", "number"] = "text"


class RequiredStep(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A step the policy owner requires before a write (docs/adr/0030-required-steps.md):
    ``disclosure``: ``text`` must have been heard (by playout) in this session;
    ``verify_identity``: the caller's answers to ``ask`` are passed to the profile read tool
    ``tool`` (``arguments``: tool argument -> asked field) and each asked field named in
    ``match`` must equal the result field it names (asked field -> result field)."""

    kind: Literal["disclosure", "verify_identity"]
    id: str
    applies_to: StepScope
    text: str = ""
    tool: str = ""
    ask: list[AskedFact] = []
    arguments: dict[str, str] = {}
    match: dict[str, str] = {}


class ClaimSource(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The evidence behind a claim: never spoken, never sent to the browser."""

    id: str
    version: str
    passage: str


class Claim(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One approved claim of a profile's catalog (docs/grounding.md): ``text`` is spoken
    verbatim."""

    key: str
    text: str
    sources: list[ClaimSource]
    conditions: list[str] = []
    """Phrases that must appear in ``text`` (checked at load) and in any paraphrase of it."""
    locale: str = "en-US"
    topics: list[str] = []
    valid_until: str = ""
    """RFC3339 date-time or plain date; empty: no end."""


class FollowupSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The profile's follow-up queue (docs/followups.md "Bounds")."""

    call_tool: str = ""
    """The profile tool that places an outbound call (e.g. an MCP ``calls.place``)."""
    autonomy: Literal["auto", "approve"] = "auto"
    max_per_tick: int = 2
    daily_budget: int = 20
    """Calls per tenant per (UTC) day."""
    caller_daily_share: float = 0.25
    """The share of ``daily_budget`` one caller's call-backs may use in a day (above 0, at most
    1; rounded up, so at least one call): one caller never spends the day for the others."""
    max_open_per_caller: int = 3
    """Call-backs one caller may have waiting (``scheduled``, ``awaiting_approval``, ``retry``);
    ``followups.record`` refuses another (``caller_limit``) until one is settled."""
    max_per_session: int = 5
    """Follow-ups (call-backs and tasks) one session may record (``session_limit``)."""
    blocked: list[str] = []
    """Phone numbers never called."""
    from_number: str = ""
    """The number a call-back placed through the carrier (built-in ``carrier.call``) rings
    from, E.164; empty: the deployment's ``--twilio-from`` (docs/followups.md)."""
    agent_name: str = ""
    """Who the agent says is calling on an answered call-back ("Hello, this is <agent_name>
    calling back about <reason>."); empty: "Hello, I'm calling back about <reason>."."""


class HandoffSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A person the caller can be handed to (docs/telephony.md "Handing a caller to a
    person"; docs/protocol.md "Profile additions"). On the phone the call is put through to
    ``phone``; on the web a ``task`` follow-up asks a person to call the caller back."""

    phone: str
    """The number a phone call is put through to, E.164 (``+`` and 8 to 15 digits)."""
    message: str = ""
    """What the caller hears before the call is put through; empty: Vocero's own line."""
    after_denials: int = 2
    """The caller is handed off once the policy has refused this many of their requests in
    one session (at least 1)."""


class TurnTaking(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """When the caller's turn is over (docs/architecture.md "Turn-taking and endpointing";
    docs/protocol.md "Turn-taking"). Defaults measured with ``vocero bench turns`` on
    ``fixtures/turns``."""

    judge_pause_ms: int = 300
    """Silence after speech before the end-of-turn judge is asked about the audio alone, when no
    early transcript of the pause is ready or on its way; once one is ready, the judge is
    asked at once (with Whisper tiny.en on two cores, ~270-430 ms into the pause)."""
    words_wait_ms: int = 400
    """While the early transcript of the pause is being made, the audio alone is not judged
    before this much silence: one judgement with the words costs less than two, and one without
    them would share the cores with the recogniser (on two cores: 50-100 ms a judgement instead
    of ~30, and the words later too). A judgement put off so has as long to answer, from its
    asking, as one asked at ``judge_pause_ms`` (``fallback_silence_ms - judge_pause_ms``)."""
    words_pause_ms: int = 150
    """The least silence after which the early transcript is judged; words ready sooner wait
    for it (the session transcribes a pause of 160 ms)."""
    judge_window_ms: int = 200
    """The judge hears at most this much of the silence after the last voiced frame (audio
    turn models learnt turns that end shortly after speech); 0: all of it."""
    rejudge_ms: int = 200
    """After a "not finished", the judge is asked again this much later (about new audio)."""
    complete_probability: float = 0.9
    """A judgement that weighed the caller's words ends the turn at this probability or above."""
    finished_probability: float = 0.15
    """A judgement whose words read as a finished question (``TurnVerdict.words_finished`` and
    ``words_question``) ends the turn at this probability or above: the audio model's doubt
    about a finished question."""
    finished_statement_probability: float = 0.7
    """The same for a finished statement: "I want to change them." is what Whisper makes of "I
    want to change the ..." cut at a pause, and the audio model's doubt then counts."""
    sure_probability: float = 0.3
    """A judgement whose words read as finished and which the recogniser was sure of
    (``TurnVerdict.words_sure``: a request with its object, a question, an identifier just
    given) ends the turn at this probability or above, though the audio model is unsure: the
    words carry the decision, and a wrong end is cut short by barge-in (ADR-0022)."""
    resumed_probability: float = 0.0
    """After the caller paused and went on (a pause the judge was asked about), a finished
    statement ends the turn at this probability or above: the words now cover the whole
    utterance, and the audio model hears the earlier pause in its window and doubts (on the
    tuning half it gave such endings 0.01-0.37)."""
    resumed_silence_ms: int = 600
    """After the caller paused and went on, a pause whose words were judged and do not go on
    (open, closed or finished) ends the turn after this much silence, whatever the judge says:
    ``max_silence_ms`` is kept for words that go on."""
    words_end_probability: float = 0.2
    """When a words model read the transcript (``TurnVerdict.words_probability``: that the
    caller's sentence ends after its last word), words it finds this likely to end there end
    the turn at ``words_end_audio_probability`` or above, whatever the lexicon made of them
    (a short answer, words the recogniser was unsure of): the words carry the decision. Chosen
    on the tuning half and its development set (ADR-0025); above 1: never."""
    words_end_audio_probability: float = 0.05
    """The audio model's least probability for a turn the words model ends: the audio vetoes
    only when it is all but sure the caller goes on."""
    words_end_silence_ms: int = 400
    """A turn the words model ends (``words_end_probability``) ends no sooner than this much
    silence: a short clause then a comma's pause ("Never mind, ... goodbye", "No wait, ...
    make it 11") reads finished to it. On the development set: complete clips cut off at a
    comma 6 → 3 of 158, their p50 +9 ms (ADR-0025)."""
    words_end_short_silence_ms: int = 600
    """The same, for words of at most two ("No wait", "Yes please", "Thanks"): read after the
    agent's question, a short answer reads finished to the words model even when the caller
    goes on after a comma's pause ("No wait, ... make it 11"). On the development set read
    after its agent lines, 400 → 600 ms: paused callers cut off 38 → 35 of 169, complete clips
    committed within 450 ms 41 → 34 % (ADR-0025)."""
    words_hold_probability: float = 0.05
    """Words the words model finds less likely than this to end where they stop never end the
    turn on that verdict, whatever the audio says ("I was wondering if you could", "We've been
    waiting since."): the same as words that visibly go on; ``max_silence_ms`` ends such a
    turn. 0: never."""
    audio_probability: float = 0.97
    """A judgement of the audio alone must reach this; above 1: never (wait for the words)."""
    audio_min_speech_ms: int = 600
    """The audio alone never ends an utterance with less speech than this (from its start to its
    last voiced frame): "Hello," then a pause sounds finished; its words are awaited."""
    max_silence_ms: int = 1600
    """The turn ends after this much silence whatever the judge says."""
    fallback_silence_ms: int = 480
    """The turn ends after this much silence when the judge failed or was busy (the fixed
    hangover of a VAD alone)."""
    barge_in_echo_db: float = -14.0
    """While the agent speaks, caller audio counts toward a barge-in only when it is louder than
    the agent's own output of the last ``echo_window_ms`` by this much (dB, negative: the agent's
    voice coming back through a speakerphone, -20 dB or less, never interrupts it)."""
    echo_window_ms: int = 1000
    """How far back the agent's output level is remembered for that comparison (its audio is
    sent ahead of playout and its echo comes back late); 0: no echo gate."""


class AgentProfile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One agent profile (docs/operators.md "Agent profiles")."""

    id: str
    version: str
    match: ProfileMatch
    instructions: str = ""
    rules: list[str] = []
    locale: str = "en-US"
    voice: VoiceSelection | None = None
    allow_voice_fallback: bool = False
    """Where the runner cannot speak ``voice`` (a vault version without an ``engine_voice`` on a
    remote TTS, a clone on Piper), speak the runner's built-in voice instead, and say so in
    ``effective``; ``False`` (default): such a session is refused with ``VOICE_UNAVAILABLE``."""
    min_interruption_ms: int = 200
    max_lead_ms: int = 400
    word_budget: int = 60
    mcp_servers: dict[str, McpServerSpec] = {}
    tools: list[ToolSpec] = []
    tool_approval: Literal["auto", "review"] = "auto"
    """``review``: a tool this profile's MCP servers list for the first time is ``pending`` until
    an operator approves its definition, whatever ``serve --tool-approval`` says (the stricter
    of the two wins; docs/mcp.md "Discovery and pinning")."""
    grounding: Literal["strict", "assisted"] = "strict"
    claims: list[Claim] = []
    """The approved claim catalog (docs/grounding.md). In the YAML file it is an inline list or a
    path relative to the profile; the identity plane loads the file before decoding."""
    unit_max_age_ms: int = 4000
    """A planned spoken unit older than this when its turn to play comes is dropped."""
    required_steps: list[RequiredStep] = []
    """Steps the policy owner requires before the writes they apply to (disclosures heard,
    identity verified): checked by the final gate (docs/adr/0030-required-steps.md)."""
    followups: FollowupSettings = FollowupSettings()
    handoff: HandoffSettings | None = None
    """Whom a caller who asks for a person (or whom the policy refused ``after_denials``
    times) is handed to; ``None``: no handoff is offered."""
    turn_taking: TurnTaking = TurnTaking()
    vocabulary: list[str] = []
    """Words and names callers say that a recogniser may not know (product names, the shape of
    an identifier: "order A123", "appointment APT-1001"); with the claims' topics and the
    identifiers the caller was told, the speech recogniser is primed with them (a hint: it may
    still hear something else)."""

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)


class ToolDefinition(msgspec.Struct, frozen=True, kw_only=True):
    """A tool as the model may see it: the profile's name with the server's pinned schema."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    builtin: str = ""
    """The Vocero built-in this tool resolves to (``knowledge.search``, ``followups.record``;
    ``contracts.builtins``), whatever the profile calls it; "" for an MCP server's tool."""
    examples: list[str] = []
    """Caller lines that ask for this tool, from the profile (``tools[].examples``): material a
    dialogue manager may learn from, never spoken."""


class VoiceRef(msgspec.Struct, frozen=True, kw_only=True):
    """An authorized, resolved voice: the only way a TTS runner learns which voice to use."""

    voice_profile_id: str
    voice_version: str
    ref_audio: bytes = b""
    ref_text: str = ""
    x_vector_only: bool = False
    engine_voice: str = ""
    """The serving engine's voice name this version is spoken with on a remote TTS, approved
    with the version; "" where none was approved (a remote TTS cannot speak the version)."""

    @property
    def builtin(self) -> bool:
        """Whether this is the runner's built-in default voice (no vault version)."""
        return (self.voice_profile_id, self.voice_version) == ("builtin", "default")


DEFAULT_VOICE = VoiceRef(voice_profile_id="builtin", voice_version="default")
