// The TypeScript SDK's Streamable HTTP server with one trivial tool: the anchor of bench/http_calls.py.
//
//   node server.mjs --port 0 --mode stateful|stateless
//
// Plain node:http (no Express), as lean as the SDK allows. `stateful`: one transport and server per
// session, kept in a map by Mcp-Session-Id (the SDK's session example). `stateless`: a new server
// and transport for every request (the SDK's stateless example; a stateless transport cannot be
// reused). Responses are the SDK's default (SSE for requests); `--json` turns on enableJsonResponse.
// Prints "listening on http://127.0.0.1:PORT/mcp" once it accepts connections.
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : fallback;
};
const port = Number(option("--port", "0"));
const mode = option("--mode", "stateful");
const enableJsonResponse = args.includes("--json");

function buildServer() {
  const server = new McpServer({ name: "ts-floor", version: "0" });
  server.registerTool("hello", { description: "Say hello." }, async () => ({
    content: [{ type: "text", text: "hello" }],
  }));
  return server;
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined));
    req.on("error", reject);
  });
}

const transports = new Map(); // Mcp-Session-Id -> transport (stateful)

async function stateful(req, res, body) {
  const sessionId = req.headers["mcp-session-id"];
  let transport = sessionId ? transports.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId || req.method !== "POST" || !isInitializeRequest(body)) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "Bad Request: no valid session" }, id: null }));
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse,
      onsessioninitialized: (id) => transports.set(id, transport),
    });
    transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
    await buildServer().connect(transport);
  }
  await transport.handleRequest(req, res, body);
}

async function stateless(req, res, body) {
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

const http = createServer(async (req, res) => {
  try {
    const body = req.method === "POST" ? await readBody(req) : undefined;
    await (mode === "stateless" ? stateless : stateful)(req, res, body);
  } catch (error) {
    if (!res.headersSent) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32603, message: String(error) }, id: null }));
    }
  }
});
http.keepAliveTimeout = 60_000;
http.listen(port, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
