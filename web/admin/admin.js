// The admin page: signs in with the admin password, then calls the server API through
// /admin/api with the token it got (never the API key) and follows a channel's
// publications through /admin/watch (Server-Sent Events).

const $ = (id) => document.getElementById(id);
const tokenKey = "gondola-admin-token";
const refreshEvery = 5000;
let refreshTimer = null;
let watching = null;

/** Calls a server API method; answers its result, or throws an Error naming the API's error. */
async function call(method, params = {}) {
  const response = await fetch(`api/${method}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `token ${sessionStorage.getItem(tokenKey)}` },
    body: JSON.stringify(params),
  });
  const answer = await response.json().catch(() => ({ error: { code: response.status, message: response.statusText } }));
  if (response.status === 401) {
    signOut("Your sign-in ended; sign in again.");
  }
  if (answer.error) {
    throw new Error(`error ${answer.error.code}: ${answer.error.message}`);
  }
  return answer.result ?? {};
}

function notice(text) {
  $("notice").textContent = text;
  $("notice").hidden = !text;
}

function cell(row, text, number = false) {
  const td = row.insertCell();
  td.textContent = text;
  if (number) td.className = "number";
  return td;
}

function duration(seconds) {
  const units = [["d", 86400], ["h", 3600], ["m", 60]];
  for (const [unit, size] of units) if (seconds >= size) return `${Math.floor(seconds / size)} ${unit}`;
  return `${seconds} s`;
}

async function showNodes() {
  const { nodes = [] } = await call("info");
  const body = $("nodes").tBodies[0];
  body.replaceChildren();
  for (const node of nodes.sort((a, b) => a.name.localeCompare(b.name))) {
    const row = body.insertRow();
    row.dataset.node = node.uid;
    cell(row, node.name || node.uid);
    cell(row, node.version);
    cell(row, node.num_clients ?? 0, true);
    cell(row, node.num_users ?? 0, true);
    cell(row, node.num_channels ?? 0, true);
    cell(row, node.num_subs ?? 0, true);
    cell(row, duration(node.uptime ?? 0));
  }
}

async function showChannels() {
  const pattern = $("pattern").value.trim();
  const { channels = {} } = await call("channels", pattern ? { pattern } : {});
  const body = $("channels").tBodies[0];
  body.replaceChildren();
  const names = Object.keys(channels).sort();
  for (const name of names) {
    const row = body.insertRow();
    row.dataset.channel = name;
    cell(row, name);
    cell(row, channels[name].num_clients ?? 0, true);
    const inspect = document.createElement("button");
    inspect.type = "button";
    inspect.textContent = "Inspect";
    inspect.addEventListener("click", () => inspectChannel(name).catch((error) => notice(error.message)));
    row.insertCell().append(inspect);
  }
  $("no-channels").hidden = names.length > 0;
}

async function refresh() {
  try {
    await Promise.all([showNodes(), showChannels()]);
    $("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
    notice("");
  } catch (error) {
    notice(error.message);
  }
}

/** Shows a channel's presence and follows its publications until another channel is inspected. */
async function inspectChannel(channel) {
  $("channel").hidden = false;
  $("channel-name").textContent = channel;
  $("publications").replaceChildren();
  const body = $("presence").tBodies[0];
  body.replaceChildren();
  try {
    const stats = await call("presence_stats", { channel });
    $("presence-stats").textContent = `${stats.num_clients ?? 0} connections of ${stats.num_users ?? 0} users in presence`;
    const { presence = {} } = await call("presence", { channel });
    for (const info of Object.values(presence)) {
      const row = body.insertRow();
      cell(row, info.user);
      cell(row, info.client);
      cell(row, info.conn_info === undefined ? "" : JSON.stringify(info.conn_info));
    }
  } catch (error) {
    $("presence-stats").textContent = error.message;
  }
  watch(channel);
}

function watch(channel) {
  watching?.close();
  const state = $("watch-state");
  state.textContent = "connecting";
  const query = new URLSearchParams({ channel, token: sessionStorage.getItem(tokenKey) });
  watching = new EventSource(`watch?${query}`);
  watching.onmessage = (event) => {
    const message = JSON.parse(event.data);
    const push = message.push ?? message;
    if (push.connect) state.textContent = "live";
    if (push.disconnect) state.textContent = `ended: ${push.disconnect.reason} (${push.disconnect.code})`;
    const publication = push.pub;
    if (!publication) return;
    const item = document.createElement("li");
    item.value = publication.offset ?? 0;
    item.textContent = publication.data === undefined ? `(binary) ${publication.b64data ?? ""}` : JSON.stringify(publication.data);
    $("publications").prepend(item);
    while ($("publications").children.length > 100) $("publications").lastElementChild.remove();
  };
  watching.onerror = () => {
    state.textContent = "reconnecting";
  };
}

/** What each action form sends, from its fields. */
function actionParams(method, form) {
  const field = (name) => form.elements[name]?.value.trim() ?? "";
  const optional = (params, name) => (field(name) ? { ...params, [name]: field(name) } : params);
  switch (method) {
    case "publish":
      return { channel: field("channel"), data: JSON.parse(form.elements.data.value) };
    case "broadcast":
      return { channels: field("channels").split(/[\s,]+/).filter(Boolean), data: JSON.parse(form.elements.data.value) };
    case "disconnect":
      return optional({ user: field("user") }, "client");
    case "unsubscribe":
      return optional({ user: field("user"), channel: field("channel") }, "client");
    case "history_remove":
      return { channel: field("channel") };
  }
  throw new Error(`unknown action ${method}`);
}

function setUpActions() {
  for (const form of document.querySelectorAll("form[data-method]")) {
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const method = form.dataset.method;
      const output = form.querySelector("output");
      try {
        const result = await call(method, actionParams(method, form));
        output.dataset.outcome = "ok";
        output.textContent = Object.keys(result).length ? `done: ${JSON.stringify(result)}` : "done";
        refresh();
      } catch (error) {
        output.dataset.outcome = "error";
        output.textContent = error instanceof SyntaxError ? `data is not JSON: ${error.message}` : error.message;
      }
    });
  }
}

function showDashboard() {
  $("sign-in").hidden = true;
  $("dashboard").hidden = false;
  $("sign-out").hidden = false;
  refresh();
  clearInterval(refreshTimer);
  refreshTimer = setInterval(refresh, refreshEvery);
}

function signOut(reason = "") {
  sessionStorage.removeItem(tokenKey);
  clearInterval(refreshTimer);
  watching?.close();
  $("dashboard").hidden = true;
  $("sign-out").hidden = true;
  $("sign-in").hidden = false;
  notice(reason);
}

$("sign-in-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const result = $("sign-in-result");
  const response = await fetch("auth", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ password: $("password").value }),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) {
    result.dataset.outcome = "error";
    result.textContent = answer.error?.message ?? `sign-in failed (${response.status})`;
    return;
  }
  result.textContent = "";
  $("password").value = "";
  sessionStorage.setItem(tokenKey, answer.token);
  showDashboard();
});
$("sign-out").addEventListener("click", () => signOut());
$("channel-filter").addEventListener("submit", (event) => {
  event.preventDefault();
  refresh();
});
setUpActions();
if (sessionStorage.getItem(tokenKey)) showDashboard();
else signOut();
