"""The client the official MCP conformance suite drives: Vocero's gateway, default configuration.

``conformance client --command "python -m vocero.bench.conformance"`` (npm package
``@modelcontextprotocol/conformance``) starts a scenario server and runs this module with its URL
as the last argument (the scenario in ``MCP_CONFORMANCE_SCENARIO``, its data in
``MCP_CONFORMANCE_CONTEXT``). It connects as Vocero does in production, through
:class:`~vocero.mcp_gateway.connection.McpConnections` with ``protocol: auto`` (2026-07-28 where
the server offers it, 2025-11-25 otherwise): the tools the server lists become a throwaway
profile's allowlist, and every tool the gateway pinned is called through
:class:`~vocero.mcp_gateway.gateway.McpGateway` (pinning, validation, ``_meta``, result checks)
with arguments built from its pinned input schema, or the ones the scenario supplies.

A server's questions go through the gateway's question port like a caller's answers would: the
stand-in caller accepts, giving a sample value for each field without a default (the gateway
fills defaults, SEP-1034). ``auth/*`` scenarios configure the server's OAuth the way an operator
would (``McpOAuthSpec``): a pre-registered client when the scenario hands one over, client
credentials for the machine-to-machine scenarios, the jwt-bearer grant with the workload JWT
(``auth/wif-jwt-bearer``), the identity-assertion grant with the ID token it hands over
(``auth/enterprise-managed-authorization``: ID-JAG from its IdP, then jwt-bearer), else the
authorization-code grant with dynamic registration or a client ID metadata document; the
stand-in operator approves by following the authorization server's redirect. See
``scripts/mcp_conformance.sh``.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls

from vocero.contracts.domain import (
    AgentProfile,
    McpOAuthSpec,
    McpServerSpec,
    Principal,
    ProfileMatch,
    ToolSpec,
)
from vocero.contracts.errors import ToolCallError
from vocero.contracts.ports import CallMeta, InputRequest, InputResponse, ToolCallRequest
from vocero.mcp_gateway.adapters import OpenOptions, SessionHooks, select_adapter
from vocero.mcp_gateway.auth_flow import AuthOptions
from vocero.mcp_gateway.connection import McpConnections
from vocero.mcp_gateway.gateway import McpGateway
from vocero.mcp_gateway.model import RemoteTool
from vocero.mcp_gateway.oauth import ConsentResult, InMemoryOAuthTokenRepository
from vocero.mcp_gateway.settings import GatewaySettings

SERVER = "conformance"
PRINCIPAL = Principal(subject_ref="sub_conformance", tenant_id="conformance", scopes=[])
CIMD_URL = "https://conformance-test.local/client-metadata.json"
REDIRECT_URI = "http://localhost:3000/callback"
SECRET_ENV = "VOCERO_CONFORMANCE_CLIENT_SECRET"
KEY_ENV = "VOCERO_CONFORMANCE_PRIVATE_KEY"
ASSERTION_ENV = "VOCERO_CONFORMANCE_ASSERTION"
_FORMATS = {"date": "2026-01-01", "date-time": "2026-01-01T00:00:00Z", "email": "a@example.com"}


class _PrintAudit:
    async def record(self, kind: str, data: dict[str, Any], *, session_id: str = "") -> None:
        print(f"audit {kind} {data}", file=sys.stderr)


class _Cipher:
    """In-memory sealing for a throwaway run (production seals with the vault key)."""

    def seal_text(self, text: str, context: str) -> str:
        return text

    def open_text(self, sealed: str, context: str) -> str:
        return sealed


def sample_arguments(schema: dict[str, Any], *, every: bool = False) -> dict[str, Any]:
    """Arguments that satisfy a simple object schema: defaults first, then a value per type.
    ``every``: optional properties too (except those with a default)."""
    properties = schema.get("properties") or {}
    if every:
        names = [n for n, p in properties.items() if not (isinstance(p, dict) and "default" in p)]
    else:
        names = list(schema.get("required") or list(properties))
    return {name: _sample(properties.get(name) or {}) for name in names}


def _sample(schema: dict[str, Any]) -> Any:
    if "default" in schema:
        return schema["default"]
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf") and isinstance(schema["oneOf"][0], dict):
        return schema["oneOf"][0].get("const")
    kind = schema.get("type")
    if kind == "object":
        return sample_arguments(schema)
    if kind in (None, "string"):
        return _FORMATS.get(str(schema.get("format")), "CONFORMANCE1")
    if kind == "array":
        items = schema.get("items") or {}
        return [_sample(items)] if items.get("enum") or items.get("anyOf") else []
    return {"number": 1, "integer": 1, "boolean": True}.get(str(kind))


async def stand_in_caller(question: InputRequest) -> InputResponse:
    """Accepts every question (a URL one too), as a consenting caller would."""
    if question.mode == "url":
        return InputResponse(action="accept")
    return InputResponse(
        action="accept", content=sample_arguments(question.requested_schema, every=True)
    )


async def stand_in_operator(server: str, url: str) -> ConsentResult:
    """Approves by following the authorization endpoint's redirect (the suite approves at once);
    in production an operator's browser does this."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(url, follow_redirects=False)
    location = response.headers.get("location")
    if not location:
        raise RuntimeError(f"authorization endpoint answered {response.status_code}")
    query = parse_qs(urlsplit(location).query)
    if "code" not in query:
        raise RuntimeError("no authorization code in the redirect")
    state, iss = query.get("state"), query.get("iss")
    return ConsentResult(
        code=query["code"][0], state=state[0] if state else None, iss=iss[0] if iss else None
    )


async def _issuer(url: str) -> str:
    """The authorization server a protected resource names (RFC 9728), for client credentials:
    an operator configures it; the suite does not say it, so it is read here."""
    async with httpx2.AsyncClient() as http:
        for candidate in build_protected_resource_metadata_discovery_urls(None, url):
            response = await http.get(candidate)
            if response.status_code == 200:
                return str(response.json()["authorization_servers"][0])
    raise RuntimeError("no protected resource metadata")


async def oauth_for(scenario: str, url: str, context: Mapping[str, Any]) -> McpOAuthSpec | None:
    """How an operator would configure this scenario's server."""
    if not scenario.startswith("auth/"):
        return None
    client_id = str(context.get("client_id") or "")
    if context.get("idp_id_token"):  # SEP-990: an ID token, exchanged at the IdP for an ID-JAG
        return McpOAuthSpec(
            grant="identity_assertion",
            client_id=client_id,
            client_secret_env=SECRET_ENV,
            assertion_env=ASSERTION_ENV,
            idp_token_url=str(context.get("idp_token_endpoint") or ""),
            idp_client_id=str(context.get("idp_client_id") or ""),
            issuer=await _issuer(url),
        )
    if context.get("valid_jwt"):  # SEP-1933: the workload's JWT is the grant
        return McpOAuthSpec(
            grant="jwt_bearer",
            client_id=client_id,
            assertion_env=ASSERTION_ENV,
            issuer=await _issuer(url),
        )
    if context.get("private_key_pem"):
        return McpOAuthSpec(
            grant="client_credentials",
            client_id=client_id,
            token_endpoint_auth="private_key_jwt",
            private_key_env=KEY_ENV,
            signing_algorithm=str(context.get("signing_algorithm") or "ES256"),
            issuer=await _issuer(url),
        )
    if scenario.startswith("auth/client-credentials"):
        return McpOAuthSpec(
            grant="client_credentials",
            client_id=client_id,
            client_secret_env=SECRET_ENV,
            issuer=await _issuer(url),
        )
    return McpOAuthSpec(
        grant="authorization_code",
        client_id=client_id,
        client_secret_env=SECRET_ENV if context.get("client_secret") else "",
        token_endpoint_auth="client_secret_basic" if context.get("client_secret") else "none",
        client_metadata_url=CIMD_URL,
        redirect_uri=REDIRECT_URI,
    )


def planned_calls(
    scenario: str, listed: list[RemoteTool], context: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """Which tools to call with which arguments: the scenario's own calls when it hands them
    over, the focal schema echoed back for the 2020-12 preservation scenario, else every tool
    with sample arguments."""
    if context.get("toolCalls"):
        return [
            (str(call["name"]), _omit_nulls(dict(call.get("arguments") or {}), listed, call))
            for call in context["toolCalls"]
        ]
    if scenario == "json-schema-2020-12-preservation":
        focal = next(t for t in listed if t.name == "json_schema_2020_12_tool")
        return [("json_schema_echo", {"schema": focal.input_schema})]
    return [(tool.name, sample_arguments(tool.input_schema)) for tool in listed]


def _omit_nulls(
    arguments: dict[str, Any], listed: list[RemoteTool], call: Mapping[str, Any]
) -> dict[str, Any]:
    """A ``null`` for an optional argument whose schema does not allow null means "not given"
    (what a model emits for an absent value); the gateway would refuse it as invalid."""
    tool = next((t for t in listed if t.name == call["name"]), None)
    if tool is None:
        return arguments
    required = set(tool.input_schema.get("required") or ())
    return {k: v for k, v in arguments.items() if v is not None or k in required}


async def _discover(spec: McpServerSpec, auth: AuthOptions | None) -> list[RemoteTool]:
    """The tools the server lists, through the same adapter the gateway uses."""
    hooks = SessionHooks(tools_changed=lambda: None, lost=lambda: None)
    connections = McpConnections({SERVER: spec}, {SERVER: ["_"]}, audit=_PrintAudit(), auth=auth)
    conn = connections.connection(SERVER)
    assert conn is not None
    options: OpenOptions = await conn.open_options()  # the same OAuth and question desk
    async with select_adapter(spec).open(
        SERVER, spec, hooks, connect_timeout_s=20, options=options
    ) as session:
        return (await session.list_tools()).tools


async def run(
    url: str,
    scenario: str = "",
    *,
    context: Mapping[str, Any] | None = None,
    protocol: str = "auto",
) -> int:
    context = context or {}
    oauth = await oauth_for(scenario, url, context)
    spec = McpServerSpec(url=url, protocol=protocol, oauth=oauth)  # type: ignore[arg-type]
    environ = {
        SECRET_ENV: str(context.get("client_secret") or ""),
        KEY_ENV: str(context.get("private_key_pem") or ""),
        ASSERTION_ENV: str(context.get("idp_id_token") or context.get("valid_jwt") or ""),
    }
    repository = InMemoryOAuthTokenRepository()
    auth = AuthOptions(
        sealer=_Cipher(), repository=repository, consent=stand_in_operator, environ=environ
    )
    listed = await _discover(spec, auth)
    tools = [
        ToolSpec(name=f"t.{tool.name}", server=SERVER, resolves_to=tool.name, action_class="read")
        for tool in listed
    ]
    profile = AgentProfile(
        id="conformance",
        version="1",
        match=ProfileMatch(tenant="conformance"),
        mcp_servers={SERVER: spec},
        tools=tools,
    )
    failures = 0
    settings = GatewaySettings(connect_timeout_s=20)
    connections = McpConnections.from_profiles(
        [profile], audit=_PrintAudit(), settings=settings, auth=auth
    )
    async with connections.running():
        gateway = McpGateway(connections, profile, session_id=scenario or "conformance")
        callable_tools = {d.name for d in gateway.definitions()}
        for name, arguments in planned_calls(scenario, listed, context):
            if f"t.{name}" not in callable_tools:
                print(f"{name}: not callable (not pinned as approved)", file=sys.stderr)
                continue
            request = ToolCallRequest(
                tool=f"t.{name}",
                arguments=arguments,
                meta=CallMeta(operation_id=f"op_{secrets.token_hex(6)}", principal=PRINCIPAL),
                ask=stand_in_caller,
            )
            try:
                result = await gateway.call(request)
            except ToolCallError as exc:
                failures += 1
                print(f"{name}: {exc.code.value} {exc}", file=sys.stderr)
            else:
                print(f"{name}: is_error={result.is_error} {result.content}")
    return 1 if failures and not scenario.startswith(("http-invalid", "auth/")) else 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m vocero.bench.conformance SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    protocol = os.environ.get("VOCERO_CONFORMANCE_PROTOCOL", "auto")
    return anyio.run(lambda: run(args[-1], scenario, context=context, protocol=protocol))


if __name__ == "__main__":
    raise SystemExit(main())
