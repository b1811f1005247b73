#!/usr/bin/env node
// End-to-end test with the official TypeScript SDK clients
// (../shared/mcp-client/client.mjs): jarvis over stdio and Streamable HTTP,
// legacy (initialize) and modern (2026-07-28) eras. Each run loads a
// conformance trace, calls ops_summary and checks every row against
// TraceLens's perf_report_csvs/ops_summary.csv.
//
//   node tests/e2e/client_e2e.mjs <jarvis binary> <shared dir> [<mcp-client dir>]
// The client dir defaults to <shared dir>/mcp-client; the ctest wrapper passes
// a copy staged in the build tree (dependencies installed there).
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";

const [binary, shared, clientDir] = process.argv.slice(2);
if (!binary || !shared) {
  console.error("usage: client_e2e.mjs <jarvis binary> <shared dir> [<mcp-client dir>]");
  process.exit(2);
}
const client = path.join(clientDir || path.join(shared, "mcp-client"), "client.mjs");
const TRACE = "conformance/h100_bert-small";
let failures = 0;

function check(ok, what) {
  if (!ok) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
}

// RFC 4180 CSV (pandas quoting) -> array of objects.
function parseCsv(text) {
  const rows = [];
  let row = [], field = "", quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { field += '"'; i++; }
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") { row.push(field); field = ""; }
    else if (c === "\n") { row.push(field); rows.push(row); row = []; field = ""; }
    else if (c !== "\r") field += c;
  }
  if (field !== "" || row.length) { row.push(field); rows.push(row); }
  const [header, ...body] = rows;
  return body.map((r) => Object.fromEntries(header.map((h, k) => [h, r[k]])));
}

const close = (a, b) => Math.abs(a - b) <= 1e-5 * Math.max(1, Math.abs(a));

function checkRows(label, result) {
  const reference = parseCsv(readFileSync(path.join(shared, TRACE, "perf_report_csvs", "ops_summary.csv"), "utf8"));
  const rows = result?.structuredContent?.rows ?? JSON.parse(result.content[0].text.slice(result.content[0].text.indexOf("\n{") + 1)).rows;
  check(rows.length === reference.length, `${label}: ${rows.length} rows, expected ${reference.length}`);
  const byName = new Map(rows.map((r) => [r.name, r]));
  for (const ref of reference) {
    const row = byName.get(ref.name);
    check(row !== undefined, `${label}: row ${ref.name} missing`);
    if (!row) continue;
    check(close(Number(ref.total_direct_kernel_time_sum), row.total_direct_kernel_time_us), `${label}: ${ref.name} direct time`);
    check(close(Number(ref.total_subtree_kernel_time_sum), row.total_subtree_kernel_time_us), `${label}: ${ref.name} subtree time`);
    check(Number(ref.Count) === row.count, `${label}: ${ref.name} count`);
    check(close(Number(ref["Percentage (%)"]), row.percent), `${label}: ${ref.name} percent`);
    const cats = ref.Categories.replace(/[\[\]' ]/g, "").split(",").filter(Boolean);
    check(JSON.stringify(cats) === JSON.stringify(row.categories), `${label}: ${ref.name} categories`);
  }
}

// Over HTTP a stateless (2026-07-28) request shares no handle list with other
// clients: its handle is an unguessable capability. The fixed call list
// cannot carry it over, so HTTP runs name the trace by path in ops_summary.
function runClient(label, args, { byPath = false } = {}) {
  const calls = [
    { name: "load_trace", arguments: { path: `${TRACE}/trace.json.gz` } },
    { name: "ops_summary", arguments: { trace: byPath ? `${TRACE}/trace.json.gz` : "t1", top_n: 10000 } },
  ];
  const r = spawnSync("node", [client, "--compact", "--progress", "--expect-tool", "load_trace",
    "--expect-tool", "ops_summary", ...calls.flatMap((c) => ["--call", JSON.stringify(c)]), ...args],
    { encoding: "utf8", timeout: 120000 });
  let out;
  try { out = JSON.parse(r.stdout); } catch { out = null; }
  check(r.status === 0 && out?.ok, `${label}: client exit ${r.status} ${out?.error ?? r.stderr.slice(-500)}`);
  if (!out?.ok) return;
  check(out.calls.length === 2 && out.calls.every((c) => c.ok && !c.isError), `${label}: calls failed`);
  const handle = out.calls[0].result.structuredContent?.trace ??
    /"trace":"([^"]+)"/.exec(out.calls[0].result.content[0].text)?.[1];
  check(handle === "t1" || (byPath && /^s[0-9a-f]{32}$/.test(handle ?? "")), `${label}: load_trace handle ${handle}`);
  checkRows(label, out.calls[1].result);
  if (out.serverExit) check(out.serverExit.signal == null, `${label}: server needed ${out.serverExit.signal} to exit`);
  console.log(`ok ${label} (server era ${out.server.era}, protocol ${out.server.protocolVersion}, ${out.timingsMs.total} ms)`);
}

async function withHttpServer(fn) {
  const server = spawn(binary, ["serve", "--http", "127.0.0.1:0", "--root", shared], { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let err = "";
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}`)), 10000);
    server.stderr.on("data", (d) => {
      err += d;
      const m = /listening on (http:\/\/\S+)/.exec(err);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    server.on("exit", (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  try { await fn(url); } finally { server.kill("SIGTERM"); }
}

const stdio = ["--", binary, "serve", "--stdio", "--root", shared];
runClient("stdio legacy (sdk v1)", stdio);
runClient("stdio legacy (sdk v2)", ["--sdk", "v2", ...stdio]);
runClient("stdio modern 2026-07-28", ["--era", "modern", ...stdio]);
runClient("stdio auto", ["--era", "auto", ...stdio]);
await withHttpServer(async (url) => {
  runClient("http legacy (sdk v1)", ["--url", url], { byPath: true });
  runClient("http modern 2026-07-28", ["--era", "modern", "--url", url], { byPath: true });
  runClient("http auto", ["--era", "auto", "--url", url], { byPath: true });
});
console.log(failures ? `${failures} check(s) failed` : "all e2e checks passed");
process.exit(failures ? 1 : 0);
