#!/usr/bin/env node
// @ts-check
// A minimal stdio-executor host in plain JavaScript (Node 18+, no dependencies).
//
// It spawns the daemon, streams the tool_use blocks of a (simulated) assistant message into
// it as they "arrive", answers permission requests, prints progress and results as they
// come, and builds the next user message from the results. Types come from protocol.d.ts,
// generated from protocol/schema.json by gen-types.mjs.
//
//   node examples/node/host.mjs
//
// The daemon command is `stdio-executor`, or the JSON array in $STDIO_EXECUTOR, e.g.
//   STDIO_EXECUTOR='["python3", "-m", "stdio_executor"]' node examples/node/host.mjs

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

/** @typedef {import("./protocol.js").Event} Event */
/** @typedef {import("./protocol.js").Command} Command */
/** @typedef {import("./protocol.js").ToolUse} ToolUse */
/** @typedef {import("./protocol.js").ToolResult} ToolResult */
/** @typedef {import("./protocol.js").Drained} Drained */
/** @typedef {import("./protocol.js").PermissionRequest} PermissionRequest */

const PROTOCOL_VERSION = 1;
const command = process.env.STDIO_EXECUTOR
  ? JSON.parse(process.env.STDIO_EXECUTOR)
  : ["stdio-executor"];
const workspace = mkdtempSync(join(tmpdir(), "stdio-executor-node-"));

/** The tool_use blocks of one assistant message, as a model would stream them. */
/** @type {ToolUse[]} */
const blocks = [
  { type: "tool_use", id: "toolu_01", name: "Bash", input: { command: "echo hello from node; sleep 0.3; echo done" } },
  { type: "tool_use", id: "toolu_02", name: "Write", input: { file_path: "notes.txt", content: "written by the node host\n" } },
  { type: "tool_use", id: "toolu_03", name: "Read", input: { file_path: "notes.txt" } },
  { type: "tool_use", id: "toolu_04", name: "Bash", input: { command: "rm -f notes.txt" } },
];

const started = Date.now();
/** @param {string} text */
const say = (text) => console.log(`[${((Date.now() - started) / 1000).toFixed(2)}s] ${text}`);
const short = (/** @type {unknown} */ value) => JSON.stringify(value).slice(0, 70);

const daemon = spawn(command[0], [...command.slice(1), "--workspace", workspace], {
  stdio: ["pipe", "pipe", "inherit"],
});
daemon.on("error", (err) => {
  console.error(`cannot start ${command.join(" ")}: ${err.message}`);
  process.exit(2);
});

/** @param {Command} cmd */
function send(cmd) {
  daemon.stdin.write(JSON.stringify(cmd) + "\n");
}

/** @type {ToolResult[]} */
const results = [];
/** @type {(d: Drained) => void} */
let onDrained = () => {};
const drained = new Promise((resolve) => (onDrained = resolve));
/** @type {(v: void) => void} */
let onReady = () => {};
const ready = new Promise((resolve) => (onReady = resolve));

/** A host decides: here, anything but `rm` is allowed. @param {PermissionRequest} req */
function decide(req) {
  const text = JSON.stringify(req.input);
  return text.includes("rm ") ? "deny" : "allow";
}

const lines = createInterface({ input: daemon.stdout, crlfDelay: Infinity });
lines.on("line", (line) => {
  /** @type {Event} */
  const event = JSON.parse(line);
  switch (event.type) {
    case "ready":
      if (event.protocol_version !== PROTOCOL_VERSION) {
        console.error(`unsupported protocol ${event.protocol_version}`);
        process.exit(1);
      }
      say(`ready: protocol ${event.protocol_version}, tools ${event.tools.map((t) => t.name).join(", ")}`);
      onReady();
      break;
    case "tool_started":
      say(`started ${event.tool_use_id} (${event.name})`);
      break;
    case "progress":
      say(`progress ${event.tool_use_id}: ${short(event.data.text ?? event.data)}`);
      break;
    case "permission_request": {
      const decision = decide(event);
      say(`permission ${event.tool_use_id} ${event.name}: ${decision}`);
      send({ type: "permission_response", request_id: event.request_id, decision, message: decision === "deny" ? "the node host does not allow rm" : null });
      break;
    }
    case "tool_result":
      results.push(event);
      say(`result ${event.tool_use_id} ${event.meta.status}: ${short(event.content)}`);
      break;
    case "drained":
      say(`drained turn ${event.turn}: ${event.results} results, ${event.errors} errors`);
      onDrained(event);
      break;
    case "error":
      say(`error ${event.code}: ${event.message}`);
      break;
    default:
      say(`${event.type}`);
  }
});

await ready;
// Blocks arrive one by one while the model streams; each is sent the moment it is complete.
for (const block of blocks) {
  say(`-> add_tool ${block.id} ${block.name}`);
  send({ type: "add_tool", tool_use: block });
  await new Promise((resolve) => setTimeout(resolve, 100));
}
say("-> drain (the assistant message ended)");
send({ type: "drain", request_id: "turn-1" });
await drained;

// The next user message: the results minus `meta`, in order.
const message = {
  role: "user",
  content: results.map(({ meta, ...block }) => block),
};
console.log(`next user message: ${JSON.stringify(message)}`);

daemon.stdin.end();
const code = await new Promise((resolve) => daemon.on("close", resolve));
rmSync(workspace, { recursive: true, force: true });
say(`daemon exited with code ${code}`);
process.exit(code === 0 ? 0 : 1);
