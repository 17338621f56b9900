// Plays the agent's client for codebridge's sign-in questions, as the
// official MCP TypeScript SDK's client does for a person. argv: the
// codebridge binary, then a JSON plan {modes, answer, steps}. The client
// declares elicitation in modes (e.g. ["form", "url"]); it answers each
// elicitation/create with {action: answer}, and on accepting a URL-mode
// question it follows the URL as a browser would (fetch, following
// redirects), which takes it through the authorization server's approval
// to codebridge's loopback redirect URI. Once connected it prints
// {"connected": true, "pid": codebridge's pid}; then each step's line
// (ts_steps.mjs) has {asked, visits, completed}: the questions seen during
// the step ({mode, message, url, elicitationId}), the HTTP status of each
// page followed, and the ids of notifications/elicitation/complete.
import { createRequire } from "node:module";
import path from "node:path";
import { runSteps } from "./ts_steps.mjs";

const require = createRequire(path.join(process.env.CODEBRIDGE_TEST_NPM_CLIENTS, "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

const plan = JSON.parse(process.argv[3]);
const transport = new StdioClientTransport({ command: process.argv[2], args: [], env: process.env, stderr: "inherit" });
const elicitation = Object.fromEntries(plan.modes.map((m) => [m, {}]));
const client = new Client({ name: "codebridge-ts-signin", version: "1.0.0" }, { capabilities: { elicitation } });
let asked = [];
let visits = [];
let completed = [];
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  const p = req.params;
  asked.push({ mode: p.mode ?? "form", message: p.message, url: p.url, elicitationId: p.elicitationId });
  if (p.mode === "url" && plan.answer === "accept") {
    // The person opens the page and approves: the demo authorization
    // server redirects straight to codebridge's redirect URI.
    const page = await fetch(p.url, { redirect: "follow" });
    await page.text();
    visits.push(page.status);
  }
  return { action: plan.answer };
});
client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
  completed.push(n.params.elicitationId);
});
await client.connect(transport);
process.stdout.write(JSON.stringify({ connected: true, pid: transport.pid }) + "\n");
await runSteps(client, plan.steps, () => {
  const seen = { asked, visits, completed };
  asked = [];
  visits = [];
  completed = [];
  return seen;
});
await client.close();
process.exit(0);
