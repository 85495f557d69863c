// Real-browser checks of runlog's HTML pages (run by .ci/browser): headless Chromium,
// driven by playwright-core, opens the pages the binary writes and checks that
//  - every turn, interval, run attempt, tool call, callback and error the tables hold is
//    drawn (SVG elements counted by class against `runlog query ... --format json`), and
//    every model call is counted once (singly or in a bin);
//  - hovering an element shows its details, clicking pins them;
//  - the links between the report and the agents' pages resolve, both ways;
//  - no console errors, and no request leaves the page (every non-file request is
//    routed to a failure and fails the check);
//  - a 10,000+-event agent renders in under 2 s and weighs under 5 MB (the time is
//    printed: a budget check of this script, not a unit test);
// and saves screenshots to docs/.
//
// Usage: node tests/browser/check.mjs RUNLOG_BINARY WORK_DIR

import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

const [bin, workArg] = process.argv.slice(2);
if (!bin || !workArg) {
  console.error("usage: node tests/browser/check.mjs RUNLOG_BINARY WORK_DIR");
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const work = path.resolve(workArg);
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });

const failures = [];
function check(ok, what) {
  if (!ok) {
    failures.push(what);
    console.error(`FAIL ${what}`);
  }
}
function runlog(...args) {
  return execFileSync(bin, args, { encoding: "utf8", maxBuffer: 1 << 28 });
}
/** Rows of `runlog query ... --format json` (one JSON object a line). */
function query(source, sql) {
  return runlog("query", ...source, sql, "--format", "json")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

// The pages: a generated log with anomalies (report + drill-down), a golden case with a
// subagent and callbacks, and one long agent.
const log = path.join(work, "gen.jsonl");
runlog("gen", "--agents", "80", "--seed", "5", "--anomalies", "0.08", "--out", log);
const wh = path.join(work, "wh");
runlog("ingest", log, "--warehouse", wh);
const site = path.join(work, "site");
runlog("report", "--warehouse", wh, "--html-dir", site, "--quiet");

/** One agent of `intervals` intervals of one turn with `calls` model calls each. */
function longAgent(intervals, calls) {
  const lines = [];
  let seq = 0;
  const push = (session, turn, type, data) => {
    seq += 1;
    const ts = new Date(Date.UTC(2026, 10, 3, 10, 0, 0) + seq * 250).toISOString();
    const ev = { seq, ts, root: "long", session, type, data };
    if (turn) ev.turn = turn;
    lines.push(JSON.stringify(ev));
  };
  for (let k = 0; k < intervals; k++) {
    const t = `t${k}`;
    push("long", null, "inbox/receipt", {});
    push("long", t, "turn/start", {});
    for (let c = 0; c < calls; c++) {
      for (let d = 0; d < 4; d++) push("long", t, "reasoning/delta", { text: "hm " });
      for (let d = 0; d < 6; d++) push("long", t, "text/delta", { text: "word " });
      push("long", t, "progress", { message: "working" });
      push("long", t, "model/end", { usage: { input_tokens: 100 + c, output_tokens: 7 } });
    }
    push("long", t, "tool/call", { call_id: `c${k}`, name: "search", arguments: { q: "x" } });
    push("long", t, "tool/result", { call_id: `c${k}`, status: k % 7 ? "ok" : "error" });
    if (k % 9 === 4) {
      push("long", t, "callback/open", { callback_id: `cb${k}`, kind: "approval", title: "Approve?" });
      push("long", t, "callback/answer", { callback_id: `cb${k}` });
    }
    push("long", t, "turn/end", { reason: { kind: "completed", stop_reason: "end_turn" }, text: "done" });
    push("long", null, "agent/idle", {});
  }
  return lines.join("\n") + "\n";
}
const longLog = path.join(work, "long.jsonl");
fs.writeFileSync(longLog, longAgent(40, 21));
const longEvents = fs.readFileSync(longLog, "utf8").trim().split("\n").length;
check(longEvents >= 10000, `the long agent has ${longEvents} events (>= 10000)`);
const longPage = path.join(work, "long.html");
runlog("replay", longLog, "--root", "long", "--html", longPage);
const casePage = path.join(work, "s4a.html");
const caseLog = path.join(repo, "tests/cases/s4a_callbacks/input.jsonl");
runlog("replay", caseLog, "--root", "r1", "--html", casePage);

// What the tables say, per root.
const KINDS = {
  "tl-turn": "SELECT root, count(*) AS n FROM turns GROUP BY root",
  "tl-interval": "SELECT root, count(*) AS n FROM intervals GROUP BY root",
  "tl-run": "SELECT root, count(*) AS n FROM runs GROUP BY root",
  "tl-tool": "SELECT root, count(*) AS n FROM tool_calls GROUP BY root",
  "tl-callback": "SELECT root, count(*) AS n FROM callbacks GROUP BY root",
  "tl-error": "SELECT root, count(*) AS n FROM errors GROUP BY root",
  "tl-model": "SELECT root, count(*) AS n FROM events WHERE type = 'model/end' GROUP BY root",
  "tl-voice":
    "SELECT root, count(*) AS n FROM events WHERE type IN ('text/delta', 'reasoning/delta', 'progress') GROUP BY root",
};
function counts(source) {
  const out = {};
  for (const [cls, sql] of Object.entries(KINDS)) {
    for (const r of query(source, sql)) {
      (out[r.root] ??= {})[cls] = Number(r.n);
    }
  }
  return out;
}
const whCounts = counts(["--warehouse", wh]);
const longCounts = counts([longLog]);
const caseCounts = counts([caseLog]);

// A fresh profile folder (Playwright passes it as --user-data-dir).
const profile = fs.mkdtempSync(path.join(work, "profile-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1400, height: 900 },
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const leaks = [];
await context.route("**/*", (route) => {
  const url = route.request().url();
  if (url.startsWith("file:")) return route.continue();
  leaks.push(url);
  return route.abort();
});
const page = context.pages()[0] ?? (await context.newPage());
const consoleErrors = [];
page.on("console", (m) => {
  if (m.type() === "error") consoleErrors.push(`${page.url()}: ${m.text()}`);
});
page.on("pageerror", (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
page.on("request", (r) => {
  if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) leaks.push(r.url());
});

/** The drawn elements of the open page: count per class (bins by data-count). */
async function drawn() {
  return page.evaluate((classes) => {
    const out = {};
    for (const cls of classes) {
      const els = [...document.querySelectorAll(`svg.plot .${cls}`)];
      out[cls] = els.reduce((s, e) => s + Number(e.dataset.count || 1), 0);
      out[`${cls}:elements`] = els.length;
    }
    return out;
  }, Object.keys(KINDS));
}

async function checkCounts(name, root, want) {
  const got = await drawn();
  for (const cls of Object.keys(KINDS)) {
    const w = (want[root] ?? {})[cls] ?? 0;
    check(got[cls] === w, `${name}: ${cls} drawn ${got[cls]}, tables ${w}`);
  }
  return got;
}

/** Hover shows an element's details; click pins them. */
async function checkDetails(name) {
  const el = page.locator("svg.plot .tl-turn").first();
  if ((await el.count()) === 0) return;
  const seq = await el.getAttribute("data-seq");
  await el.hover({ force: true });
  const box = page.locator("#tl-detail");
  await box.waitFor({ state: "visible", timeout: 2000 }).catch(() => {});
  check(await box.isVisible(), `${name}: hover shows the details`);
  const text = (await box.textContent()) ?? "";
  check(text.includes(`"seq": ${seq}`) && text.includes('"kind": "turn"'), `${name}: the details are the turn's (seq ${seq})`);
  check(text.includes('"state_record"') || text.includes("state records"), `${name}: the details hold the state record`);
  const other = page.locator("svg.plot .tl-interval").first();
  if ((await other.count()) > 0) {
    await other.click({ force: true });
    const pinned = (await box.textContent()) ?? "";
    check(pinned.includes('"kind": "interval"'), `${name}: a click pins the interval's details`);
    await page.locator("svg.plot .tl-turn").first().hover({ force: true });
    check(((await box.textContent()) ?? "").includes('"kind": "interval"'), `${name}: pinned details stay on hover`);
    await page.locator("#tl-detail button").click();
    check(!(await box.isVisible()), `${name}: the close button hides the details`);
  }
}

// The report and every agent page it links.
const indexUrl = pathToFileURL(path.join(site, "index.html")).href;
await page.goto(indexUrl);
const hrefs = await page.$$eval("a.agent-link", (as) => as.map((a) => [a.getAttribute("href"), a.textContent]));
check(hrefs.length > 3, `the report links ${hrefs.length} notable agents`);
let shot = null;
for (const [href, root] of hrefs) {
  const file = path.join(site, href);
  check(fs.existsSync(file), `link ${href} resolves to a file`);
  if (!fs.existsSync(file)) continue;
  await page.goto(pathToFileURL(file).href);
  const h1 = await page.textContent("h1");
  check(h1?.includes(root), `${href}: the page is ${root}'s`);
  const got = await checkCounts(href, root, whCounts);
  const size = got["tl-turn"] + got["tl-tool"] + got["tl-callback"] + got["tl-error"];
  if (!shot || size > shot.size) shot = { href, size };
}
// Links both ways: index → first agent → back to the index.
if (hrefs.length) {
  await page.goto(indexUrl);
  await page.click(`a.agent-link >> nth=0`);
  await page.waitForLoadState("load");
  check(page.url().endsWith(hrefs[0][0].replace(/^agents\//, "agents/")), `the first agent link opens ${hrefs[0][0]} (${page.url()})`);
  await checkDetails(hrefs[0][0]);
  await page.click("#back");
  await page.waitForLoadState("load");
  check(page.url().startsWith(indexUrl), `the back link returns to the report (${page.url()})`);
  check((await page.locator("#s-notable").count()) === 1, "the report has its notable agents section");
}

// The golden case: a subagent lane nested under its parent, open callbacks.
await page.goto(pathToFileURL(casePage).href);
await checkCounts("s4a_callbacks", "r1", caseCounts);
const lanes = await page.$$eval("svg.plot g.tl-lane", (gs) => gs.map((g) => [g.dataset.session, g.dataset.depth]));
check(JSON.stringify(lanes) === JSON.stringify([["r1", "0"], ["sub1", "1"]]), `s4a: lanes ${JSON.stringify(lanes)}`);
await checkDetails("s4a_callbacks");

// The long agent: render time and weight.
const longBytes = fs.statSync(longPage).size;
check(longBytes < 5_000_000, `the long agent's page weighs ${longBytes} bytes (< 5 MB)`);
const t0 = Date.now();
await page.goto(pathToFileURL(longPage).href, { waitUntil: "load" });
await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
const ms = Date.now() - t0;
console.log(`long agent: ${longEvents} events, page ${(longBytes / 1e6).toFixed(2)} MB, rendered in ${ms} ms`);
check(ms < 2000, `the long agent's page renders in ${ms} ms (< 2000)`);
await checkCounts("long", "long", longCounts);
await checkDetails("long");

// Screenshots.
const docs = path.join(repo, "docs");
fs.mkdirSync(docs, { recursive: true });
if (shot) {
  await page.goto(pathToFileURL(path.join(site, shot.href)).href);
  await page.locator("svg.plot .tl-turn").first().hover({ force: true });
  await page.screenshot({ path: path.join(docs, "timeline.png"), fullPage: true });
}
await page.goto(pathToFileURL(longPage).href);
await page.screenshot({ path: path.join(docs, "timeline-long.png") });

await context.close();
check(consoleErrors.length === 0, `console errors: ${consoleErrors.join("; ")}`);
check(leaks.length === 0, `requests left the page: ${leaks.join(", ")}`);
if (failures.length) {
  console.error(`${failures.length} browser check(s) failed`);
  process.exit(1);
}
console.log(`browser checks passed: ${hrefs.length} agent pages, the golden case, the long agent`);
