// The ways the host page reaches the hub, tried in order until one opens: a WebSocket,
// then HTTP-streaming, then Server-Sent Events, the fallbacks for networks that break
// WebSocket (the same order centrifuge-js tries them). Each takes the connect command in
// `start` and calls `onMessage(text)` for every message the server sends and `onClose(reason)`
// once, when it ends; `opened` tells whether anything ever arrived on it. On the two HTTP
// transports later commands are posted to /emulation with the session and node that the
// connect reply named (`bind`).

export function transportsFor(location) {
  const secure = location.protocol === "https:";
  const base = `${location.protocol}//${location.host}`;
  return [
    () => new WebSocketTransport(`${secure ? "wss" : "ws"}://${location.host}/connection/websocket`),
    () => new HTTPStreamTransport("http_stream", `${base}/connection/http_stream`, `${base}/emulation`),
    () => new SSETransport("sse", `${base}/connection/sse`, `${base}/emulation`),
  ];
}

class WebSocketTransport {
  constructor(url) {
    this.name = "websocket";
    this.url = url;
    this.opened = false;
  }

  static get supported() {
    return typeof WebSocket !== "undefined";
  }

  start(connectCommand, { onMessage, onClose }) {
    if (!WebSocketTransport.supported) {
      onClose({ reason: "WebSocket is not available", code: 0 });
      return;
    }
    const socket = new WebSocket(this.url);
    this.socket = socket;
    socket.onopen = () => socket.send(connectCommand);
    socket.onmessage = (event) => {
      this.opened = true;
      onMessage(event.data);
    };
    socket.onclose = (event) => onClose({ reason: event.reason || `closed with ${event.code}`, code: event.code });
  }

  bind() {}

  send(text) {
    if (!this.socket || this.socket.readyState !== WebSocket.OPEN) throw new Error("not connected");
    this.socket.send(text);
  }

  close() {
    if (this.socket) this.socket.close(1000, "bye");
  }
}

// Commands after the connect go to /emulation, addressed to the session on its node.
class EmulatedTransport {
  constructor(name, url, emulationURL) {
    this.name = name;
    this.url = url;
    this.emulationURL = emulationURL;
    this.opened = false;
    this.session = "";
    this.node = "";
    this.closed = false;
  }

  bind({ session, node }) {
    this.session = session;
    this.node = node;
  }

  send(text) {
    if (!this.session) throw new Error("not connected");
    fetch(this.emulationURL, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ session: this.session, node: this.node, data: text }),
    }).catch(() => {});
  }

  finish(onClose, reason) {
    if (this.closed) return;
    this.closed = true;
    onClose({ reason, code: 0 });
  }
}

class HTTPStreamTransport extends EmulatedTransport {
  start(connectCommand, { onMessage, onClose }) {
    this.abort = new AbortController();
    fetch(this.url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: connectCommand,
      signal: this.abort.signal,
    })
      .then(async (response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let pending = "";
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          pending += decoder.decode(value, { stream: true });
          let newline;
          while ((newline = pending.indexOf("\n")) >= 0) {
            const line = pending.slice(0, newline);
            pending = pending.slice(newline + 1);
            this.opened = true;
            onMessage(line);
          }
        }
        this.finish(onClose, "stream ended");
      })
      .catch((error) => this.finish(onClose, `stream failed: ${error.message}`));
  }

  close() {
    this.closed = true;
    if (this.abort) this.abort.abort();
  }
}

class SSETransport extends EmulatedTransport {
  start(connectCommand, { onMessage, onClose }) {
    if (typeof EventSource === "undefined") {
      this.finish(onClose, "EventSource is not available");
      return;
    }
    const url = new URL(this.url);
    url.searchParams.set("cf_connect", connectCommand);
    const source = new EventSource(url.toString());
    this.source = source;
    source.onmessage = (event) => {
      this.opened = true;
      onMessage(event.data);
    };
    // EventSource would reconnect by itself with the same connect command; the client decides instead.
    source.onerror = () => {
      source.close();
      this.finish(onClose, "event stream ended");
    };
  }

  close() {
    this.closed = true;
    if (this.source) this.source.close();
  }
}
