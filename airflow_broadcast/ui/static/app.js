// The Broadcast jobs page: a list and a job view over the plugin's JSON API, refreshed every second.
"use strict";

const POLL_MS = 1000;
const state = { openIneligible: false, timer: null, sort: "", desc: false, page: 0, size: 100, filters: {}, log: null };
const view = document.getElementById("view");

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;",
    '"': "&quot;", "'": "&#39;" })[c]);
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const sign = seconds < 0 ? "-" : "";
  let s = Math.abs(Math.round(seconds));
  const parts = [[86400, "d"], [3600, "h"], [60, "m"], [1, "s"]].filter(([unit]) => s >= unit || unit === 1)
    .slice(0, 2).map(([unit, label]) => { const n = Math.floor(s / unit); s -= n * unit; return n + label; });
  return sign + parts.join(" ");
}

async function api(path, options) {
  const response = await fetch(path, { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || response.statusText);
    error.status = response.status;
    throw error;
  }
  return body;
}

function airflowLink(job) {
  if (!job.dagId) return '<span class="muted">—</span>';
  // Relative to the page (<base>/broadcast-jobs/), so that an api-server under a path prefix works too.
  const run = `../dags/${encodeURIComponent(job.dagId)}/runs/${encodeURIComponent(job.runId)}`;
  const task = `${run}/tasks/${encodeURIComponent(job.taskId)}` + (job.mapIndex >= 0 ? `/mapped/${job.mapIndex}` : "");
  return `<a target="_top" class="dag-run" href="${run}">${esc(job.dagId)} / ${esc(job.runId)}</a><br>` +
    `<a target="_top" class="task" href="${task}">${esc(job.taskId)}</a>`;
}

function countsText(job) {
  const c = job.counts || {};
  if (job.kind === "BroadcastJob") return `${c.desired} desired · ${c.active} active · ${c.succeeded} ok · ${c.failed} failed`;
  return Object.entries(c).map(([t, n]) => `${esc(t)}: ${n.active}/${n.succeeded}/${n.failed}`).join("<br>") || "—";
}

function kindCell(job) {
  // A job handed to the cluster's controller (controller="cluster") is its custom resource, not a job record.
  return esc(job.kind) + (job.controller === "cluster" ? ' <span class="tag" title="run by the cluster\'s controller">' +
    "cluster</span>" : "");
}

function jobHref(job) {
  return `#/job/${encodeURIComponent(job.conn)}/${encodeURIComponent(job.namespace)}/${encodeURIComponent(job.record)}`;
}

function select(name, choices) {
  const current = state.filters[name] || "";
  const options = ["", ...choices].map((v) => `<option value="${esc(v)}"${v === current ? " selected" : ""}>` +
    `${esc(v || "all")}</option>`).join("");
  return `<label>${name} <select data-filter="${name}">${options}</select></label>`;
}

async function renderList() {
  const query = new URLSearchParams(Object.entries(state.filters).filter(([, v]) => v));
  const data = await api(`api/jobs?${query}`);
  const rows = data.jobs.map((job) => `<tr data-job="${esc(job.namespace)}/${esc(job.record)}">
      <td>${kindCell(job)}</td><td>${esc(job.namespace)}</td>
      <td><a class="job" href="${jobHref(job)}">${esc(job.name)}</a></td>
      <td class="phase phase-${esc(job.phase)}">${esc(job.phase)}</td><td class="counts">${countsText(job)}</td>
      <td>${duration(job.age)}</td><td>${duration(job.deadlineIn)}</td><td>${duration(job.ttlIn)}</td>
      <td>${airflowLink(job)}</td></tr>`).join("");
  const errors = Object.entries(data.errors).map(([c, e]) => `<p class="error">${esc(c)}: ${esc(e)}</p>`).join("");
  view.innerHTML = `<div class="filters">${["phase", "kind", "namespace", "dag", "controller"].map((f) =>
    select(f, data.choices[f])).join("")}</div>${errors}
    <table id="jobs"><thead><tr><th>Kind</th><th>Namespace</th><th>Name</th><th>Phase</th><th>Counts</th>
    <th>Age</th><th>Deadline in</th><th>TTL expires in</th><th>DAG run / task</th></tr></thead>
    <tbody>${rows || '<tr><td colspan="9" class="muted">No jobs you may see.</td></tr>'}</tbody></table>`;
  view.querySelectorAll("select[data-filter]").forEach((el) => el.addEventListener("change", () => {
    state.filters[el.dataset.filter] = el.value;
    refresh();
  }));
}

function cards(job) {
  const c = job.counts || {};
  const entries = job.kind === "BroadcastJob"
    ? ["desired", "active", "succeeded", "failed"].map((k) => [k, c[k]])
    : Object.entries(c).map(([t, n]) => [t, `${n.active}/${n.succeeded}/${n.failed}`]);
  return entries.map(([k, v]) => `<div class="card" id="count-${esc(k)}">${esc(k)}<b>${esc(v)}</b></div>`).join("");
}

function table(job) {
  const t = job.table;
  const head = job.columns.map((c) => `<th class="sortable${t.sort === c ? " sorted" : ""}${t.sort === c && t.descending
    ? " desc" : ""}" data-sort="${c}">${c}</th>`).join("") + "<th></th>";
  const body = t.rows.map((r) => `<tr data-key="${esc(r.node ?? `${r.type}-${r.index}`)}" data-pod="${esc(r.pod)}">` +
    job.columns.map((c) => `<td class="${c === "phase" ? `phase phase-${esc(r[c])}` : ""}" data-col="${c}">` +
      `${esc(r[c])}</td>`).join("") +
    `<td>${r.phase === "Failed" && r.pod ? `<button class="log" data-pod="${esc(r.pod)}">log</button>` : ""}</td></tr>`)
    .join("");
  return `<table id="rows"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>
    <div class="pager"><button id="prev"${t.page === 0 ? " disabled" : ""}>‹</button>
    <span id="page">page ${t.page + 1} of ${t.pages} (${t.total} ${job.kind === "BroadcastJob" ? "nodes" : "replicas"})</span>
    <button id="next"${t.page + 1 >= t.pages ? " disabled" : ""}>›</button></div>`;
}

function extras(job) {
  if (job.controller === "cluster") return "";  // the upstream controllers record no ineligible nodes nor failure cause
  if (job.kind === "BroadcastJob") {
    const rows = job.ineligibleNodes.map((n) => `<tr><td>${esc(n.node)}</td><td>${esc(n.reason)}</td></tr>`).join("");
    const more = job.ineligibleTotal > job.ineligibleNodes.length ? `<p class="muted">The first ` +
      `${job.ineligibleNodes.length} of ${job.ineligibleTotal}.</p>` : "";
    return `<details id="ineligible-nodes"${state.openIneligible ? " open" : ""}><summary>Ineligible nodes ` +
      `(${job.ineligibleTotal})</summary>` + (rows ? `<table id="ineligible"><tr><th>node</th><th>reason</th></tr>` +
      `${rows}</table>${more}` : '<p class="muted">None.</p>') + "</details>";
  }
  const f = job.failure;
  return `<h3>Failure cause</h3><p id="failure">${f ? `${esc(f.replicaType)} ${esc(f.index)} (pod ${esc(f.pod)}, ` +
    `exit code ${esc(f.exitCode)}, ${esc(f.reason)}) ${esc(f.message)}` : '<span class="muted">None.</span>'}</p>`;
}

function timeline(job) {
  const conditions = job.conditions.map((c) => `<tr><td>${esc(c.lastTransitionTime || c.lastUpdateTime)}</td>
    <td>${esc(c.type)}</td><td>${esc(c.status)}</td><td>${esc(c.reason)}</td><td>${esc(c.message)}</td></tr>`).join("");
  const warnings = job.warnings.map((w) => `<tr><td>${esc(w.object)}</td><td>${esc(w.reason)}</td>
    <td>${esc(w.message)}</td><td>${esc(w.count)}</td></tr>`).join("");
  return `<h3>Recent warnings</h3>${warnings ? `<table id="warnings"><tr><th>object</th><th>reason</th>
    <th>message</th><th>count</th></tr>${warnings}</table>` : '<p class="muted">None.</p>'}
    <h3>Conditions</h3>${conditions ? `<table id="conditions"><tr><th>since</th><th>type</th><th>status</th>
    <th>reason</th><th>message</th></tr>${conditions}</table>` : '<p class="muted">None yet.</p>'}`;
}

async function renderJob(conn, namespace, record) {
  const query = new URLSearchParams({ page: state.page, size: state.size, sort: state.sort, desc: state.desc });
  const base = `api/jobs/${encodeURIComponent(conn)}/${encodeURIComponent(namespace)}/${encodeURIComponent(record)}`;
  const job = await api(`${base}?${query}`);
  const finished = ["completed", "failed", "succeeded", "stopped"].includes(job.phase.toLowerCase());
  const stop = job.runBy ? `<p><span class="tag" id="run-by">run by ${esc(job.runBy)}</span></p>`
    : job.canStop && !finished ? '<button class="danger" id="stop">Stop job</button>' : "";
  view.innerHTML = `<h2><span id="job-kind">${kindCell(job)}</span> ${esc(job.namespace)}/<span id="job-name">` +
    `${esc(job.name)}</span> <span id="job-phase" class="phase phase-${esc(job.phase)}">${esc(job.phase)}</span></h2>
    <p>Age ${duration(job.age)} · deadline in ${duration(job.deadlineIn)} · TTL expires in ${duration(job.ttlIn)} ·
    ${airflowLink(job).replace("<br>", " · ")}${job.stoppedBy ? ` · stopped by ${esc(job.stoppedBy)}` : ""}</p>
    <div class="cards">${cards(job)}</div>${stop}<p id="message" class="error"></p>${table(job)}${extras(job)}
    ${timeline(job)}<div id="log">${state.log ? `<h3>Log of ${esc(state.log.pod)}</h3>` +
    `<pre class="log">${esc(state.log.text)}</pre>` : ""}</div>`;
  view.querySelectorAll("th[data-sort]").forEach((th) => th.addEventListener("click", () => {
    state.desc = state.sort === th.dataset.sort ? !state.desc : false;
    state.sort = th.dataset.sort;
    refresh();
  }));
  view.querySelector("#prev").addEventListener("click", () => { state.page -= 1; refresh(); });
  view.querySelector("#next").addEventListener("click", () => { state.page += 1; refresh(); });
  view.querySelectorAll("button.log").forEach((b) => b.addEventListener("click", async () => {
    state.log = await api(`${base}/logs/${encodeURIComponent(b.dataset.pod)}`);
    refresh();
  }));
  const details = view.querySelector("#ineligible-nodes");
  if (details) details.addEventListener("toggle", () => { state.openIneligible = details.open; });
  const button = view.querySelector("#stop");
  if (button) button.addEventListener("click", async () => {
    if (!window.confirm(`Stop ${job.kind} ${job.namespace}/${job.name}? Its active pods are deleted.`)) return;
    try {
      await api(`${base}/stop`, { method: "POST" });
    } catch (error) {
      view.querySelector("#message").textContent = `Stop refused: ${error.message}`;
      return;
    }
    refresh();
  });
}

async function renderFound(params) {
  const data = await api(`api/find?${params}`);
  if (data.jobs.length === 1) {
    location.replace(location.pathname + jobHref(data.jobs[0]));
    return;
  }
  view.innerHTML = data.jobs.length ? `<p>Jobs of this task:</p><ul>${data.jobs.map((j) =>
    `<li><a href="${jobHref(j)}">${esc(j.kind)} ${esc(j.namespace)}/${esc(j.name)}</a></li>`).join("")}</ul>`
    : '<p class="muted" id="none">This task has no job (yet).</p>';
}

async function refresh() {
  clearTimeout(state.timer);
  const route = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const params = new URLSearchParams(location.search);
  try {
    if (route[0] === "job" && route.length === 4) {
      if (state.route !== location.hash) Object.assign(state, { route: location.hash, page: 0, sort: "", log: null });
      await renderJob(route[1], route[2], route[3]);
    } else if (params.has("dag_id") || params.has("name")) {
      await renderFound(params);
    } else {
      await renderList();
    }
    document.getElementById("live").classList.remove("stale");
  } catch (error) {
    document.getElementById("live").classList.add("stale");
    view.innerHTML = `<p class="error" id="error" data-status="${esc(error.status)}">${esc(error.status || "")} ` +
      `${esc(error.message)}</p>` + (error.status === 401 ? '<p><a target="_top" href="../">Log in to Airflow</a></p>' : "");
    if (error.status === 401 || error.status === 403 || error.status === 404) return;
  }
  state.timer = setTimeout(refresh, POLL_MS);
}

window.addEventListener("hashchange", refresh);
refresh();
