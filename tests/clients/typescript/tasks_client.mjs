// A long tool call through the official TypeScript SDK client (@modelcontextprotocol/client) and
// its tasks package (@modelcontextprotocol/ext-tasks), versions pinned by package-lock.json here.
//
//   node tasks_client.mjs URL ERA TOOL ARGUMENTS_JSON
//
// ERA "modern" negotiates 2026-07-28 (server/discover) and lets ext-tasks follow the call as a
// task: a CreateTaskResult, polls of tasks/get, the inlined result. ERA "legacy" is the
// initialize handshake, where the tasks extension does not exist and the call is answered
// directly. Prints one JSON line: {era, execution ("task" or "immediate"), outcome, result}.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from "@modelcontextprotocol/ext-tasks/client";

const [url, era, tool, argumentsJson] = process.argv.slice(2);
const clientInfo = { name: "mcp-batteries-ts-tasks-test", version: "1.0.0" };
const capabilities = { extensions: { "io.modelcontextprotocol/tasks": {} } };
const modern = era === "modern";

const client = new Client(clientInfo, {
  capabilities,
  versionNegotiation: { mode: modern ? { pin: "2026-07-28" } : "legacy" },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

// The SDK's wire codecs do not carry tasks-v2 traffic; ext-tasks sends it through the host's
// own raw dispatch (here: a plain POST with the 2026-07-28 headers, Mcp-Name naming the task).
let nextId = 1;
async function rawDispatch(request) {
  const body = { jsonrpc: "2.0", id: `raw-${nextId++}`, ...request };
  const name =
    body.method === "tools/call" ? body.params?.name : body.method.startsWith("tasks/") ? body.params?.taskId : undefined;
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2026-07-28",
      "mcp-method": body.method,
      ...(name === undefined ? {} : { "mcp-name": name }),
    },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const events = text.split(/\r?\n/).filter((line) => line.startsWith("data:")).map((line) => JSON.parse(line.slice(5)));
    return events.find((message) => message.id === body.id);
  }
  return JSON.parse(text);
}

const session = createTaskSessionFromClient(client, {
  endpointId: url,
  ...(modern
    ? {
        rawDispatch,
        v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo, clientCapabilities: capabilities },
      }
    : {}),
});
try {
  const execution = await session.callTool(tool, JSON.parse(argumentsJson));
  const { outcome } = await execution.settle();
  const result = resultFromTaskOutcome(outcome);
  console.log(
    JSON.stringify({
      era: client.getProtocolEra(),
      outcome: outcome.kind ?? outcome.status ?? null,
      execution: execution.kind ?? null,
      result,
    }),
  );
} finally {
  await session.close();
  await client.close();
}
