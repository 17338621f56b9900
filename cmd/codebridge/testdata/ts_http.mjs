// Drives codebridge's HTTP front with the official MCP TypeScript SDK's
// StreamableHTTPClientTransport. argv: the /mcp URL, the bearer token, then a
// JSON list of steps run in order; each prints one JSON line:
//   {client: N, connect: true, token?: "..." | null}  opens client N's session
//       (token overrides the header; null sends none): {sessionId} or {error}
//   {client: N, code, timeout?, session?, handleOf?}  calls run_python: {text, isError, out} or {error};
//       handleOf: I passes result I's structuredContent.session.handle as session
//   {client: N, close: true}     ends the session (HTTP DELETE) and closes: {closed}
//   {parallel: [steps]}          runs steps at once: {parallel: [lines]}
//   {pause: true}                prints {paused: true}, waits for a line on stdin
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [url, token, plan] = process.argv.slice(2);
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const clients = new Map(); // client number -> {client, transport}
const results = []; // the lines printed so far

async function step(s) {
  try {
    if (s.parallel) return { parallel: await Promise.all(s.parallel.map(step)) };
    if (s.connect) {
      const t = s.token === undefined ? token : s.token;
      const headers = t === null ? {} : { Authorization: `Bearer ${t}` };
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
      const client = new Client({ name: `codebridge-ts-http-${s.client}`, version: "1.0.0" });
      await client.connect(transport);
      clients.set(s.client, { client, transport });
      return { sessionId: transport.sessionId };
    }
    const c = clients.get(s.client);
    if (s.close) {
      await c.transport.terminateSession();
      await c.client.close();
      clients.delete(s.client);
      return { closed: true };
    }
    const args = { code: s.code };
    if (s.timeout) args.timeout = s.timeout;
    if (s.session) args.session = s.session;
    if (s.handleOf !== undefined) args.session = results[s.handleOf].out.session.handle;
    const r = await c.client.callTool({ name: "run_python", arguments: args }, undefined, { timeout: 180000 });
    return { text: r.content.map((x) => x.text ?? "").join(""), isError: r.isError === true, out: r.structuredContent };
  } catch (e) {
    return { error: String(e?.message ?? e), code: e?.code ?? null };
  }
}

for (const s of JSON.parse(plan)) {
  if (s.pause) {
    process.stdout.write(JSON.stringify({ paused: true }) + "\n");
    await lines.next();
    continue;
  }
  const r = await step(s);
  results.push(r);
  process.stdout.write(JSON.stringify(r) + "\n");
}
for (const { client } of clients.values()) await client.close();
process.exit(0);
