// A small client of the Centrifuge protocol (v2, JSON encoding) for the host page:
// connect with a token, RPC, subscriptions that recover what they missed (offset and
// epoch) after a drop or a server restart, answers to server pings, and reconnection
// with exponential back-off and jitter. It reaches the hub through the first of its
// transports that opens (transports.js: WebSocket, then HTTP-streaming, then SSE) and
// stays on the one that worked. Events: "state" ({state, reason}) and "unauthorized"
// ({reason}) when the token is refused or expired (no reconnect then).

const REFUSED_TOKEN = new Set([101, 109]);

export class CentrifugeClient extends EventTarget {
  constructor(transports, token, { minDelay = 500, maxDelay = 15000, timeout = 10000 } = {}) {
    super();
    this.transports = transports;
    this.transportIndex = 0;
    this.transportWorked = false;
    this.token = token;
    this.minDelay = minDelay;
    this.maxDelay = maxDelay;
    this.timeout = timeout;
    this.state = "disconnected";
    this.nextId = 1;
    this.pending = new Map();       // command id -> {resolve, reject, timer}
    this.subscriptions = new Map(); // channel -> Subscription
    this.attempts = 0;
    this.closedByUser = false;
  }

  connect() {
    this.closedByUser = false;
    this.open();
  }

  disconnect() {
    this.closedByUser = true;
    clearTimeout(this.retryTimer);
    if (this.transport) this.transport.close();
    this.setState("disconnected", "closed by the page");
  }

  setState(state, reason = "") {
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: { state, reason } }));
  }

  open() {
    this.setState("connecting", this.attempts ? `attempt ${this.attempts + 1}` : "");
    const transport = this.transports[this.transportIndex]();
    this.transport = transport;
    this.lastDisconnect = null;
    const id = this.nextId++;
    const connected = this.expect(id);
    transport.start(JSON.stringify({ id, connect: { token: this.token, name: "gondola-host-page" } }), {
      onMessage: (text) => {
        if (this.transport === transport) this.receive(text);
      },
      onClose: ({ reason, code }) => {
        if (this.transport === transport) this.transportClosed(transport, reason, code || this.lastDisconnect?.code || 0);
      },
    });
    this.handshake(connected, transport);
  }

  transportClosed(transport, reason, code) {
    this.failPending(`connection closed (${reason})`);
    if (this.closedByUser) return;
    if (code >= 3500 && code < 4000) {
      this.setState("disconnected", this.lastDisconnect?.reason || reason);
      return;
    }
    // A transport that never carried anything before any worked: try the next one.
    if (!transport.opened && !this.transportWorked) this.transportIndex = (this.transportIndex + 1) % this.transports.length;
    this.scheduleReconnect(reason);
  }

  scheduleReconnect(reason) {
    const delay = Math.min(this.maxDelay, this.minDelay * 2 ** this.attempts) * (0.8 + Math.random() * 0.4);
    this.attempts += 1;
    this.setState("reconnecting", `${reason}; retrying in ${(delay / 1000).toFixed(1)} s`);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  async handshake(connected, transport) {
    try {
      const reply = await connected;
      transport.bind(reply);
      this.transportWorked = true;
      this.attempts = 0;
      this.setState("connected", `client ${reply.client} over ${transport.name}`);
      for (const subscription of this.subscriptions.values()) subscription.resubscribe();
    } catch (error) {
      if (REFUSED_TOKEN.has(error.code)) {
        this.closedByUser = true;
        transport.close();
        this.setState("disconnected", error.message);
        this.dispatchEvent(new CustomEvent("unauthorized", { detail: { reason: error.message, code: error.code } }));
      }
    }
  }

  /** Waits for the reply to command `id`, for at most the timeout. */
  expect(id) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(Object.assign(new Error("no reply in time"), { code: 0 }));
      }, this.timeout);
      this.pending.set(id, { resolve, reject, timer });
    });
  }

  send(command) {
    if (this.state !== "connected") return Promise.reject(Object.assign(new Error("not connected"), { code: 0 }));
    const id = this.nextId++;
    const reply = this.expect(id);
    try {
      this.transport.send(JSON.stringify({ id, ...command }));
    } catch (error) {
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      clearTimeout(waiting.timer);
      return Promise.reject(Object.assign(new Error(error.message), { code: 0 }));
    }
    return reply;
  }

  failPending(reason) {
    for (const { reject, timer } of this.pending.values()) {
      clearTimeout(timer);
      reject(Object.assign(new Error(reason), { code: 0 }));
    }
    this.pending.clear();
  }

  receive(text) {
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      const message = JSON.parse(line);
      if (Object.keys(message).length === 0) {
        try {
          this.transport.send("{}"); // a server ping: pong
        } catch {
          // the transport is closing; its close reconnects
        }
        continue;
      }
      if (message.id) {
        const waiting = this.pending.get(message.id);
        if (!waiting) continue;
        this.pending.delete(message.id);
        clearTimeout(waiting.timer);
        if (message.error) {
          waiting.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
        } else {
          const [body] = Object.values(message).filter((value) => typeof value === "object");
          waiting.resolve(body || {});
        }
      } else if (message.push) {
        this.dispatchPush(message.push);
      }
    }
  }

  dispatchPush(push) {
    if (push.disconnect) {
      this.lastDisconnect = push.disconnect;
      this.failPending(push.disconnect.reason);
      return;
    }
    const subscription = this.subscriptions.get(push.channel);
    if (subscription && push.pub) subscription.deliver(push.pub);
  }

  /** Calls an RPC method; resolves with its data. */
  async rpc(method, data = {}) {
    const reply = await this.send({ rpc: { method, data } });
    return reply.data || {};
  }

  /** The last `limit` publications of a channel, newest first. */
  async history(channel, limit) {
    const reply = await this.send({ history: { channel, limit, reverse: true } });
    return reply.publications || [];
  }

  /**
   * Subscribes (now, or when connected) and again after every reconnect, recovering what
   * was missed. `onSubscribed(result, recovering)` gets the reply (its `data`, the
   * publications recovered); `onPublication(data, pub)` every publication once.
   */
  subscribe(channel, { onSubscribed = () => {}, onPublication = () => {}, onError = () => {}, data } = {}) {
    const subscription = new Subscription(this, channel, { onSubscribed, onPublication, onError, data });
    this.subscriptions.set(channel, subscription);
    if (this.state === "connected") subscription.resubscribe();
    return subscription;
  }

  unsubscribe(channel) {
    const subscription = this.subscriptions.get(channel);
    if (!subscription) return;
    this.subscriptions.delete(channel);
    if (this.state === "connected") this.send({ unsubscribe: { channel } }).catch(() => {});
  }
}

class Subscription {
  constructor(client, channel, handlers) {
    this.client = client;
    this.channel = channel;
    this.handlers = handlers;
    this.offset = null;
    this.epoch = null;
  }

  async resubscribe() {
    const recovering = this.epoch !== null;
    const request = { channel: this.channel };
    if (this.handlers.data !== undefined) request.data = this.handlers.data;
    if (recovering) Object.assign(request, { recover: true, offset: this.offset, epoch: this.epoch });
    try {
      const result = await this.client.send({ subscribe: request });
      if (result.recoverable || result.positioned) {
        this.epoch = result.epoch || "";
        if (!recovering || !result.recovered) this.offset = result.offset || 0;
      }
      this.handlers.onSubscribed(result, recovering);
      for (const pub of result.publications || []) this.deliver(pub);
    } catch (error) {
      this.handlers.onError(error);
    }
  }

  deliver(pub) {
    if (pub.offset !== undefined && this.offset !== null) {
      if (pub.offset <= this.offset) return; // already seen
      this.offset = pub.offset;
    }
    this.handlers.onPublication(pub.data, pub);
  }
}
