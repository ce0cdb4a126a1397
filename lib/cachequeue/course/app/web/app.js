"use strict";
// The page of the course's HTTP service: pick a user and a document, ask for a summary, and
// follow the job. Plain JavaScript, no build step, nothing loaded from anywhere but this server.
//
// The job is kept in the address (#job=12&user=11&document=42&version=3&template=brief-zh)
// and in localStorage, so closing or reloading the tab loses nothing: the page asks the
// service about that job again, puts the form back as it was when the job was asked for,
// and the card says which document and template the job is for.
//
// A new job starts on a clean card: nothing of the job shown before (its 已完成, its
// steps, its result) stays while the new one loads. A summary already asked for (by this
// user or a colleague) is not a new job: the service answers with the earlier job and
// `Idempotent-Replayed: true`, and the card says so.
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
let documents = []; // the documents the chosen user may read
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
  documents = [];
  const response = await fetch("/v1/documents", { headers: headers(user.token) });
  if (!response.ok) return showProblem(await problemText(response));
  documents = await response.json();
  for (const doc of documents) {
    const visibility = doc.visibility === "admins" ? "，仅管理员" : "";
    $("document").append(new Option(`${doc.title}（第 ${doc.version} 版${visibility}）`, doc.id));
  }
  $("submit").disabled = $("document").options.length === 0;
}

function reach(step, yes = true) {
  $(`step-${step}`).toggleAttribute("data-reached", yes);
}

function templateName(value) {
  const option = [...$("template").options].find((o) => o.value === value);
  return option ? option.textContent : value;
}

// "季度路线图（第 3 版） · 中文摘要": what a summary job is for, from what is known of it.
function describe(about) {
  if (!about || !about.document) return "";
  const doc = documents.find((d) => String(d.id) === String(about.document));
  const title = doc ? doc.title : `第 ${about.document} 号文档`;
  const version = about.version ? `（第 ${about.version} 版）` : "";
  return about.template ? `${title}${version} · ${templateName(about.template)}` : `${title}${version}`;
}

// The card of a job that is about to be followed: its id and what it is for, and
// nothing of the job shown before.
function resetCard(jobId, about, replayed) {
  $("job").hidden = false;
  $("job-id").textContent = `#${jobId}`;
  $("job-for").textContent = describe(about);
  $("job-for").hidden = !$("job-for").textContent;
  $("repeat").textContent = replayed
    ? `这份摘要之前已经请求过（你或同事），服务没有新建任务：下面是已有的第 ${jobId} 号任务。`
    : "";
  $("repeat").hidden = !replayed;
  for (const step of ["accepted", "running", "done"]) reach(step, false);
  $("state").textContent = "正在读取…";
  $("state").dataset.state = "";
  $("events").replaceChildren();
  $("result").hidden = true;
  $("result").textContent = "";
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
    const output = job.output || {};
    if (output.document_id) {  // the job's own record of what it summarised
      $("job-for").textContent = describe({ document: output.document_id, version: output.version,
                                            template: output.template });
      $("job-for").hidden = false;
    }
    $("result").textContent = output.summary;
    $("result").hidden = false;
  } else if (job.last_error) {
    showProblem(`任务没有完成：${job.last_error}`);
  }
}

// Follow one job until it is final: the whole history first, then the events as they
// happen; after a dropped connection, reconnect with Last-Event-ID (no gap, no repeat).
// `about` says what the job is for ({document, version, template}, as far as known),
// `state` is its state when known (from the 202), `replayed` whether it is an earlier job.
async function follow(jobId, token, { about = null, state = null, replayed = false } = {}) {
  if (following) following.abort();
  const controller = new AbortController();
  following = controller;
  resetCard(jobId, about, replayed);
  if (state) showState(state);
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
        if (controller.signal.aborted) return; // another job is being followed now
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
  const doc = documents.find((d) => String(d.id) === documentId);
  const template = $("template").value;
  $("submit").disabled = true;
  try {
    const response = await fetch(`/v1/documents/${documentId}/summaries`, {
      method: "POST",
      headers: headers(user.token, { "Content-Type": "application/json" }),
      body: JSON.stringify({ template }),
    });
    if (response.status !== 202) return showProblem(await problemText(response));
    const job = await response.json();
    const saved = { job: job.id, user: user.id, document: documentId,
                    version: doc ? doc.version : null, template };
    remember(saved);
    follow(job.id, user.token, { about: saved, state: job.state,
                                 replayed: response.headers.get("Idempotent-Replayed") === "true" });
  } finally {
    $("submit").disabled = false;
  }
}

const REMEMBERED = ["job", "user", "document", "version", "template"];

function remember(saved) {
  const hash = new URLSearchParams();
  for (const key of REMEMBERED) if (saved[key] != null && saved[key] !== "") hash.set(key, saved[key]);
  history.replaceState(null, "", `#${hash}`);
  localStorage.setItem(SAVED, JSON.stringify(saved));
}

function recalled() {
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("job") && hash.get("user")) {
    return Object.fromEntries(REMEMBERED.map((key) => [key, hash.get(key)]));
  }
  try {
    return JSON.parse(localStorage.getItem(SAVED) || "null");
  } catch {
    return null;
  }
}

// Put the form back as it was when the remembered job was asked for.
function restoreForm(saved) {
  const has = (select, value) => [...select.options].some((o) => o.value === String(value));
  if (saved.document && has($("document"), saved.document)) $("document").value = String(saved.document);
  if (saved.template && has($("template"), saved.template)) $("template").value = saved.template;
}

async function start() {
  const response = await fetch("/demo/users");
  if (response.status === 404) {
    // /demo/users hands out every sample user's token, so the service serves it only in
    // demo mode (make serve, or cachequeue serve --demo).
    return showProblem("演示模式没有开启：用 make serve（或 cachequeue serve --demo）启动服务，页面才能列出示例用户。");
  }
  if (!response.ok) return showProblem(await problemText(response));
  users = await response.json();
  for (const user of users) {
    const role = user.role === "admin" ? "管理员" : "成员";
    $("user").append(new Option(`${user.name}（${user.tenant}，${role}）`, user.id));
  }
  const saved = recalled();
  const resume = saved && saved.job && userById(saved.user) ? saved : null;
  if (resume) {
    $("user").value = String(resume.user);
    remember(resume);
  }
  await loadDocuments();
  if (resume) restoreForm(resume);
  $("user").addEventListener("change", loadDocuments);
  $("submit").addEventListener("click", submit);
  if (resume) follow(resume.job, userById(resume.user).token, { about: resume });
}

window.addEventListener("pagehide", () => following && following.abort());
start().catch((error) => showProblem(`页面出错：${error.message}`));
