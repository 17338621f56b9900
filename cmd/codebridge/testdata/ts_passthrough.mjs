// Plays the agent's client for what downstream servers ask through
// codebridge, as the official MCP TypeScript SDK's client does. argv: the
// codebridge binary, then a JSON plan {declare, elicit, sample, steps}. With
// declare true the client declares elicitation, sampling and roots (one root,
// file:///work/project), and sets its log level to debug; it answers each
// elicitation/create with elicit and each sampling/createMessage with a
// message whose text is sample. Each step {code, timeout?} calls run_python
// and prints one JSON line {text, isError, out, seen, logs}: seen is the
// requests the client's handlers saw during the step ({method, message,
// systemPrompt, meta}), logs the log messages' loggers.
import { createRequire } from "node:module";
import path from "node:path";
import { runSteps } from "./ts_steps.mjs";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const {
  ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema, LoggingMessageNotificationSchema,
} = require("@modelcontextprotocol/sdk/types.js");

const plan = JSON.parse(process.argv[3]);
const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const client = new Client({ name: "codebridge-ts-passthrough", version: "1.0.0" },
  { capabilities: plan.declare ? { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } } : {} });
let seen = [];
let logs = [];
if (plan.declare) {
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    seen.push({ method: req.method, message: req.params.message });
    return plan.elicit;
  });
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    seen.push({ method: req.method, systemPrompt: req.params.systemPrompt, meta: req.params._meta });
    return { role: "assistant", model: "test-model", content: { type: "text", text: plan.sample } };
  });
  client.setRequestHandler(ListRootsRequestSchema, (req) => {
    seen.push({ method: req.method });
    return { roots: [{ uri: "file:///work/project", name: "project" }] };
  });
}
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params.logger ?? ""); });
await client.connect(transport);
if (plan.declare) await client.setLoggingLevel("debug");
await runSteps(client, plan.steps, () => {
  const got = { seen, logs };
  seen = [];
  logs = [];
  return got;
});
await client.close();
process.exit(0);
