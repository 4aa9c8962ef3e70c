#!/usr/bin/env node
// @ts-check
// A stdio-executor host in Node.js, built on the TypeScript client (clients/typescript, npm
// package `stdio-executor`; Node 20+, no build step, no packages to install).
//
// It starts the daemon, streams the tool_use blocks of a (simulated) assistant message into
// it as they "arrive", answers permission requests, prints progress and results as they
// come, and builds the next user message from the results.
//
//   node examples/node/host.mjs
//
// The daemon command is `stdio-executor`, or the JSON array in $STDIO_EXECUTOR, e.g.
//   STDIO_EXECUTOR='["python3", "-m", "stdio_executor"]' node examples/node/host.mjs

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

// In your own project: `npm install stdio-executor`, then `from "stdio-executor"`.
import { Client } from "../../clients/typescript/src/index.js";

/** @typedef {import("../../clients/typescript/src/index.js").ToolUse} ToolUse */

const command = process.env.STDIO_EXECUTOR ? JSON.parse(process.env.STDIO_EXECUTOR) : ["stdio-executor"];
const workspace = mkdtempSync(join(tmpdir(), "stdio-executor-node-"));

/** The tool_use blocks of one assistant message, as a model would stream them. @type {ToolUse[]} */
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

const client = await Client.start({
  command,
  args: ["--workspace", workspace],
  // A host decides: here, anything but `rm` is allowed.
  onPermission: (request) => {
    const allow = !JSON.stringify(request.input).includes("rm ");
    say(`permission ${request.tool_use_id} ${request.name}: ${allow ? "allow" : "deny"}`);
    return allow ? true : { allow: false, message: "the node host does not allow rm" };
  },
}).catch((/** @type {Error} */ error) => {
  console.error(`cannot start ${command.join(" ")}: ${error.message}`);
  process.exit(2);
});
say(`ready: protocol ${client.ready.protocol_version}, tools ${client.apiTools().map((t) => t.name).join(", ")}`);

client.onEvent((event) => {
  switch (event.type) {
    case "tool_started":
      return say(`started ${event.tool_use_id} (${event.name})`);
    case "progress":
      return say(`progress ${event.tool_use_id}: ${short(event.data.text ?? event.data)}`);
    case "tool_result":
      return say(`result ${event.tool_use_id} ${event.meta.status}: ${short(event.content)}`);
    case "error":
      return say(`error ${event.code}: ${event.message}`);
  }
});

// Blocks arrive one by one while the model streams; each is sent the moment it is complete.
for (const block of blocks) {
  say(`-> add_tool ${block.id} ${block.name}`);
  await client.addTool(block);
  await new Promise((resolve) => setTimeout(resolve, 100));
}
say("-> drain (the assistant message ended)");
const turn = await client.drain();
say(`drained turn ${turn.drained.turn}: ${turn.drained.results} results, ${turn.drained.errors} errors`);

// The next user message: the results minus `meta`, in order.
console.log(`next user message: ${JSON.stringify({ role: "user", content: turn.contentBlocks() })}`);

const code = await client.close();
rmSync(workspace, { recursive: true, force: true });
say(`daemon exited with code ${code}`);
process.exit(code === 0 ? 0 : 1);
