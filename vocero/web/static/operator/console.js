// The operator console: the operator API of this server, read with the token typed in the page
// (kept in memory only, never stored), and the actions that API allows. docs/operators.md.
import { GENESIS, parseLossless, tombstoneOf, verifyRun } from "./chain.js";

const $ = (selector) => document.querySelector(selector);
const state = { token: "", tab: "sessions", session: "", charts: [] };
const AUDIT_PAGE = 500;

// ------------------------------------------------------------------------------- plumbing

async function api(path, { method = "GET", body, lossless = false } = {}) {
  const response = await fetch(path, {
    method,
    headers: {
      authorization: `Bearer ${state.token}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await response.text();
  const data = text ? (lossless ? parseLossless(text) : JSON.parse(text)) : {};
  if (!response.ok) {
    const error = data.error;
    const code = typeof error === "object" && error ? error.code : error;
    throw new ApiError(response.status, code || `HTTP ${response.status}`);
  }
  return data;
}

class ApiError extends Error {
  constructor(status, code) { super(`${status} ${code}`); this.status = status; this.code = code; }
}

// An address the console links to: only http(s) pages (a server's authorization page comes
// from that server's metadata). Anything else (javascript:, data:, …) is never put in an href.
function linkable(url) {
  try {
    const parsed = new URL(String(url), location.href);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key === "href") {
      const safe = linkable(value);
      if (safe !== null) node.setAttribute("href", safe);
    } else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "—");
const short = (id) => (id ? String(id).slice(0, 14) : "");
const json = (value) => JSON.stringify(value, (_, v) => (v && typeof v.raw === "string" ? Number(v.raw) : v));

function showError(error) {
  const box = $("#error");
  box.hidden = !error;
  box.textContent = error ? `Could not load: ${error.message}` : "";
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

// ---------------------------------------------------------------------------------- login

$("#login").addEventListener("submit", async (event) => {
  event.preventDefault();
  state.token = $("#token").value.trim();
  try {
    await api("/v1/sessions?limit=1");
  } catch (error) {
    $("#whoami").textContent = error.status === 401 ? "token refused" : `refused (${error.code})`;
    $("#tabs").hidden = true;
    return;
  }
  $("#token").value = "";
  $("#whoami").textContent = "signed in";
  $("#tabs").hidden = false;
  await show("sessions");
  refreshNeeds();
});

for (const button of document.querySelectorAll("#tabs [data-tab]")) {
  button.addEventListener("click", () => show(button.dataset.tab));
}
$("#refresh").addEventListener("click", () => show(state.tab));
$("#live-only").addEventListener("change", () => show("sessions"));

async function show(tab) {
  state.tab = tab;
  for (const button of document.querySelectorAll("#tabs [data-tab]")) {
    button.toggleAttribute("aria-current", button.dataset.tab === tab);
    if (button.dataset.tab === tab) button.setAttribute("aria-current", "page");
  }
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== `tab-${tab}`;
  try {
    showError(null);
    await { sessions: loadSessions, needs: loadNeeds, denials: loadDenials,
      latency: loadLatency, retention: loadRetention, profiles: loadProfiles }[tab]();
    document.body.dataset.loaded = tab;
  } catch (error) {
    showError(error);
  }
}

// ------------------------------------------------------------------------------- sessions

async function loadSessions() {
  const live = $("#live-only").checked ? "&live=true" : "";
  const { items } = await api(`/v1/sessions?limit=50${live}`);
  fill($("#sessions tbody"), items.map((s) => el("tr", {
    class: `pick${s.session_id === state.session ? " selected" : ""}`,
    dataset: { session: s.session_id },
    onclick: () => openSession(s.session_id),
  },
  el("td", {}, el("code", {}, s.session_id)),
  el("td", {}, el("span", { class: "state", dataset: { live: String(s.live) } }, s.state, s.live ? " · live" : "")),
  el("td", {}, `${s.profile.id} v${s.profile.version}`),
  el("td", {}, s.effective.locale || ""), el("td", {}, s.effective.turn_mode || ""),
  el("td", {}, `${s.effective.voice_profile_id || ""} ${s.effective.voice_version || ""}`),
  el("td", {}, when(s.created_at)))));
  if (state.session) await openSession(state.session);
}

async function openSession(sessionId) {
  state.session = sessionId;
  for (const row of document.querySelectorAll("#sessions tbody tr")) {
    row.classList.toggle("selected", row.dataset.session === sessionId);
  }
  const q = encodeURIComponent(sessionId);
  const [session, units, proposals, operations] = await Promise.all([
    api(`/v1/sessions/${q}`), api(`/v1/units?session_id=${q}`),
    api(`/v1/proposals?session_id=${q}`), api(`/v1/operations?session_id=${q}`),
  ]);
  $("#session").hidden = false;
  $("#session-id").textContent = session.session_id;
  $("#session-state").textContent = session.state;
  $("#effective").replaceChildren(...Object.entries({
    ...session.effective, tenant: session.identity.tenant_id, subject_ref: session.identity.subject_ref,
    started: when(session.created_at), closed: when(session.closed_at),
  }).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, String(v ?? "—"))]));
  renderTimeline(session.history, units.items);
  renderProposals(proposals.items);
  fill($("#operations tbody"), operations.items.map((o) => el("tr", {},
    el("td", {}, el("code", {}, short(o.operation_id))), el("td", {}, o.tool),
    el("td", {}, o.proposal_id ? `${short(o.proposal_id)} r${o.revision}` : "—"),
    el("td", {}, o.status, o.reason_code ? ` (${o.reason_code})` : ""), el("td", {}, o.attempts),
    el("td", {}, o.receipt ? receipt(o.receipt) : "—"))));
  await renderAudit(sessionId);
  document.body.dataset.session = sessionId;
}

function receipt(value) {
  const text = json(value);
  if (text.length <= 90) return el("code", {}, text);
  return el("details", {}, el("summary", {}, el("code", {}, `${text.slice(0, 90)}…`)), el("code", {}, text));
}

function renderTimeline(history, units) {
  const byGeneration = new Map();
  for (const unit of units) {
    if (!byGeneration.has(unit.generation_id)) byGeneration.set(unit.generation_id, []);
    byGeneration.get(unit.generation_id).push(unit);
  }
  $("#timeline").replaceChildren(...history.map((entry) => {
    const spoken = byGeneration.get(entry.generation_id) || [];
    return el("li", { class: entry.role },
      el("span", { class: "role" }, entry.role === "user" ? "Caller" : "Agent (heard)"),
      entry.status ? el("span", { class: "state" }, entry.status) : null, " ",
      el("span", { class: "said" }, entry.text || "—"),
      spoken.length ? el("ul", { class: "units" }, spoken.map((u) => el("li", {},
        el("span", { class: "disposition", dataset: { d: u.disposition } }, u.disposition),
        u.reason_code ? ` (${u.reason_code})` : "", ` ${u.kind}: “${u.text}”`,
        u.evidence.length ? el("span", { class: "muted" }, ` · evidence ${u.evidence.map((e) =>
          e.tool_call_id ? `tool ${short(e.tool_call_id)}` : `${e.source_id} v${e.version}`).join(", ")}`) : "",
        u.played_ms !== undefined && u.played_ms !== null ? el("span", { class: "muted" }, ` · played ${Math.round(u.played_ms)} ms`) : ""))) : null);
  }));
}

function renderProposals(items) {
  $("#proposals").replaceChildren(...(items.length ? items.map((p) => el("li", {},
    el("strong", {}, p.tool), " ", el("span", { class: "state" }, p.status),
    el("span", { class: "muted" }, ` ${p.action_class} · ${short(p.proposal_id)}`),
    el("ul", { class: "units" }, p.revisions.map((r) => el("li", {},
      `r${r.revision}: “${r.summary}”`, r.invalidated_at ? " (superseded)" : "",
      r.confirmations.map((c) => el("span", { class: "muted" }, ` · ${c.decision || "asked"} ${c.status}`)))))))
    : [el("li", { class: "empty" }, "none")]));
}

// ---------------------------------------------------------------------------- audit chain

async function auditPage(query) {
  return api(`/v1/audit?${query}`, { lossless: true });
}

async function auditRange(afterSeq, lastSeq) {
  // Every event of the chain with afterSeq < seq <= lastSeq, page by page.
  const events = [];
  let after = afterSeq;
  while (after < lastSeq) {
    const page = await auditPage(`after_seq=${after}&limit=${AUDIT_PAGE}`);
    for (const item of page.items) if (Number(item.seq) <= lastSeq) events.push(item);
    if (page.next_after_seq === undefined || !page.items.length) break;
    after = Number(page.next_after_seq);
  }
  return events.map(numbered);
}

async function verifyEach(events, claimFor) {
  // Each event on its own: its hash recomputed from its own prev_hash. A tombstone's claim is an
  // event of no session, not given to this operator: the server's check covers it.
  const results = new Map();
  let brokenAt = null;
  for (const event of events) {
    if (tombstoneOf(event.data) !== null) {
      results.set(event.seq, "tombstone");
      continue;
    }
    const one = await verifyRun([event], event.prev_hash, claimFor);
    results.set(event.seq, one.results.get(event.seq));
    if (!one.ok && (brokenAt === null || event.seq < brokenAt)) brokenAt = event.seq;
  }
  return { ok: brokenAt === null, checked: events.length, brokenAt, results };
}

function numbered(item) {
  return { ...item, seq: Number(item.seq) };
}

async function renderAudit(sessionId) {
  const mine = (await auditPage(`session_id=${encodeURIComponent(sessionId)}&limit=5000`));
  const items = mine.items.map(numbered);
  const status = $("#chain-status");
  if (!items.length) {
    status.textContent = "no events";
    fill($("#audit tbody"), []);
    return;
  }
  // Links are checked on the unfiltered chain: from the event before this session's first one
  // to its last one (events of other sessions sit between them).
  const first = items[0].seq, last = items[items.length - 1].seq;
  const run = await auditRange(first - 2 >= 0 ? first - 2 : 0, last);
  // The run's first event (the one before this session's first, when there is one) is
  // recomputed from its own prev_hash; every link after it is checked.
  const events = run;
  const previous = run.length ? run[0].prev_hash : GENESIS;
  const claims = new Map();
  const claimFor = async (seq) => {
    if (!claims.has(seq)) {
      const [claim] = await auditRange(seq - 1, seq);
      let named = [];
      if (claim) {
        const range = await auditRange(Number(claim.data.from_seq) - 1, Number(claim.data.to_seq));
        named = range.filter((e) => tombstoneOf(e.data) === seq);
      }
      claims.set(seq, { claim, named });
    }
    return claims.get(seq);
  };
  // An operator of some tenants gets only its tenants' events (`scoped`): the links across the
  // others' cannot be followed here, so each event is recomputed from its own prev_hash and the
  // links are the server's check of the whole chain (docs/operators.md "Tenancy").
  const verdict = mine.scoped ? await verifyEach(events, claimFor) : await verifyRun(events, previous, claimFor);
  const ok = verdict.ok && mine.chain.ok;
  status.dataset.ok = String(ok);
  status.textContent = !ok ? `chain broken at seq ${verdict.brokenAt ?? mine.chain.broken_at_seq}`
    : mine.scoped ? "events verified in this page; links verified by the server" : "chain verified in this page";
  const tombstones = [...verdict.results.values()].filter((v) => v === "tombstone").length;
  $("#chain-detail").textContent = `Recomputed here with WebCrypto SHA-256: ${verdict.checked} events `
    + `from seq ${events.length ? events[0].seq : "—"} to ${last} (${items.length} of this session`
    + `${tombstones ? `, ${tombstones} tombstoned by retention and claimed` : ""}). `
    + `Server check of the whole chain: ${mine.chain.ok ? "ok" : "broken"}, ${Number(mine.chain.count)} events.`;
  fill($("#audit tbody"), items.map((e) => el("tr", { dataset: { seq: String(e.seq) } },
    el("td", {}, e.seq), el("td", {}, when(e.at)), el("td", {}, e.kind), el("td", {}, e.actor),
    el("td", {}, el("code", {}, json(e.data))), el("td", {}, el("code", {}, e.hash.slice(0, 12))),
    el("td", { class: "verdict", dataset: { v: verdict.results.get(e.seq) || "" } },
      verdict.results.get(e.seq) || "?"))));
}

// ------------------------------------------------------------------------------ needs you

async function refreshNeeds() {
  try {
    const count = (await needs()).reduce((n, list) => n + list.length, 0);
    $("#needs-count").textContent = count ? String(count) : "";
  } catch { /* shown when the tab is opened */ }
}

async function needs() {
  const [followups, tools, voices, authorizations, operations, handoffs] = await Promise.all([
    api("/v1/followups?status=awaiting_approval").then((d) => d.items),
    api("/v1/tools").then((d) => d.items.filter((t) => t.status !== "approved")).catch(forbiddenAsEmpty),
    api("/v1/voices?status=pending").then((d) => d.items).catch(forbiddenAsEmpty),
    api("/v1/mcp/authorizations").then((d) => oneAServer(d.items)).catch(forbiddenAsEmpty),
    api("/v1/operations/unresolved").then((d) => d.items).catch(forbiddenAsEmpty),
    // a handoff a person still has to act on: a task follow-up (the web, or a failed transfer)
    api("/v1/handoffs").then((d) => d.items.filter((h) => h.followup_status === "task")).catch(forbiddenAsEmpty),
  ]);
  const pending = voices.flatMap((v) => v.versions.filter((x) => x.status === "pending").map((x) => ({ voice: v, version: x })));
  return [followups, tools, pending, authorizations, operations, handoffs];
}

// Each waiting node lists its own consent for a server; any one will do: the newest is shown.
function oneAServer(items) {
  const newest = new Map();
  for (const item of items) {
    const seen = newest.get(item.server);
    if (!seen || item.created_at > seen.created_at) newest.set(item.server, item);
  }
  return [...newest.values()];
}

function forbiddenAsEmpty(error) {
  if (error.status === 403) return [];
  throw error;
}

async function act(button, action) {
  button.disabled = true;
  try {
    await action();
    await loadNeeds();
  } catch (error) {
    button.disabled = false;
    button.after(el("span", { class: "error" }, ` ${error.code}`));
  }
}

async function loadNeeds() {
  const [followups, tools, versions, authorizations, operations, handoffs] = await needs();
  $("#needs-count").textContent = followups.length + tools.length + versions.length + authorizations.length + operations.length + handoffs.length || "";
  // a new "nothing waiting" item for each list: one DOM node can sit in one list only
  const none = () => [el("li", { class: "empty" }, "nothing waiting")];
  $("#needs-followups").replaceChildren(...(followups.length ? followups.map((f) => {
    const note = el("input", { placeholder: "note (optional)", maxlength: "500" });
    const button = el("button", { type: "button", onclick: () => act(button, () =>
      api(`/v1/followups/${encodeURIComponent(f.id)}/approve`, { method: "POST", body: { note: note.value } })) }, "Approve call-back");
    return el("li", { dataset: { followup: f.id } }, el("strong", {}, f.when_text), ` · ${f.reason} · due ${f.due_at} (${f.timezone}) · `,
      el("code", {}, short(f.session_id)), " ", note, " ", button);
  }) : none()));
  $("#needs-tools").replaceChildren(...(tools.length ? tools.map((t) => {
    const button = el("button", { type: "button", onclick: () => act(button, () =>
      api(`/v1/tools/${encodeURIComponent(t.server)}/${encodeURIComponent(t.tool)}/approvals`,
        { method: "POST", body: { definition_hash: t.observed_hash } })) }, "Approve new definition");
    return el("li", { dataset: { tool: `${t.server}/${t.tool}` } }, el("strong", {}, `${t.server}/${t.tool}`), ` · ${t.status} · approved `,
      t.definition_hash ? el("code", {}, t.definition_hash.slice(0, 19)) : "none yet", " → now ", el("code", {}, (t.observed_hash || "").slice(0, 19)), " ",
      t.observed_hash ? button : el("span", { class: "muted" }, "no new definition to approve"));
  }) : none()));
  $("#needs-voices").replaceChildren(...(versions.length ? versions.map(({ voice, version }) => {
    const button = el("button", { type: "button", onclick: () => act(button, () =>
      api(`/v1/voices/${encodeURIComponent(voice.voice_id)}/versions/${version.version}/approvals`, { method: "POST" })) }, "Approve as me");
    const by = version.approvals.map((a) => `${a.operator} (${a.role})`).join(", ") || "nobody yet";
    return el("li", { dataset: { voice: `${voice.voice_id}/${version.version}` } }, el("strong", {}, `${voice.voice_id} v${version.version}`),
      ` · ${voice.tenant} · ${voice.purpose} · approved by ${by} · `, button);
  }) : none()));
  $("#needs-operations").replaceChildren(...(operations.length ? operations.map(unresolvedCard) : none()));
  $("#needs-handoffs").replaceChildren(...(handoffs.length ? handoffs.map(handoffCard) : none()));
  $("#needs-authorizations").replaceChildren(...(authorizations.length ? authorizations.map((a) =>
    el("li", { dataset: { authorization: a.server } }, el("strong", {}, a.server),
      ` · asked ${when(a.created_at)} · until ${when(a.expires_at)} · `,
      linkable(a.authorization_url) !== null
        ? el("a", { href: a.authorization_url, target: "_blank", rel: "noopener noreferrer" },
          "Open the authorization page")
        : el("span", { class: "error" }, "the authorization page is not an http(s) address: not linked")))
    : none()));
}

// An operation whose outcome nobody could learn: what the caller heard, and the operator's
// resolution (committed or failed, with a required note). It is never sent again.
function unresolvedCard(o) {
  const note = el("input", { placeholder: "what you checked (required)", maxlength: "1000" });
  const resolve = (outcome, label) => {
    const button = el("button", { type: "button", onclick: () => {
      if (!note.value.trim()) { button.after(el("span", { class: "error" }, " a note is required")); return; }
      act(button, () => api(`/v1/operations/${encodeURIComponent(o.operation_id)}/resolution`,
        { method: "POST", body: { outcome, note: note.value } }));
    } }, label);
    return button;
  };
  const heard = o.heard.filter((h) => h.role === "assistant").slice(-3);
  return el("li", { dataset: { operation: o.operation_id } },
    el("strong", {}, o.tool), ` · ${o.status} (${o.reason_code}) · ${o.attempts} sent · since ${when(o.created_at)} · `,
    el("code", {}, short(o.session_id)),
    o.readback ? el("p", {}, "Read back: ", el("q", {}, o.readback.summary), ` (${o.readback.evidence})`) : null,
    el("p", {}, "The caller last heard: ", heard.length ? heard.map((h) => el("q", {}, h.text)) : "nothing"),
    note, " ", resolve("committed", "It went through"), " ", resolve("failed", "It did not go through"));
}

// A caller handed to a person: what they asked for, what they heard, and what is still pending
// in their session (questions never answered, operations not settled). The task follow-up is
// the person's to work from (GET /v1/followups).
function handoffCard(h) {
  const heard = h.heard.slice(-6);
  const pending = h.pending.map((p) => `${p.tool} (${p.kind} ${p.status})`).join(", ");
  return el("li", { dataset: { handoff: h.operation_id } },
    el("strong", {}, h.reason || "asked for a person"), ` · ${h.channel}`,
    h.outcome === "NOT transferred" ? " · the transfer failed" : "", ` · since ${when(h.created_at)} · task `,
    el("code", {}, short(h.followup_id)), " · ", el("code", {}, short(h.session_id)),
    el("p", {}, "They heard: ", heard.length ? heard.map((l) => el("q", { class: l.role }, l.text)) : "nothing"),
    el("p", {}, "Pending: ", pending || "nothing"));
}

// -------------------------------------------------------------------------------- charts

function clearCharts() {
  for (const chart of state.charts) chart.destroy();
  state.charts = [];
}

function bars(target, labels, values, { width = 300, height = 150, label = "count" } = {}) {
  const xs = labels.map((_, i) => i);
  const chart = new uPlot({
    width, height, legend: { show: false }, cursor: { show: false },
    scales: { x: { time: false, range: [-0.6, labels.length - 0.4] }, y: { range: [0, Math.max(1, ...values) * 1.15] } },
    axes: [
      { values: (_, ticks) => ticks.map((t) => labels[t] ?? ""), space: 24, size: 30, font: "10px system-ui" },
      { size: 36, font: "10px system-ui" },
    ],
    series: [{}, { label, fill: "rgba(36,87,197,0.55)", stroke: "#2457c5", paths: uPlot.paths.bars({ size: [0.8, 40] }), points: { show: false } }],
  }, [xs, values], target);
  state.charts.push(chart);
  return chart;
}

async function loadDenials() {
  clearCharts();
  const { items } = await api("/v1/denials");
  fill($("#denials tbody"), items.map((d) => el("tr", { dataset: { reason: d.reason_code } },
    el("td", {}, el("code", {}, d.reason_code)), el("td", {}, d.recorded), el("td", {}, d.this_process),
    el("td", { class: "muted" }, d.kinds.join(", ")))));
  const target = $("#denials-chart");
  target.replaceChildren();
  if (items.length) bars(target, items.map((d) => d.reason_code), items.map((d) => d.recorded || d.this_process), { width: 640, height: 180 });
  else target.textContent = "No denials recorded.";
}

async function loadLatency() {
  clearCharts();
  const { items, tools } = await api("/v1/latency");
  const grid = $("#latency");
  grid.replaceChildren(...items.map((stage) => {
    const figure = el("figure", { dataset: { stage: stage.stage } },
      el("figcaption", {}, stage.stage),
      el("div", { class: "figures" }, stage.count
        ? `${stage.count} observations · p50 ${stage.p50} · p90 ${stage.p90} · p95 ${stage.p95} · p99 ${stage.p99} ms`
        : "no observations yet"));
    const plot = el("div");
    figure.append(plot);
    if (stage.count) {
      const used = stage.buckets.filter((b) => b.count > 0);
      const lo = stage.buckets.indexOf(used[0]);
      const hi = stage.buckets.indexOf(used[used.length - 1]);
      const shown = stage.buckets.slice(Math.max(0, lo - 1), Math.min(stage.buckets.length, hi + 2));
      queueMicrotask(() => bars(plot, shown.map((b) => (b.le === null ? "+Inf" : `≤${b.le}`)), shown.map((b) => b.count)));
    }
    return figure;
  }));
  fill($("#tool-latency tbody"), tools.map((t) => el("tr", {}, el("td", {}, t.tool), el("td", {}, t.outcome),
    el("td", {}, t.count), el("td", {}, t.p50), el("td", {}, t.p95), el("td", {}, t.p99))));
}

async function loadRetention() {
  const { items } = await api("/v1/retention");
  fill($("#retention tbody"), items.map((r) => el("tr", {},
    el("td", {}, el("code", {}, r.data_class)),
    el("td", {}, typeof r.period === "number" ? `${r.period} days` : r.period.replace("_", " ")),
    el("td", {}, r.stored))));
}

// ------------------------------------------------------------------------------- profiles

async function loadProfiles() {
  const { items } = await api("/v1/profiles");
  fill($("#profiles tbody"), items.map((p) => el("tr", { dataset: { profile: p.profile_id } },
    el("td", {}, el("button", { type: "button", class: "link", onclick: () => loadProfileHistory(p.profile_id) }, p.profile_id)),
    el("td", {}, p.version), el("td", {}, `r${p.revision}`), el("td", {}, el("code", {}, p.content_hash.slice(0, 12))),
    el("td", {}, `${p.change} by ${p.changed_by}, ${when(p.changed_at)}`))));
}

async function loadProfileHistory(profileId) {
  const { items } = await api(`/v1/profiles/${encodeURIComponent(profileId)}/versions`);
  $("#profile-history-title").hidden = false;
  $("#profile-history-title").textContent = `${profileId}: every revision`;
  $("#profile-history").hidden = false;
  fill($("#profile-history tbody"), items.slice().reverse().map((r) => {
    const button = el("button", { type: "button", onclick: async () => {
      button.disabled = true;
      try {
        await api(`/v1/profiles/${encodeURIComponent(profileId)}/rollback`,
          { method: "POST", body: { version: `r${r.revision}`, reason: "console" } });
        await loadProfiles();
        await loadProfileHistory(profileId);
      } catch (error) {
        button.disabled = false;
        button.after(el("span", { class: "error" }, ` ${error.code}`));
      }
    } }, "Roll back to this");
    return el("tr", { dataset: { revision: String(r.revision) } }, el("td", {}, `r${r.revision}`), el("td", {}, r.version),
      el("td", {}, el("code", {}, r.content_hash.slice(0, 12))), el("td", {}, r.loaded_by), el("td", {}, when(r.loaded_at)),
      el("td", {}, r.active ? el("strong", {}, "active") : button));
  }));
}
