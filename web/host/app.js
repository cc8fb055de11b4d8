// The host page: sign-in, the trips the user hosts, and a trip's live view (map, travellers,
// fences and their events, broadcasts, announcements, chat, events), all through the hub's WebSocket (or its HTTP fallbacks).
import { CentrifugeClient } from "./centrifuge.js";
import { transportsFor } from "./transports.js";
import { FencePanel } from "./fences.js";
import { ResortMap } from "./map.js";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "gondola.host.token";
const USER_KEY = "gondola.host.user";
let client = null;
let config = {};
let trip = null;

function show(view) {
  for (const id of ["sign-in", "trips", "trip"]) $(id).hidden = id !== view;
  $("sign-out").hidden = view === "sign-in";
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function signIn(reason = "") {
  client?.disconnect();
  client = null;
  sessionStorage.removeItem(TOKEN_KEY);
  $("sign-in-reason").textContent = reason;
  $("sign-in-reason").hidden = !reason;
  $("dev-login").hidden = !config.dev_login;
  $("telegram-login").hidden = !config.telegram_bot;
  $("no-sign-in").hidden = config.dev_login || config.telegram_bot;
  if (config.telegram_bot && !$("telegram-login").firstChild) {
    window.onTelegramAuth = (user) => exchange("/api/auth/telegram", user);
    const widget = document.createElement("script");
    widget.async = true;
    widget.src = "https://telegram.org/js/telegram-widget.js?22";
    widget.dataset.telegramLogin = config.telegram_bot;
    widget.dataset.size = "large";
    widget.dataset.onauth = "onTelegramAuth(user)";
    $("telegram-login").append(widget);
  }
  show("sign-in");
}

async function exchange(path, body) {
  const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) {
    signIn(answer.error?.message || `sign-in refused (${response.status})`);
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, answer.token);
  sessionStorage.setItem(USER_KEY, JSON.stringify(answer.user));
  start(answer.token);
}

function start(token) {
  client = new CentrifugeClient(transportsFor(location), token);
  client.addEventListener("state", ({ detail }) => {
    $("connection").dataset.state = detail.state;
    $("connection").textContent = detail.state === "connected" ? "live" : detail.state;
    $("connection").title = detail.reason;
  });
  client.addEventListener("unauthorized", ({ detail }) => signIn(`Signed out: ${detail.reason}`));
  let listed = false;
  client.addEventListener("state", ({ detail }) => {
    if (detail.state === "connected" && !listed) {
      listed = true;
      listTrips();
    }
  });
  client.connect();
}

async function listTrips() {
  show("trips");
  const { trips } = await client.rpc("trip.list");
  const hosted = trips.filter((t) => t.role === "host");
  $("trip-list").replaceChildren(...hosted.map((t) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.dataset.trip = t.id;
    button.textContent = `${t.name} — ${t.resort}${t.running ? " (under way)" : ""}`;
    button.addEventListener("click", () => openTrip(t));
    item.append(button);
    return item;
  }));
  $("no-trips").hidden = hosted.length > 0;
}

async function openTrip(chosen) {
  closeTrip();
  trip = { ...chosen, names: new Map(), positions: new Map(), channels: [], events: new Map() };
  show("trip");
  $("trip-name").textContent = chosen.name;
  const members = (await client.rpc("trip.members", { trip: chosen.id })).members;
  trip.staff = (await client.rpc("profile.get")).staff === true;
  for (const member of members) trip.names.set(member.user, member.name);
  trip.map = new ResortMap($("map"), $("legend"), {
    tilesURL: config.map_tiles_url,
    elevation: (lat, lon) => client.rpc("map.elevation", { lat, lon }),
    onElevation: (text) => { $("elevation").textContent = text; },
  });
  try {
    trip.map.drawResort(await client.rpc("map.resort", { id: chosen.resort }));
  } catch (error) {
    notice(`The resort map is not available: ${error.message}`);
  }
  watchTravellers();
  watchFences();
  watchMessages();
  watchEvents();
  trip.ageTimer = setInterval(renderTravellers, 5000);
}

function closeTrip() {
  if (!trip) return;
  clearInterval(trip.ageTimer);
  clearInterval(trip.eventTimer);
  for (const channel of trip.channels) client?.unsubscribe(channel);
  trip.fences?.close();
  trip.map?.remove();
  trip = null;
}

function subscribe(channel, handlers) {
  trip.channels.push(channel);
  return client.subscribe(channel, handlers);
}

// MARK: travellers

function watchTravellers() {
  const apply = (frame) => {
    for (const position of frame.positions || []) trip.positions.set(position.user, position);
    for (const user of frame.removed || []) trip.positions.delete(user);
    renderTravellers();
  };
  subscribe(`locations:${trip.id}`, {
    onSubscribed: (result) => {
      trip.positions.clear();
      apply(result.data || {});
    },
    onPublication: apply,
    onError: (error) => notice(`Positions: ${error.message}`),
  });
}

function renderTravellers() {
  if (!trip) return;
  const now = Date.now();
  const list = [...trip.positions.values()].sort((a, b) => name(a.user).localeCompare(name(b.user)));
  trip.map.showTravellers(list.map((p) => ({ ...p, name: name(p.user), age: now - p.ts })));
  $("travellers").replaceChildren(...list.map((p) => {
    const item = document.createElement("li");
    item.dataset.user = p.user;
    const speed = p.speed !== undefined ? `${(p.speed * 3.6).toFixed(0)} km/h` : "";
    item.innerHTML = `<span></span><span>${p.alt !== undefined ? Math.round(p.alt) + " m" : ""}</span><small></small>`;
    item.children[0].textContent = name(p.user);
    item.children[2].textContent = `seen ${ago(now - p.ts)}${speed ? " · " + speed : ""}`;
    item.addEventListener("click", () => trip.map.centre(p));
    return item;
  }));
}

const name = (user) => trip?.names.get(user) || user;

function ago(ms) {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  return `${Math.round(seconds / 3600)} h ago`;
}

// MARK: fences

function watchFences() {
  $("fences").replaceChildren();
  $("fence-events").replaceChildren();
  trip.fences = new FencePanel({
    client, map: trip.map.map, trip: trip.id, subscribe, name, notice,
    elements: {
      name: $("fence-name"), circle: $("draw-circle"), polygon: $("draw-polygon"), finish: $("finish-polygon"),
      cancel: $("cancel-drawing"), hint: $("fence-hint"), list: $("fences"), events: $("fence-events"),
    },
  });
  trip.fences.load().catch((error) => notice(`Fences: ${error.message}`));
}

// MARK: broadcasts, announcements, chat

function messageItem(from, text, ts) {
  const item = document.createElement("li");
  const who = document.createElement("b");
  who.textContent = from;
  const when = document.createElement("time");
  when.textContent = ` ${new Date(ts).toLocaleTimeString()}`;
  item.append(who, document.createTextNode(text), when);
  return item;
}

function prepend(list, item, limit = 50) {
  list.prepend(item);
  while (list.children.length > limit) list.lastChild.remove();
}

function watchMessages() {
  $("broadcasts").replaceChildren();
  $("announcements").replaceChildren();
  $("chat").replaceChildren();
  $("announcement-form").hidden = !trip.staff;
  for (const [channel, list] of [[`trip:${trip.id}`, $("broadcasts")], ["announcements", $("announcements")]]) {
    let loaded = false;
    subscribe(channel, {
      onSubscribed: async () => {
        if (loaded) return;
        loaded = true;
        const recent = await client.history(channel, 20).catch(() => []);
        for (const pub of recent.reverse()) prepend(list, messageItem(pub.data.name || pub.data.from, pub.data.text, pub.data.ts));
      },
      onPublication: (data) => prepend(list, messageItem(data.name || data.from, data.text, data.ts)),
    });
  }
  const chat = `trip-${trip.id}`;
  const seen = new Set();
  const addChat = (message) => {
    if (seen.has(message.id)) return;
    seen.add(message.id);
    const item = messageItem(message.name || message.from, message.text, message.ts);
    item.dataset.id = message.id;
    $("chat").append(item);
    $("chat").scrollTop = $("chat").scrollHeight;
  };
  subscribe(`chat:${chat}`, {
    onSubscribed: async (result, recovering) => {
      if (recovering) return;
      const { messages } = await client.rpc("chat.history", { chat, limit: 50 });
      for (const message of messages) addChat(message);
    },
    onPublication: addChat,
  });
}

async function send(form, input, call) {
  const text = input.value.trim();
  if (!text) return;
  form.querySelector("button").disabled = true;
  try {
    await call(text);
    input.value = "";
    notice("");
  } catch (error) {
    notice(error.message);
  } finally {
    form.querySelector("button").disabled = false;
  }
}

// MARK: events

async function watchEvents() {
  const add = (event) => {
    if (event.trip !== trip.id || trip.events.has(event.id)) return;
    trip.events.set(event.id, event);
    subscribe(`event:${event.id}`, {
      onPublication: (data) => {
        if (data.type !== "rsvp" || !trip.events.has(data.event)) return;
        trip.events.get(data.event).counts = data.counts;
        renderEvents();
      },
    });
  };
  const refresh = async () => {
    const { events } = await client.rpc("event.list");
    for (const event of events) add(event);
    renderEvents();
  };
  // Invitations arrive on the personal channel; events the host made elsewhere show on the next refresh.
  const user = JSON.parse(sessionStorage.getItem(USER_KEY) || "{}").id;
  if (user) {
    subscribe(`personal:#${user}`, {
      onPublication: (data) => {
        if (data.type === "invite" && data.event) {
          add(data.event);
          renderEvents();
        }
      },
    });
  }
  trip.eventTimer = setInterval(() => refresh().catch(() => {}), 60_000);
  await refresh();
}

function renderEvents() {
  $("events").replaceChildren(...[...trip.events.values()].map((event) => {
    const item = document.createElement("li");
    item.dataset.event = event.id;
    const title = document.createElement("b");
    title.textContent = event.title;
    const counts = document.createElement("div");
    counts.className = "counts";
    const c = event.counts || {};
    counts.textContent = `going ${c.going ?? 0} · maybe ${c.maybe ?? 0} · declined ${c.declined ?? 0} · pending ${c.pending ?? 0}`;
    counts.dataset.going = c.going ?? 0;
    item.append(title, document.createTextNode(` ${new Date(event.starts_at).toLocaleString()}`), counts);
    return item;
  }));
}

// MARK: wiring

$("dev-login").addEventListener("submit", (event) => {
  event.preventDefault();
  exchange("/api/auth/dev", { user: $("dev-user").value.trim(), name: $("dev-name").value.trim() || null });
});
$("sign-out").addEventListener("click", () => signIn());
$("back").addEventListener("click", () => { closeTrip(); listTrips(); });
$("broadcast-form").addEventListener("submit", (event) => {
  event.preventDefault();
  send($("broadcast-form"), $("broadcast-text"), (text) => client.rpc("broadcast.send", { trip: trip.id, text }));
});
$("announcement-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  await send($("announcement-form"), $("announcement-text"), (text) => client.rpc("broadcast.send", { scope: "all", text }));
});
$("chat-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const id = `host-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  send($("chat-form"), $("chat-text"), (text) => client.rpc("chat.send", { chat: `trip-${trip.id}`, text, client_message_id: id }));
});

async function boot() {
  config = await (await fetch("config.json")).json();
  if (!window.L) notice(`The map library is missing: install Debian's libjs-leaflet (the hub serves it from ${config.leaflet_path}).`);
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) start(token);
  else signIn();
}

boot();
