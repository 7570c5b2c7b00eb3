// Drives MCP servers with the official TypeScript SDK clients, as a host built on them would.
//
//   node drive.mjs PLAN.json
//
// PLAN.json is a list of sessions. Each is one connection: a server (`command` + `args` + `env`
// to start over stdio, or a Streamable HTTP `url`), a client (`sdk`: "v1" is
// @modelcontextprotocol/sdk, the 2025-era client most hosts ship; "v2" is
// @modelcontextprotocol/client, which also speaks 2026-07-28), an `era` ("legacy" or "modern"),
// optionally `roots` (the client then declares the roots capability and answers roots/list with
// exactly these URIs; [] is what the MCP Inspector answers), optionally `elicit` ("accept" or
// "decline": the client declares form elicitation and gives that answer to every question, the
// box ticked on accept; v2 in 2026-07-28 answers InputRequiredResult rounds through the same
// handler) and `checks` run in order:
//   {"kind": "tools/list", "expect": [tool names]}
//   {"kind": "tools/call", "name": N, "arguments": {...}, "expect": "text the result holds"}
//   {"kind": "resources/read", "uri": U, "expect": "text the contents hold"}
// One JSON line per session goes to stdout; the exit status is 0 when every check passed.
// Run by tests/clients/test_clients.py (copied next to the pinned packages in .tools/clients).
import { readFileSync } from "node:fs";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport as HttpV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";

const sessions = JSON.parse(readFileSync(process.argv[2], "utf8"));

function transport(session) {
  if (session.url) {
    const url = new URL(session.url);
    return session.sdk === "v1" ? new HttpV1(url) : new HttpV2(url);
  }
  // The server's stderr is discarded (as most hosts do) so a chatty server never blocks.
  const params = {
    command: session.command,
    args: session.args,
    env: { ...process.env, ...(session.env || {}) },
    stderr: "ignore",
  };
  return session.sdk === "v1" ? new StdioV1(params) : new InPlaceStdioV2(params);
}

// A subclass of the v2 stdio transport probes the server's era on the connection itself (the
// base class spawns a second, short-lived server just for the probe): one server process per
// session, and the server must answer `server/discover` and then serve on the same pipe.
class InPlaceStdioV2 extends StdioV2 {}

function client(session) {
  const info = { name: `mcp-batteries-tests-${session.sdk}`, version: "1.0.0" };
  const roots = session.roots;
  const capabilities = roots ? { roots: { listChanged: true } } : {};
  const answer = async () => ({ roots: roots.map((uri) => ({ uri })) });
  const elicit = session.elicit;
  if (elicit) capabilities.elicitation = session.sdk === "v1" ? {} : { form: {} };
  const reply = async () =>
    elicit === "accept" ? { action: "accept", content: { confirm: true } } : { action: elicit };
  if (session.sdk === "v1") {
    const c = new ClientV1(info, { capabilities });
    if (roots) c.setRequestHandler(ListRootsRequestSchema, answer);
    if (elicit) c.setRequestHandler(ElicitRequestSchema, reply);
    return c;
  }
  const mode = session.era === "modern" ? { pin: "2026-07-28" } : "legacy";
  const c = new ClientV2(info, { capabilities, versionNegotiation: { mode } });
  if (roots) c.setRequestHandler("roots/list", answer);
  if (elicit) c.setRequestHandler("elicitation/create", reply);
  return c;
}

function textOf(result) {
  const parts = result.contents ?? result.content ?? [];
  return parts.map((part) => part.text ?? "").join("");
}

async function check(c, step) {
  if (step.kind === "tools/list") {
    const names = (await c.listTools()).tools.map((tool) => tool.name);
    const missing = step.expect.filter((name) => !names.includes(name));
    return { ok: missing.length === 0, detail: missing.length ? `missing: ${missing}` : `${names.length} tools` };
  }
  if (step.kind === "tools/call") {
    const result = await c.callTool({ name: step.name, arguments: step.arguments });
    const text = textOf(result);
    return { ok: !result.isError && text.includes(step.expect), detail: text.slice(0, 400) };
  }
  if (step.kind === "resources/read") {
    const text = textOf(await c.readResource({ uri: step.uri }));
    return { ok: text.includes(step.expect), detail: text.slice(0, 400) };
  }
  return { ok: false, detail: `unknown check ${step.kind}` };
}

function described(error) {
  return String(error?.stack ?? error).slice(0, 800);
}

let failed = false;
for (const session of sessions) {
  const started = Date.now();
  const report = { label: session.label, checks: [] };
  const c = client(session);
  try {
    await c.connect(transport(session));
    report.era = session.sdk === "v1" ? "legacy" : c.getProtocolEra();
    if (report.era !== session.era) {
      report.checks.push({ kind: "connect", ok: false, detail: `negotiated ${report.era}, wanted ${session.era}` });
    }
    for (const step of session.checks) {
      try {
        report.checks.push({ kind: step.kind, ...(await check(c, step)) });
      } catch (error) {
        report.checks.push({ kind: step.kind, ok: false, detail: described(error) });
      }
    }
  } catch (error) {
    report.checks.push({ kind: "connect", ok: false, detail: described(error) });
  } finally {
    await c.close().catch(() => {});
  }
  report.ms = Date.now() - started;
  report.ok = report.checks.length > 0 && report.checks.every((done) => done.ok);
  failed ||= !report.ok;
  process.stdout.write(JSON.stringify(report) + "\n");
}
process.exit(failed ? 1 : 0);
