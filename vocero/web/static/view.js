// Rendering only: every function here writes server text with textContent, never as HTML.

const $ = (id) => document.getElementById(id);

const ERROR_SENTENCES = {
  "auth.denied": "That access token was not accepted.",
  "auth.no_profile": "There is no agent set up for this account.",
  "protocol.malformed": "The page sent a message the server could not read.",
  "protocol.unknown_event": "The page sent a message the server does not know.",
  "protocol.invalid_payload": "The page sent a message with missing or wrong fields.",
  "protocol.sequence": "Messages arrived out of order. Please reconnect.",
  "protocol.frame_too_large": "A message was too large to send.",
  "protocol.rate_limited": "The page is sending too fast. It will slow down.",
  "protocol.connect_required": "The session was not opened properly. Please reconnect.",
  "protocol.session_mismatch": "The page lost track of the session. Please reconnect.",
  "protocol.invalid_state": "That is not possible right now.",
  "service.busy": "The assistant is busy. Please try again in a moment.",
  "service.restarting": "The service is restarting. Please reconnect in a moment.",
  "service.error": "Something went wrong on the server.",
  "speech.input_unavailable": "Speech recognition is not available right now.",
  "speech.output_unavailable": "The assistant's voice is not available right now.",
  "assistant.timeout": "The assistant took too long to answer.",
  "assistant.unavailable": "The assistant is not available right now.",
  "tool.proposal_changed": "That request changed before it was confirmed. Please check it again.",
  "tool.confirmation_invalid": "That confirmation is no longer valid.",
  "tool.denied": "That action is not allowed.",
  "tool.temporarily_unavailable": "That service is not answering right now.",
  "tool.invalid_result": "That service gave an answer that could not be used.",
  "tool.unavailable": "That service is not available right now.",
  "tool.disabled_pending_review": "That action is switched off until it is reviewed.",
  "tool.invalid_arguments": "That request had details the service could not accept.",
  "tool.failed": "That action failed.",
};

export function errorSentence({ user_message_key: key, code }) {
  return ERROR_SENTENCES[key] || `Something went wrong (${code || key || "unknown error"}).`;
}

function entry(kind, key) {
  const list = $("conversation");
  let item = key && list.querySelector(`[data-key="${CSS.escape(key)}"]`);
  if (!item) {
    item = document.createElement("li");
    item.className = kind;
    if (key) item.dataset.key = key;
    list.append(item);
  }
  item.scrollIntoView({ block: "nearest" });
  return item;
}

export function showState(state) {
  $("state").dataset.state = state;
  $("state").textContent = state.toLowerCase().replace(/_/g, " ");
}

// Partials (whose turn_id may still be empty) share one pending line; the final takes it over.
export function showTranscript(turnId, text, final) {
  const item = entry("user", "partial");
  item.textContent = text;
  item.classList.toggle("partial", !final);
  if (final) item.dataset.key = `turn:${turnId}`;
}

export function appendAssistantText(generationId, text) {
  const item = entry("assistant", `gen:${generationId}`);
  let words = item.querySelector(".words");
  if (!words) {
    words = document.createElement("span");
    words.className = "words";
    item.append(words);
  }
  words.textContent = words.textContent ? `${words.textContent} ${text}` : text;
}

// Marks an answer that did not finish; for an interruption, the words the caller never heard
// are struck out.
export function showCompleted(generationId, status, heardText) {
  if (status === "completed") return;
  const item = entry("assistant", `gen:${generationId}`);
  item.classList.add(status);
  const words = item.querySelector(".words");
  if (status === "interrupted" && words && words.textContent.startsWith(heardText)) {
    const unheard = document.createElement("s");
    unheard.textContent = words.textContent.slice(heardText.length);
    words.replaceChildren(heardText, unheard);
  }
  const note = document.createElement("small");
  note.className = "heard";
  note.textContent =
    status === "interrupted" ? `Interrupted. Heard: “${heardText}”` : `Answer ${status}.`;
  item.append(note);
}

export function showNote(text, kind = "note") {
  entry(kind).textContent = text;
}

// A read changes nothing, so it is never shown as an action: one line that says it looked
// something up. Writes keep every status ("Action committed" means something was changed).
const LOOKUP_WORDS = {
  authorized: "Looking it up…",
  dispatch_pending: "Looking it up…",
  in_flight: "Looking it up…",
  committed: "Looked it up",
  rejected: "Lookup refused",
  unknown: "Lookup failed",
};

export function showToolStatus(payload) {
  const { tool_call_id: id, proposal_id: proposal, status, reason_code: reason } = payload;
  const lookup = payload.kind === "lookup";
  const key = lookup ? `lookup:${id}` : `tool:${id || proposal}:${status}`;
  const item = entry(lookup ? "tool lookup" : "tool", id || proposal ? key : null);
  const words = lookup ? LOOKUP_WORDS[status] || "Looking it up…" : `Action ${status.replace(/_/g, " ")}`;
  item.textContent = `${words}${reason ? ` (${reason})` : ""}`;
  const card = proposal && document.querySelector(`[data-key="proposal:${CSS.escape(proposal)}"]`);
  if (card) card.dataset.status = status;
}

// A confirmation card whose buttons call decide("confirm" | "reject") once.
export function showConfirmation({ proposal_id: id, revision, tool, summary, fields }, decide) {
  const card = entry("confirmation", `proposal:${id}`);
  card.replaceChildren();
  card.dataset.revision = revision;
  const title = document.createElement("strong");
  title.textContent = summary;
  const details = document.createElement("dl");
  for (const [name, value] of Object.entries({ tool, ...fields })) {
    const term = document.createElement("dt");
    const description = document.createElement("dd");
    term.textContent = name.replace(/_/g, " ");
    description.textContent = typeof value === "object" ? JSON.stringify(value) : String(value);
    details.append(term, description);
  }
  const buttons = ["confirm", "reject"].map((decision) => {
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.decision = decision;
    button.textContent = decision === "confirm" ? "Confirm" : "Reject";
    button.onclick = () => {
      for (const b of buttons) b.disabled = true;
      card.dataset.decision = decision;
      const chosen = document.createElement("small");
      chosen.textContent = decision === "confirm" ? " You confirmed." : " You rejected it.";
      card.append(chosen);
      decide(decision);
    };
    return button;
  });
  card.append(title, details, ...buttons);
}

// A server's question during a tool call: answered by voice. A URL-mode question shows its
// link here, with the server named; the agent never reads a link out.
export function showQuestion({ question_id: id, server, mode, fields, link }) {
  const card = entry("question", `question:${id}`);
  card.replaceChildren();
  const title = document.createElement("strong");
  title.textContent = `${server} asks`;
  card.append(title);
  if (mode === "url" && link && /^https:\/\/|^http:\/\/(localhost|127\.0\.0\.1)[:/]/.test(link.url)) {
    const note = document.createElement("p");
    note.textContent = link.message || `${link.server} needs you to open a page.`;
    const anchor = document.createElement("a");
    anchor.href = link.url;
    anchor.target = "_blank";
    anchor.rel = "noopener noreferrer";
    anchor.textContent = `Open ${link.server}: ${link.url}`;
    card.append(note, anchor);
    return;
  }
  const list = document.createElement("ul");
  for (const field of fields) {
    const item = document.createElement("li");
    item.textContent = field.title;
    list.append(item);
  }
  const hint = document.createElement("small");
  hint.textContent = "Answer by voice or type it below.";
  card.append(list, hint);
}

export function showError(text) {
  const box = $("errors");
  box.textContent = text;
  box.hidden = !text;
}

export function setConnected(connected, turnMode) {
  $("connect").disabled = connected;
  $("close").disabled = !connected;
  $("token").disabled = connected;
  $("turn-mode").disabled = connected;
  $("text").disabled = !connected;
  $("send").disabled = !connected;
  $("talk").hidden = turnMode !== "push_to_talk";
  $("talk").disabled = !connected;
}
