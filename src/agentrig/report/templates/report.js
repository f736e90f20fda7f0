"use strict";
// The report's only script. It reads its data from <script type="application/json"> blocks and
// writes every value into the page as text (textContent / createTextNode): nothing that came from
// a model, a tool or a config is ever parsed as HTML.
(function () {
  const STATUS = ["fail", "pass", "invalid"];
  const PAGE = 40;

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") node.className = v;
        else if (k === "text") node.textContent = String(v);
        else if (k.startsWith("data-")) node.setAttribute(k, String(v));
        else if (k === "title") node.title = String(v);
        else node.setAttribute(k, String(v));
      }
    }
    for (const kid of kids) add(node, kid);
    return node;
  }
  function add(node, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { for (const k of kid) add(node, k); return; }
    node.appendChild(typeof kid === "object" ? kid : document.createTextNode(String(kid)));
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function readJSON(id) {
    const node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    return typeof x === "number" ? (Number.isInteger(x) ? String(x) : x.toFixed(digits === undefined ? 3 : digits)) : String(x);
  }
  function pretty(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "string") return v;
    try {
      const flat = JSON.stringify(v);
      return flat.length <= 100 ? flat : JSON.stringify(v, null, 2);
    } catch (e) { return String(v); }
  }
  function maybeJSON(text) {
    // a tool result that is JSON is shown indented; anything else as it is
    if (typeof text !== "string" || text.length > 200000) return text;
    const s = text.trim();
    if (!(s.startsWith("{") || s.startsWith("["))) return text;
    try { return pretty(JSON.parse(s)); } catch (e) { return text; }
  }
  function longText(text, cls) {
    // a long text folds after its first lines (the whole text stays in the page)
    const lines = text.split("\n");
    if (lines.length <= 24) return el("pre", { class: cls }, text);
    return el("details", { class: "long" }, el("summary", null, lines.slice(0, 3).join(" ").slice(0, 160) + " … (" + lines.length + " lines)"),
      el("pre", { class: cls }, text));
  }

  const grid = readJSON("grid-data");
  const meta = readJSON("report-meta") || {};
  if (!grid) return;
  const arms = grid.arms;
  const byArm = arms.map(() => new Map());
  arms.forEach((arm, ai) => {
    for (const c of arm.cells) byArm[ai].set(c[0] * 100000 + c[1], c);
  });
  const labelIndex = new Map(arms.map((a, i) => [a.label, i]));
  const armTasks = arms.map((a) => new Set(a.tasks));
  const complete = !!meta.complete;
  const dense = Math.max(0, ...arms.map((a) => a.trials)) > 16;

  // ---------------------------------------------------------------- the outcome grid
  const taskName = (t) => grid.tasks[t][0] + "/" + grid.tasks[t][1];
  const allTasks = grid.tasks.map((_, i) => i);
  function stats(t) {
    let mixed = 0, fails = 0, balance = 1;
    arms.forEach((arm, ai) => {
      let n = 0, c = 0;
      for (let k = 0; k < arm.trials; k++) {
        const cell = byArm[ai].get(t * 100000 + k);
        if (cell && cell[2] !== 2) { n++; if (cell[2] === 1) c++; }
      }
      if (n) {
        fails += (n - c) / n;
        if (c > 0 && c < n) { mixed++; balance = Math.min(balance, Math.abs(c / n - 0.5)); }
      }
    });
    return { mixed, fails, balance };
  }
  const taskStats = allTasks.map(stats);
  const orders = {
    task: (a, b) => a - b,
    mixed: (a, b) => (taskStats[b].mixed - taskStats[a].mixed) || (taskStats[a].balance - taskStats[b].balance) || (a - b),
    failing: (a, b) => (taskStats[b].fails - taskStats[a].fails) || (a - b),
  };
  let order = "mixed", filter = "", page = 0;

  function cellTitle(arm, t, k, cell) {
    const head = arm.label + " · " + taskName(t) + " #" + k;
    if (!cell) return head + ": not played";
    const parts = [head, (cell[2] === 2 ? "INVALID" : cell[2] === 1 ? "pass" : "fail") + ", reward " + fmt(cell[3]),
      "termination " + grid.terminations[cell[4]], cell[5] + " messages, " + cell[6] + " model calls",
      cell[7] + " tokens, " + cell[8] + " retries, " + fmt(cell[9], 2) + " s"];
    if (cell[10] > 1) parts.push(cell[10] + " stored attempts");
    if (cell[11] < 0) parts.push("trajectory not in this file");
    return parts.join("\n");
  }

  function renderGrid() {
    const host = document.getElementById("grid-host");
    if (!host) return;
    clear(host);
    const f = filter.toLowerCase();
    const rows = allTasks.filter((t) => !f || taskName(t).toLowerCase().includes(f)).sort(orders[order]);
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    const shown = rows.slice(page * PAGE, page * PAGE + PAGE);
    const table = el("table", { class: "grid" + (dense ? " dense" : ""), id: "grid-table" });
    const head = el("tr", null, el("th", { class: "task" }, "task"));
    arms.forEach((arm) => head.appendChild(el("th", { class: "arm" }, arm.label)));
    table.appendChild(el("thead", null, head));
    const body = el("tbody");
    for (const t of shown) {
      const tr = el("tr", null, el("td", { class: "task", title: taskName(t) }, taskName(t)));
      arms.forEach((arm, ai) => {
        const td = el("td", { class: "cells" });
        if (!armTasks[ai].has(t)) { td.appendChild(el("span", { class: "na" }, "not in this run")); tr.appendChild(td); return; }
        let n = 0, c = 0;
        for (let k = 0; k < arm.trials; k++) {
          const cell = byArm[ai].get(t * 100000 + k);
          let cls = "c missing";
          if (cell) {
            cls = "c " + STATUS[cell[2]];
            if (cell[2] === 0 && cell[3] > 0) cls += " part";
            if (cell[11] >= 0 && !complete) cls += " in";
            if (cell[10] > 1) cls += " retried";
            if (cell[2] !== 2) { n++; if (cell[2] === 1) c++; }
          }
          td.appendChild(el("span", { class: cls, title: cellTitle(arm, t, k, cell), "data-a": ai, "data-t": t, "data-k": k }));
        }
        td.appendChild(el("span", { class: "count" }, c + "/" + n));
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
    table.appendChild(body);
    host.appendChild(table);
    const pager = document.getElementById("grid-page");
    if (pager) pager.textContent = rows.length ? "tasks " + (page * PAGE + 1) + "–" + (page * PAGE + shown.length) + " of " + rows.length : "no task matches";
  }

  function setupGrid() {
    const sel = document.getElementById("grid-order");
    if (sel) sel.addEventListener("change", () => { order = sel.value; page = 0; renderGrid(); });
    const inp = document.getElementById("grid-filter");
    if (inp) inp.addEventListener("input", () => { filter = inp.value; page = 0; renderGrid(); });
    const prev = document.getElementById("grid-prev"), next = document.getElementById("grid-next");
    if (prev) prev.addEventListener("click", () => { if (page > 0) { page--; renderGrid(); } });
    if (next) next.addEventListener("click", () => { page++; renderGrid(); });
    const host = document.getElementById("grid-host");
    if (host) host.addEventListener("click", (ev) => {
      const cell = ev.target.closest("span.c");
      if (cell && !cell.classList.contains("missing")) open(+cell.dataset.a, +cell.dataset.t, +cell.dataset.k);
    });
    renderGrid();
  }

  // ---------------------------------------------------------------- the trajectory viewer
  function kv(pairs) {
    const dl = el("dl", { class: "kv" });
    for (const [k, v] of pairs) {
      if (v === null || v === undefined || v === "") continue;
      dl.appendChild(el("dt", null, k));
      dl.appendChild(el("dd", null, v));
    }
    return dl;
  }

  function checksTable(title, rows, cols) {
    if (!rows || !rows.length) return null;
    const table = el("table", { class: "checks" });
    table.appendChild(el("tr", null, cols.map(([h]) => el("th", null, h))));
    for (const r of rows) table.appendChild(el("tr", { class: r.matched === false || r.met === false ? "bad" : "" },
      cols.map(([, f]) => el("td", null, f(r)))));
    return el("div", { class: "checkbox" }, el("h4", null, title), table);
  }

  function verdictBox(a) {
    const info = a.reward_info || {};
    const box = el("div", { class: "verdict " + (a.valid ? (a.reward >= 1 - 1e-6 ? "pass" : "fail") : "invalid") });
    box.appendChild(kv([["reward", fmt(a.reward)], ["valid", a.valid ? "yes" : "no — " + (a.invalid_cause || "infrastructure fault")],
      ["termination", a.termination], ["attempt", a.attempt], ["seed", a.seed], ["started", a.started_at],
      ["duration", fmt(a.duration_s, 2) + " s"], ["reward basis", (info.reward_basis || []).join(", ")]]));
    const comps = info.components || {};
    const names = Object.keys(comps);
    if (names.length) {
      const row = el("div", { class: "components" });
      const unchecked = info.unchecked || [];  // nothing to check: τ²-bench's 1.0, not computed
      for (const n of names) {
        const v = unchecked.includes(n) ? null : comps[n];
        const inBasis = (info.reward_basis || []).includes(n);
        row.appendChild(el("span", { class: "comp " + (v === null ? "none" : v >= 1 - 1e-6 ? "ok" : "bad") + (inBasis ? " basis" : ""),
          title: (info.notes || {})[n] || (inBasis ? "in the reward basis" : "not in the reward basis") }, n + " " + (v === null || v === undefined ? "—" : fmt(v, 2))));
      }
      box.appendChild(row);
    }
    add(box, checksTable("gold actions", info.action_checks, [["", (r) => (r.matched ? "✓" : "✗")], ["tool", (r) => (r.requestor === "user" ? "user:" : "") + r.name],
      ["arguments", (r) => pretty(r.arguments)], ["write", (r) => (r.write ? "write" : "")]]));
    add(box, checksTable("environment assertions", info.env_assertions, [["", (r) => (r.met ? "✓" : "✗")], ["check", (r) => r.env_type + "." + r.func_name],
      ["arguments", (r) => pretty(r.arguments)], ["message", (r) => r.problem || r.message || ""]]));
    add(box, checksTable("information to communicate", info.communicate_checks, [["", (r) => (r.met ? "✓" : "✗")], ["text", (r) => r.text]]));
    add(box, checksTable("NL assertions", info.nl_assertions, [["", (r) => (r.met ? "✓" : "✗")], ["assertion", (r) => r.text], ["judge", (r) => r.justification || ""]]));
    return box;
  }

  function callLine(c, idx) {
    const u = c.usage || {};
    const tries = c.attempts || [];
    const retries = tries.slice(0, -1);  // every attempt but the last was retried: attempts − 1
    const line = el("div", { class: "call" + (c.error ? " error" : "") });
    line.appendChild(el("span", { class: "tag" }, "model call " + idx));
    add(line, [" ", c.role + " · " + c.purpose + (c.model ? " · " + c.model : ""),
      " · " + (u.prompt_tokens || 0) + "+" + (u.completion_tokens || 0) + " tokens",
      c.latency_s !== undefined ? " · " + fmt(c.latency_s, 2) + " s" : "",
      c.finish_reason ? " · " + c.finish_reason : ""]);
    if (retries.length) {
      const list = el("ul", { class: "retries" });
      for (const t of retries) list.appendChild(el("li", null, "retry after " + t.cause + (t.status ? " (HTTP " + t.status + ")" : "") +
        (t.wait_s ? ", waited " + fmt(t.wait_s, 2) + " s" : "") + (t.detail ? ": " + t.detail : "")));
      line.appendChild(list);
    }
    const last = tries.length ? tries[tries.length - 1] : null;
    if (c.error) line.appendChild(el("div", { class: "err" }, "failed: " + c.error +
      (last && last.cause ? " (last attempt: " + last.cause + (last.status ? ", HTTP " + last.status : "") + ")" : "")));
    return line;
  }

  // the benchmark's rendering hints (bench/base.py VIEWER_HINTS): data only, applied generically
  const hints = meta.viewer || {};
  const codeArgs = hints.code_arguments || {};
  const eventHints = hints.events || {};

  function callArgs(tc) {
    // a call whose hinted argument is a string (a shell command) shows it as code, the rest as JSON
    const key = codeArgs[tc.name];
    const a = tc.arguments;
    if (key && a && typeof a === "object" && !Array.isArray(a) && typeof a[key] === "string") {
      const rest = Object.assign({}, a);
      delete rest[key];
      return [el("pre", { class: "code" }, a[key]), Object.keys(rest).length ? el("pre", null, pretty(rest)) : null];
    }
    return el("pre", null, tc.arguments !== undefined ? pretty(tc.arguments) : tc.arguments_raw);
  }

  function messageBox(m, calls, history, resultOf) {
    // resultOf: the agent's unanswered call this user message answers (a text-mode observation)
    const who = m.role === "tool" ? "tool result" + (m.requestor === "user" ? " (user's tool)" : "") : m.role === "assistant" ? "agent" :
      resultOf ? "result of " + resultOf.name : m.role;
    const box = el("div", { class: "msg " + m.role + (resultOf ? " result" : "") + (m.error ? " error" : "") + (history ? " history" : "") });
    const forId = m.tool_call_id || (resultOf ? resultOf.id : null);
    box.appendChild(el("div", { class: "who" }, who, el("span", { class: "turn" }, " turn " + m.turn + (m.t !== undefined ? " · " + fmt(m.t, 2) + " s" : "") +
      (forId ? " · for " + forId : "") + (history ? " · task history" : "") + (m.error ? " · ERROR" : ""))));
    if (m.reasoning) box.appendChild(el("details", { class: "reasoning" }, el("summary", null, "reasoning"), el("pre", null, m.reasoning)));
    if (m.content) box.appendChild(m.role === "tool" || resultOf ? longText(maybeJSON(m.content), "content") : el("pre", { class: "content" }, m.content));
    for (const tc of m.tool_calls || []) {
      box.appendChild(el("div", { class: "toolcall" }, el("span", { class: "fn" }, tc.name), el("span", { class: "id" }, " " + (tc.id || "")),
        callArgs(tc), tc.arguments_error ? el("div", { class: "err" }, "arguments not a JSON object: " + tc.arguments_error) : null));
    }
    if (m.extra && Object.keys(m.extra).length) box.appendChild(el("details", null, el("summary", null, "provider fields"), el("pre", null, pretty(m.extra))));
    if (m.call !== undefined && calls[m.call]) box.appendChild(callLine(calls[m.call], m.call));
    return box;
  }

  function memoryLine(e) {
    // the memory plug-in's trigger: what reached the agent's next call, in one line
    const d = e.data || {};
    if (e.plugin !== "memory" || (e.kind !== "memory.trigger" && e.kind !== "memory.show")) return null;
    const edits = d.edit && d.edit.tool_calls ? d.edit.tool_calls.length + " bank edit(s)" : "";
    const errors = [d.edit && d.edit.error, d.decide && d.decide.error].filter((x) => x).join("; ");
    const head = ["step " + d.step, d.mode, edits, d.decide ? "decision " + d.decide.decision : ""].filter((x) => x).join(" · ");
    return el("div", { class: "memory" }, head + (d.injected ? " · injected:" : " · nothing injected"),
      d.injected ? el("pre", { class: "content" }, d.injected) : null, errors ? el("div", { class: "err" }, errors) : null);
  }

  function hintedLine(e) {
    // an event the benchmark gave a hint for: a line of its chosen values, a table, a folded text
    const h = eventHints[e.plugin + "." + e.kind];
    if (!h) return null;
    const d = e.data || {};
    const values = (h.fields || []).filter((k) => d[k] !== undefined && d[k] !== null && d[k] !== "" && d[k] !== false)
      .map((k) => k.endsWith("_s") && typeof d[k] === "number" ? k.slice(0, -2).replace(/_/g, " ") + " " + fmt(d[k], 2) + " s"
        : k.replace(/_/g, " ") + " " + (typeof d[k] === "number" ? fmt(d[k], 2) : typeof d[k] === "string" ? d[k] : pretty(d[k])));
    const box = el("div", { class: "hinted" }, el("b", null, h.label || e.kind), values.length ? " · " + values.join(" · ") : "");
    const rows = h.table ? d[h.table] : null;
    if (Array.isArray(rows) && rows.length && typeof rows[0] === "object") {
      const cols = Object.keys(rows[0]);
      const table = el("table", { class: "checks" }, el("tr", null, cols.map((c) => el("th", null, c))));
      // a row with a value that reads as a failure ("failed", "error") is marked
      for (const r of rows) table.appendChild(el("tr", { class: Object.values(r).some((v) => /^(failed|error)$/i.test(String(v))) ? "bad" : "" },
        cols.map((c) => el("td", null, typeof r[c] === "string" ? r[c] : pretty(r[c])))));
      box.appendChild(table);
    }
    const text = h.text ? d[h.text] : null;
    if (typeof text === "string" && text) {
      const n = text.split("\n").length;
      box.appendChild(n <= 6 ? el("pre", { class: "content" }, text)
        : el("details", { class: "long" }, el("summary", null, h.text + " (" + n + " lines)"), el("pre", { class: "content" }, text)));
    }
    return box;
  }

  function eventBox(e) {
    const line = memoryLine(e) || hintedLine(e);
    const data = e.data && Object.keys(e.data).length ? el("pre", null, pretty(e.data)) : null;
    return el("div", { class: "event" }, el("span", { class: "tag" }, eventHints[e.plugin + "." + e.kind] ? "event" : "plug-in event"),
      " " + e.plugin + " · " + e.kind + " · turn " + e.turn,
      line, line && data ? el("details", null, el("summary", null, "event data"), data) : data);
  }

  function timeline(a) {
    const out = el("div", { class: "timeline" });
    const calls = a.calls || [];
    const shown = new Set(a.messages.filter((m) => m.call !== undefined).map((m) => m.call));
    const loose = calls.map((c, i) => [c, i]).filter(([, i]) => !shown.has(i));
    const events = a.events || [];
    const before = (turn) => {
      for (const e of events) if (e.turn === turn) out.appendChild(eventBox(e));
      for (const [c, i] of loose) if (c.turn === turn) out.appendChild(callLine(c, i));
    };
    let pending = null;  // the latest agent message's first unanswered call
    a.messages.forEach((m, i) => {
      before(i);
      let resultOf = null;
      if (m.role === "assistant") pending = (m.tool_calls || [])[0] || null;
      else if (m.role === "tool" && m.requestor !== "user") pending = null;
      else if (m.role === "user" && m.content && pending) { resultOf = pending; pending = null; }
      out.appendChild(messageBox(m, calls, i < (a.history_len || 0), resultOf));
    });
    const end = a.messages.length;
    for (const e of events) if (e.turn >= end) out.appendChild(eventBox(e));
    for (const [c, i] of loose) if (c.turn >= end) out.appendChild(callLine(c, i));
    return out;
  }

  function attemptView(a) {
    const box = el("div", { class: "attempt" });
    box.appendChild(verdictBox(a));
    const counters = Object.entries(a.counters || {});
    if (counters.length) box.appendChild(el("div", { class: "counters" }, counters.map(([k, v]) => el("span", null, k + " " + v))));
    box.appendChild(timeline(a));
    return box;
  }

  function open(ai, t, k) {
    const view = document.getElementById("viewer");
    if (!view) return;
    const arm = arms[ai];
    const cell = byArm[ai].get(t * 100000 + k);
    clear(view);
    view.appendChild(el("h3", { id: "viewer-title" }, arm.label + " · " + taskName(t) + " · trial " + k));
    if (!cell) { view.appendChild(el("p", null, "This trial has not been played.")); return show(view); }
    if (cell[11] < 0) {
      view.appendChild(el("p", { class: "note" }, "This trial's trajectory is not in this file (the report keeps a bounded set; see “What this file holds”)."));
      view.appendChild(kv([["outcome", STATUS[cell[2]]], ["reward", fmt(cell[3])], ["termination", grid.terminations[cell[4]]],
        ["messages", cell[5]], ["model calls", cell[6]], ["tokens", cell[7]], ["retries", cell[8]], ["duration", fmt(cell[9], 2) + " s"],
        ["stored attempts", cell[10]]]));
      view.appendChild(el("p", null, "To read it: ", el("code", null, "agentrig export " + arm.run_dir + " --format jsonl --arm " + arm.arm),
        " and look for task " + grid.tasks[t][1] + ", trial " + k + "."));
      return show(view);
    }
    const data = readJSON("t-" + cell[11]);
    const attempts = data.attempts;
    if (data.stored_attempts > 1) view.appendChild(el("p", { class: "note" }, data.stored_attempts + " stored attempts of this trial (invalid attempts are replayed by the runner)" +
      (data.stored_attempts > attempts.length ? "; " + attempts.length + " shown" : "") + "."));
    const body = el("div");
    if (attempts.length > 1) {
      const tabs = el("div", { class: "tabs" });
      attempts.forEach((a, i) => {
        const b = el("button", { type: "button", class: "tab" }, "attempt " + a.attempt + (a.valid ? "" : " (invalid)"));
        b.addEventListener("click", () => { clear(body); body.appendChild(attemptView(a)); });
        tabs.appendChild(b);
      });
      view.appendChild(tabs);
    }
    const main = attempts.find((a) => a.valid) || attempts[attempts.length - 1];
    body.appendChild(attemptView(main));
    view.appendChild(body);
    show(view);
  }
  function show(view) {
    const sec = document.getElementById("trajectory");
    if (sec) sec.hidden = false;
    view.scrollIntoView({ block: "start" });
  }

  // links elsewhere in the page (taxonomy examples, consistency rows) open a trial too
  document.addEventListener("click", (ev) => {
    const link = ev.target.closest("[data-open-arm]");
    if (!link) return;
    ev.preventDefault();
    const ai = labelIndex.get(link.dataset.openArm);
    const t = grid.tasks.findIndex((x) => x[0] === link.dataset.openDomain && x[1] === link.dataset.openTask);
    if (ai !== undefined && t >= 0) open(ai, t, +link.dataset.openTrial);
  });

  setupGrid();
  window.agentrigReport = { open: open, meta: meta };
})();
