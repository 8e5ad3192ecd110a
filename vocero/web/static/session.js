// One realtime connection: wraps every outgoing payload in the envelope of docs/protocol.md
// (per-direction sequence from 1, session_id once known) and unwraps incoming frames to (name,
// payload).

function hex(bytes) {
  const random = crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class Session {
  constructor(url, { onFrame, onClose }) {
    this.sessionId = "";
    this.sequence = 0;
    this.traceId = hex(16);
    this.ws = new WebSocket(url);
    this.ws.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      const name = frame.type.replace(/^vocero\./, "");
      onFrame(name, frame.data.payload);
    };
    this.ws.onclose = (event) => onClose(event);
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = reject;
    });
  }

  get isOpen() {
    return this.ws.readyState === WebSocket.OPEN;
  }

  // Sends `vocero.<name>`; returns false when the socket is not open.
  send(name, payload = {}) {
    if (!this.isOpen) return false;
    this.sequence += 1;
    this.ws.send(
      JSON.stringify({
        specversion: "1.0",
        type: `vocero.${name}`,
        id: `evt_${hex(12)}`,
        time: new Date().toISOString(),
        source: "web-client",
        subject: this.sessionId ? `session/${this.sessionId}` : "",
        traceparent: `00-${this.traceId}-${hex(8)}-01`,
        data: { session_id: this.sessionId, sequence: this.sequence, payload },
      }),
    );
    return true;
  }

  close() {
    this.ws.close(1000);
  }
}
