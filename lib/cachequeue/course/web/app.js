"use strict";
// The page of the course's HTTP service: pick a user and a document, ask for a summary, and
// follow the job. Plain JavaScript, no build step, nothing loaded from anywhere but this server.
//
// The job id is kept in the address (#job=12&user=11) and in localStorage, so closing or
// reloading the tab loses nothing: the page asks the service about that job again.
//
// Why fetch() and not EventSource: EventSource cannot send an Authorization header, and
// a token in the query string would end up in access logs. So the page reads the
// text/event-stream itself (readEvents) and sends Last-Event-ID itself when it reconnects.

const $ = (id) => document.getElementById(id);
const FINAL = new Set(["done", "failed", "cancelled"]);
const STATES = { pending: "已受理，等待工作者", running: "处理中", done: "已完成", failed: "失败", cancelled: "已取消" };
const EVENTS = {
  accepted: "已受理", started: "开始处理", retrying: "出错，稍后重试", released: "工作者停止，任务交还",
  done: "已完成", failed: "失败", cancelled: "已取消", requeued: "人工重试",
};
const SAVED = "cachequeue-job";

let users = [];
let following = null; // the AbortController of the job being followed

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const userById = (id) => users.find((u) => String(u.id) === String(id));

function headers(token, extra = {}) {
  return { Authorization: `Bearer ${token}`, ...extra };
}

function showProblem(text) {
  $("problem").textContent = text;
  $("problem").hidden = !text;
}

async function problemText(response) {
  try {
    const body = await response.json();
    return `${response.status} ${body.title}：${body.detail}`;
  } catch {
    return `${response.status} ${response.statusText}`;
  }
}

async function loadDocuments() {
  const user = userById($("user").value);
  $("document").replaceChildren();
  $("submit").disabled = true;
  const response = await fetch("/v1/documents", { headers: headers(user.token) });
  if (!response.ok) return showProblem(await problemText(response));
  for (const doc of await response.json()) {
    const visibility = doc.visibility === "admins" ? "，仅管理员" : "";
    $("document").append(new Option(`${doc.title}（第 ${doc.version} 版${visibility}）`, doc.id));
  }
  $("submit").disabled = $("document").options.length === 0;
}

function reach(step, yes = true) {
  $(`step-${step}`).toggleAttribute("data-reached", yes);
}

function showState(state) {
  $("state").textContent = STATES[state] || state;
  $("state").dataset.state = state;
  reach("accepted");
  reach("running", state !== "pending" || $("events").querySelector("[data-event=started]") !== null);
  reach("done", state === "done");
}

function showEvent(event) {
  const item = document.createElement("li");
  item.dataset.event = event.event;
  const attempt = event.data.attempt ? `（第 ${event.data.attempt} 次尝试）` : "";
  const error = event.data.error ? `：${event.data.error}` : "";
  item.textContent = `#${event.id} ${EVENTS[event.event] || event.event}${attempt}${error}`;
  $("events").append(item);
  showState(event.data.state);
}

// Server-sent events from a fetch() body: blocks separated by a blank line, fields
// "id:", "event:", "data:"; lines starting with ":" are comments (keep-alive pings).
async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = { id: null, event: "message", data: [] };
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "data") event.data.push(text);
        else if (field === "id") event.id = text;
        else if (field === "event") event.event = text;
      }
      if (event.data.length) yield { ...event, data: JSON.parse(event.data.join("\n")) };
    }
  }
}

async function showResult(jobId, token) {
  const response = await fetch(`/v1/jobs/${jobId}`, { headers: headers(token) });
  if (!response.ok) return showProblem(await problemText(response));
  const job = await response.json();
  showState(job.state);
  if (job.state === "done") {
    $("result").textContent = job.output.summary;
    $("result").hidden = false;
  } else if (job.last_error) {
    showProblem(`任务没有完成：${job.last_error}`);
  }
}

// Follow one job until it is final: the whole history first, then the events as they
// happen; after a dropped connection, reconnect with Last-Event-ID (no gap, no repeat).
async function follow(jobId, token) {
  if (following) following.abort();
  const controller = new AbortController();
  following = controller;
  $("job").hidden = false;
  $("job-id").textContent = `#${jobId}`;
  $("events").replaceChildren();
  $("result").hidden = true;
  let lastId = "0";
  for (;;) {
    let response;
    try {
      response = await fetch(`/v1/jobs/${jobId}/events`, {
        headers: headers(token, { "Last-Event-ID": lastId }), signal: controller.signal,
      });
    } catch {
      if (controller.signal.aborted) return;
      await pause(1000);
      continue;
    }
    if (response.status === 204) break; // final, nothing new
    if (!response.ok) return showProblem(await problemText(response));
    let final = false;
    try {
      for await (const event of readEvents(response.body)) {
        lastId = event.id;
        showEvent(event);
        final = FINAL.has(event.data.state);
      }
    } catch {
      if (controller.signal.aborted) return;
    }
    if (final) break;
    await pause(1000); // the server closed the stream (a restart): ask again shortly
  }
  if (!controller.signal.aborted) await showResult(jobId, token);
}

async function submit() {
  showProblem("");
  const user = userById($("user").value);
  const documentId = $("document").value;
  $("submit").disabled = true;
  try {
    const response = await fetch(`/v1/documents/${documentId}/summaries`, {
      method: "POST",
      headers: headers(user.token, { "Content-Type": "application/json" }),
      body: JSON.stringify({ template: $("template").value }),
    });
    if (response.status !== 202) return showProblem(await problemText(response));
    const job = await response.json();
    remember(job.id, user.id);
    follow(job.id, user.token);
  } finally {
    $("submit").disabled = false;
  }
}

function remember(jobId, userId) {
  history.replaceState(null, "", `#job=${jobId}&user=${userId}`);
  localStorage.setItem(SAVED, JSON.stringify({ job: jobId, user: userId }));
}

function recalled() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("job") && hash.get("user")) return { job: hash.get("job"), user: hash.get("user") };
  try {
    return JSON.parse(localStorage.getItem(SAVED) || "null");
  } catch {
    return null;
  }
}

async function start() {
  const response = await fetch("/demo/users");
  users = await response.json();
  for (const user of users) {
    const role = user.role === "admin" ? "管理员" : "成员";
    $("user").append(new Option(`${user.name}（${user.tenant}，${role}）`, user.id));
  }
  const saved = recalled();
  if (saved && userById(saved.user)) {
    $("user").value = saved.user;
    remember(saved.job, saved.user);
  }
  await loadDocuments();
  $("user").addEventListener("change", loadDocuments);
  $("submit").addEventListener("click", submit);
  if (saved && userById(saved.user)) follow(saved.job, userById(saved.user).token);
}

window.addEventListener("pagehide", () => following && following.abort());
start().catch((error) => showProblem(`页面出错：${error.message}`));
