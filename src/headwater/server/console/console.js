// Headwater's web console: plain JavaScript over the REST API, refreshed every 2 seconds.
// With a token-protected service, the token is asked once and kept for the browser session.
"use strict";

const REFRESH_MS = 2000;
const previous = {};  // connector -> {events, at}: throughput from the counter's deltas

function token() { return sessionStorage.getItem("headwater.token"); }

async function api(method, path, body) {
  const headers = {"Accept": "application/json"};
  if (token()) headers["Authorization"] = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
  if (r.status === 401) {
    const t = window.prompt("This service needs a Bearer token:");
    if (t) { sessionStorage.setItem("headwater.token", t); return api(method, path, body); }
  }
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { msg = (await r.json()).message || msg; } catch (e) { /* not JSON */ }
    throw new Error(method + " " + path + ": " + msg);
  }
  return r.status === 204 || r.status === 202 && r.headers.get("content-length") === "0"
    ? null : r.json().catch(() => null);
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function problem(text) { document.getElementById("problem").textContent = text || ""; }

function action(label, name, run) {
  return el("button", {"type": "button", "data-action": label, "data-connector": name,
    "onclick": async () => { try { await run(); problem(""); } catch (e) { problem(e.message); } refresh(); }}, label);
}

function connectorActions(name, state) {
  const enc = encodeURIComponent(name);
  const out = [];
  if (state === "PAUSED" || state === "STOPPED") out.push(action("resume", name, () => api("PUT", `/connectors/${enc}/resume`)));
  else out.push(action("pause", name, () => api("PUT", `/connectors/${enc}/pause`)));
  out.push(action("restart", name, () => api("POST", `/connectors/${enc}/restart?includeTasks=true`)));
  out.push(action("incremental snapshot", name, async () => {
    const tables = window.prompt("Tables to snapshot (comma-separated, e.g. public.orders):");
    if (!tables) return;
    await api("POST", `/connectors/${enc}/signals`, {"type": "execute-snapshot",
      "data": {"data-collections": tables.split(",").map(t => t.trim()).filter(Boolean), "type": "incremental"}});
  }));
  return out;
}

function fmt(n) { return n === undefined || n === null ? "" : Number(n).toLocaleString("en"); }

async function renderConnectors(errors) {
  const all = await api("GET", "/connectors?expand=status");
  const body = document.querySelector("#connectors tbody");
  const snap = document.querySelector("#snapshot tbody");
  body.replaceChildren(); snap.replaceChildren();
  const names = Object.keys(all).sort();
  document.getElementById("no-connectors").hidden = names.length > 0;
  for (const name of names) {
    const status = all[name].status;
    const state = status.connector.state;
    let m = {};
    try { m = await api("GET", `/connectors/${encodeURIComponent(name)}/metrics`); } catch (e) { m = {}; }
    const ctx = m.contexts || {};
    const s = ctx.streaming || {}, sn = ctx.snapshot || {};
    const events = (s.TotalNumberOfEventsSeen || 0) + (sn.TotalNumberOfEventsSeen || 0);
    const now = Date.now();
    let rate = "";
    const p = previous[name];
    if (p && now > p.at && events >= p.events) rate = Math.round((events - p.events) * 1000 / (now - p.at));
    previous[name] = {events, at: now};
    const snapshot = sn.SnapshotRunning ? `running, ${sn.RemainingTableCount} of ${sn.TotalTableCount} tables left`
      : sn.SnapshotCompleted ? "completed" : sn.SnapshotAborted ? "aborted" : "";
    body.append(el("tr", {"data-connector": name},
      el("td", {}, name), el("td", {}, m.plugin || ""),
      el("td", {"class": "state " + state, "data-field": "state"}, state),
      el("td", {}, rate === "" ? "" : fmt(rate)), el("td", {"data-field": "events"}, fmt(events)),
      el("td", {}, s.MilliSecondsBehindSource === undefined || s.MilliSecondsBehindSource < 0 ? "" : fmt(s.MilliSecondsBehindSource)),
      el("td", {}, s.QueueTotalCapacity ? `${fmt(s.QueueRemainingCapacity)} / ${fmt(s.QueueTotalCapacity)}` : ""),
      el("td", {}, snapshot), el("td", {}, ...connectorActions(name, state))));
    const estimated = m.rows_estimated || {};
    for (const [table, rows] of Object.entries(sn.RowsScanned || {})) {
      const est = estimated[table];
      const bar = est > 0 ? el("progress", {"max": est, "value": Math.min(rows, est)}) : "";
      snap.append(el("tr", {}, el("td", {}, name), el("td", {}, table), el("td", {}, fmt(rows)), el("td", {}, bar)));
    }
    if (state === "FAILED" && status.connector.trace) {
      errors.push({"what": "connector " + name, "message": status.connector.trace});
    }
  }
}

async function renderStreams(errors) {
  const doc = await api("GET", "/streams");
  const body = document.querySelector("#streams tbody");
  body.replaceChildren();
  for (const st of doc.streams || []) {
    const enc = encodeURIComponent(st.name);
    const acts = st.state === "RUNNING"
      ? [action("pause", st.name, () => api("POST", `/streams/${enc}:pause`))]
      : [action("start/resume", st.name, () => api("PATCH", `/streams/${enc}`, {"state": "RUNNING"}))];
    body.append(el("tr", {"data-stream": st.name}, el("td", {}, st.name),
      el("td", {"class": "state " + st.state}, st.state),
      el("td", {}, (st.sourceConfig || {}).sourceConnectionProfile || ""),
      el("td", {}, (st.destinationConfig || {}).destinationConnectionProfile || ""),
      el("td", {}, ...acts)));
    for (const e of (st.errors || []).slice(-5)) {
      errors.push({"what": "stream " + st.name, "message": e.message || JSON.stringify(e)});
    }
  }
}

async function refresh() {
  const errors = [];
  try {
    await renderConnectors(errors);
    await renderStreams(errors);
    const list = document.getElementById("errors");
    list.replaceChildren(...errors.map(e => el("li", {}, el("strong", {}, e.what + ": "), el("pre", {}, e.message))));
    if (!errors.length) list.append(el("li", {"class": "muted"}, "none"));
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) { problem(e.message); }
}

(async () => {
  try { const info = await api("GET", "/"); document.getElementById("version").textContent = "v" + info.version; } catch (e) { problem(e.message); }
  await refresh();
  setInterval(refresh, REFRESH_MS);
})();
