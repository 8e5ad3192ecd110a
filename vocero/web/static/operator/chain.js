// The audit hash chain, verified in the page (docs/security.md, vocero/store/hashchain.py):
//
//   hash = sha256_hex(prev_hash + canonical_json({seq, chain, session_id, kind, actor, at, data}))
//
// canonical JSON is Python's json.dumps(sort_keys=True, separators=(",", ":"),
// ensure_ascii=False): numbers must be written exactly as Python writes them, so API bodies are
// parsed here without losing whether a number was an integer or a float (`parseLossless`), and
// floats are written back with Python's repr rules (`pyFloat`). `at` is UTC with six fraction
// digits. A tombstoned event ({"$tombstone": S}) only links; the event S later in the chain must
// be an intact `retention.tombstoned` event whose `events_sha256` and `count` match the events
// that name it (vocero/store/tombstones.py).

export const GENESIS = "0".repeat(64);
const TOMBSTONE = "$tombstone";
const TOMBSTONED_KIND = "retention.tombstoned";

class Num {
  constructor(raw) { this.raw = raw; }
  get isFloat() { return /[.eE]/.test(this.raw); }
  valueOf() { return Number(this.raw); }
  toJSON() { return Number(this.raw); }
}

// --------------------------------------------------------------------------- lossless JSON

export function parseLossless(text) {
  let i = 0;
  const ws = () => { while (i < text.length && " \t\n\r".includes(text[i])) i++; };
  const fail = (what) => { throw new SyntaxError(`JSON: ${what} at ${i}`); };
  function value() {
    ws();
    const c = text[i];
    if (c === "{") return object();
    if (c === "[") return array();
    if (c === '"') return string();
    if (c === "t" && text.startsWith("true", i)) { i += 4; return true; }
    if (c === "f" && text.startsWith("false", i)) { i += 5; return false; }
    if (c === "n" && text.startsWith("null", i)) { i += 4; return null; }
    return number();
  }
  function object() {
    i++; const out = {}; ws();
    if (text[i] === "}") { i++; return out; }
    for (;;) {
      ws(); const key = string(); ws();
      if (text[i++] !== ":") fail("expected :");
      out[key] = value(); ws();
      const c = text[i++];
      if (c === "}") return out;
      if (c !== ",") fail("expected , or }");
    }
  }
  function array() {
    i++; const out = []; ws();
    if (text[i] === "]") { i++; return out; }
    for (;;) {
      out.push(value()); ws();
      const c = text[i++];
      if (c === "]") return out;
      if (c !== ",") fail("expected , or ]");
    }
  }
  function string() {
    if (text[i] !== '"') fail("expected string");
    const start = i++;
    while (i < text.length && text[i] !== '"') i += text[i] === "\\" ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i));
  }
  function number() {
    const match = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!match) fail("unexpected character");
    i += match[0].length;
    return new Num(match[0]);
  }
  const out = value(); ws();
  if (i !== text.length) fail("trailing text");
  return out;
}

// -------------------------------------------------------------------------- canonical JSON

export function pyFloat(x) {
  if (!Number.isFinite(x)) throw new RangeError("NaN and infinities are not JSON");
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mantissa, expText] = x.toExponential().split("e");
  const exp = Number(expText);
  const digits = mantissa.replace("-", "").replace(".", "");
  const sign = x < 0 ? "-" : "";
  if (exp < -4 || exp >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const e = Math.abs(exp) < 10 ? `0${Math.abs(exp)}` : `${Math.abs(exp)}`;
    return `${sign}${m}e${exp < 0 ? "-" : "+"}${e}`;
  }
  if (exp < 0) return `${sign}0.${"0".repeat(-exp - 1)}${digits}`;
  const whole = digits.slice(0, exp + 1).padEnd(exp + 1, "0");
  const fraction = digits.slice(exp + 1);
  return `${sign}${whole}.${fraction || "0"}`;
}

export function canonical(value) {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (value instanceof Num) return value.isFloat ? pyFloat(Number(value.raw)) : BigInt(value.raw).toString();
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : pyFloat(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  const keys = Object.keys(value).sort(byCodePoint);
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(",")}}`;
}

function byCodePoint(a, b) {
  // Python sorts str keys by code point; JS's default sort compares UTF-16 units.
  const x = Array.from(a), y = Array.from(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i].codePointAt(0) - y[i].codePointAt(0);
    if (d) return d;
  }
  return x.length - y.length;
}

export function formatAt(at) {
  // "2026-12-01T10:00:00.5Z" or "...+00:00" -> "2026-12-01T10:00:00.500000Z" (UTC)
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/.exec(at);
  if (!m) throw new RangeError(`not an RFC 3339 time: ${at}`);
  if (m[3] !== "Z" && m[3] !== "+00:00") {
    const d = new Date(at);
    const micro = (m[2] || "").padEnd(6, "0").slice(3, 6);
    return `${d.toISOString().slice(0, 19)}.${d.toISOString().slice(20, 23)}${micro}Z`;
  }
  return `${m[1]}.${(m[2] || "").padEnd(6, "0").slice(0, 6)}Z`;
}

export async function sha256Hex(text) {
  const bytes = new TextEncoder().encode(text);
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

export async function entryHash(item) {
  const payload = {
    seq: item.seq, chain: item.chain, session_id: item.session_id, kind: item.kind,
    actor: item.actor, at: formatAt(item.at), data: item.data,
  };
  return sha256Hex(item.prev_hash + canonical(payload));
}

export function tombstoneOf(data) {
  const keys = Object.keys(data || {});
  if (keys.length !== 1 || keys[0] !== TOMBSTONE) return null;
  const by = data[TOMBSTONE];
  return by instanceof Num && !by.isFloat ? Number(by.raw) : null;
}

// ------------------------------------------------------------------------------ the verifier

// Verify a contiguous run of events of one chain (in seq order). `previousHash` is the hash of
// the event before the first (GENESIS at the start of the chain). `claimFor(S)` returns
// {claim, named}: the event S and every event of the chain whose tombstone names S (the page
// fetches the claim's range, from_seq..to_seq, for that). Returns {ok, checked, brokenAt,
// results: Map(seq -> "recomputed" | "tombstone" | "broken")}.
export async function verifyRun(events, previousHash, claimFor) {
  const results = new Map();
  const tombstoned = new Map();
  let last = previousHash;
  let brokenAt = null;
  const broken = (seq) => {
    results.set(seq, "broken");
    if (brokenAt === null || seq < brokenAt) brokenAt = seq;
  };
  for (const event of events) {
    const linked = event.prev_hash === last;
    const by = tombstoneOf(event.data);
    if (by !== null) {
      if (!tombstoned.has(by)) tombstoned.set(by, []);
      tombstoned.get(by).push(event);
      results.set(event.seq, "tombstone");
      if (!linked) broken(event.seq);
    } else if (linked && (await entryHash(event)) === event.hash) {
      results.set(event.seq, "recomputed");
    } else {
      broken(event.seq);
    }
    last = event.hash;
  }
  for (const [by, mine] of tombstoned) {
    const { claim, named } = (await claimFor(by)) || {};
    const digest = named ? await sha256Hex(named.map((e) => `${e.seq}:${e.hash}`).join(";")) : "";
    const honest = claim && named && claim.kind === TOMBSTONED_KIND
      && tombstoneOf(claim.data) === null && (await entryHash(claim)) === claim.hash
      && claim.data.events_sha256 === digest && Number(claim.data.count) === named.length
      && mine.every((e) => e.seq < by && named.some((n) => n.seq === e.seq && n.hash === e.hash));
    if (!honest) for (const e of mine) broken(e.seq);
  }
  return { ok: brokenAt === null, checked: events.length, brokenAt, results };
}
