// @ts-check
// The client against the real daemon over real pipes (Node's own test runner).
//
//   npm test                    # the daemon is `stdio-executor` on PATH
//   STDIO_EXECUTOR='["python3", "-m", "stdio_executor"]' npm test

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { Client, ClientError, HostToolError, PROTOCOL_VERSION } from "../src/index.js";

/** @typedef {import("../src/index.js").Event} Event */
/** @typedef {import("../src/index.js").ClientOptions} ClientOptions */

const command = process.env.STDIO_EXECUTOR ? JSON.parse(process.env.STDIO_EXECUTOR) : ["stdio-executor"];
const workspaces = /** @type {string[]} */ ([]);
const clients = /** @type {Client[]} */ ([]);
// A failed assertion skips a test's own close(): close every daemon here, so none outlives
// the tests (closing twice is harmless).
after(async () => {
  await Promise.all(clients.map((client) => client.close()));
  workspaces.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});
const TIMEOUT = { timeout: 60_000 };

/** A daemon in a fresh workspace. @param {ClientOptions} [options] @param {string[]} [args] */
async function start(options = {}, args = []) {
  const workspace = mkdtempSync(join(tmpdir(), "stdio-executor-ts-"));
  workspaces.push(workspace);
  return tracked(Client.start({ command, ...options, args: ["--workspace", workspace, ...args] }));
}

/** @param {Promise<Client>} starting */
async function tracked(starting) {
  const client = await starting;
  clients.push(client);
  return client;
}

/** @param {string} id @param {string} shell */
const bash = (id, shell) => ({ type: /** @type {const} */ ("tool_use"), id, name: "Bash", input: { command: shell } });

/** Resolves with the first event `match` accepts. @param {Client} client @param {(e: Event) => boolean} match */
function nextEvent(client, match) {
  return new Promise((resolve) => {
    const stop = client.onEvent((event) => {
      if (match(event)) {
        stop();
        resolve(event);
      }
    });
  });
}

test("ready, then a turn's results in the order the tools were added", TIMEOUT, async () => {
  const client = await start({}, ["--permission-mode", "bypassPermissions"]);
  assert.equal(client.ready.protocol_version, PROTOCOL_VERSION);
  assert.ok(client.apiTools().some((tool) => tool.name === "Read"));
  assert.deepEqual(Object.keys(client.apiTools()[0]).sort(), ["description", "input_schema", "name"]);
  const started = /** @type {string[]} */ ([]);
  client.onEvent((event) => event.type === "tool_started" && started.push(event.tool_use_id));

  await client.addTool(bash("slow", "sleep 0.3; echo one"));
  await client.addTool(bash("fast", "echo two"));
  const turn = await client.drain();

  assert.deepEqual(started, ["slow", "fast"], "both read-only: they ran together");
  assert.deepEqual(turn.results.map((r) => [r.tool_use_id, r.content, r.meta.status]), [
    ["slow", "one", "success"],
    ["fast", "two", "success"],
  ]);
  assert.equal(turn.drained.results, 2);
  assert.deepEqual(turn.contentBlocks()[1], { type: "tool_result", tool_use_id: "fast", content: "two", is_error: false });
  assert.equal(await client.close(), 0);
});

test("the permission handler decides; without one every request is denied", TIMEOUT, async () => {
  /** @type {string[]} */
  const asked = [];
  const client = await start({
    onPermission: async (request) => {
      asked.push(`${request.tool_use_id} ${request.name}`);
      const shell = String(request.input.command ?? "");
      return shell.startsWith("rm ") ? { allow: false, message: "no deleting" } : true;
    },
  });
  const turn = await client.runTurn([bash("ls", "ls"), bash("touch", "touch made.txt"), bash("rm", "rm made.txt")]);
  assert.deepEqual(asked, ["touch Bash", "rm Bash"], "a read-only command is not asked about");
  assert.deepEqual(turn.results.map((r) => r.meta.status), ["success", "success", "denied"]);
  assert.match(String(turn.results[2].content), /no deleting/);
  assert.equal(await client.close(), 0);

  const strict = await start();
  const denied = await strict.runTurn([bash("touch", "touch other.txt")]);
  assert.equal(denied.results[0].meta.status, "denied");
  assert.match(String(denied.results[0].content), /no permission handler/);
  await strict.close();
});

test("host tools are served by functions, with progress and error results", TIMEOUT, async () => {
  const glossary = /** @type {Record<string, string>} */ ({ ndjson: "one JSON value per line" });
  const client = await start({
    tools: [
      {
        definition: {
          name: "lookup",
          description: "Look a word up",
          input_schema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
          read_only: true,
        },
        handler: async (input, call) => {
          await call.progress({ kind: "note", text: `looking up ${input.word}` });
          const entry = glossary[String(input.word)];
          if (entry === undefined) throw new HostToolError(`no entry for ${input.word}`);
          return entry;
        },
      },
    ],
  });
  assert.ok(client.apiTools().some((tool) => tool.name === "lookup"));
  const progress = /** @type {unknown[]} */ ([]);
  client.onEvent((event) => event.type === "progress" && progress.push(event.data));

  const turn = await client.runTurn([
    { id: "hit", name: "lookup", input: { word: "ndjson" } },
    { id: "miss", name: "lookup", input: { word: "yaml" } },
    { id: "bad", name: "lookup", input: {} },
  ]);
  assert.deepEqual(turn.results.map((r) => [r.tool_use_id, r.meta.status, r.content]), [
    ["hit", "success", "one JSON value per line"],
    ["miss", "error", "no entry for yaml"],
    ["bad", "invalid_input", turn.results[2].content],
  ]);
  assert.deepEqual(progress[0], { kind: "note", text: "looking up ndjson" });

  // Registered on a running client.
  const changed = await client.registerTool({ name: "shout", input_schema: { type: "object" }, read_only: true }, async (input) =>
    JSON.stringify(input).toUpperCase(),
  );
  assert.deepEqual(changed.added, ["shout"]);
  const shout = await client.runTurn([{ id: "s", name: "shout", input: { a: "b" } }]);
  assert.equal(shout.results[0].content, '{"A":"B"}');
  // A full definition under a built-in's name is refused (only a name-only one takes it over).
  const readAgain = { name: "Read", description: "mine", input_schema: { type: "object" } };
  await assert.rejects(client.registerTool(readAgain, async () => ""), (error) => {
    assert.ok(error instanceof ClientError);
    assert.equal(error.event?.code, "invalid_tool_definition");
    return true;
  });
  assert.equal(await client.close(), 0);
});

test("interrupt cancels what allows it and aborts a host tool's signal", TIMEOUT, async () => {
  /** @type {(reason: unknown) => void} */
  let aborted = () => {};
  const abortSeen = new Promise((resolve) => (aborted = resolve));
  /** @type {(value: unknown) => void} */
  let entered = () => {};
  const handlerEntered = new Promise((resolve) => (entered = resolve));
  const client = await start({
    tools: [
      {
        definition: { name: "wait", input_schema: { type: "object" }, read_only: true, interrupt_behavior: "cancel" },
        handler: (input, call) =>
          new Promise((_, reject) => {
            entered(call.toolUseId);
            call.signal.addEventListener("abort", () => {
              aborted(call.toolUseId);
              reject(new Error("cancelled"));
            });
          }),
      },
    ],
  });
  const running = nextEvent(client, (e) => e.type === "tool_started" && e.tool_use_id === "sleep");
  await client.addTool(bash("sleep", "sleep 30"));
  await client.addTool({ id: "wait", name: "wait", input: {} });
  await running;
  await handlerEntered; // both run: the interrupt has something to cancel in each
  const interrupted = await client.interrupt();
  assert.deepEqual([...interrupted.tool_use_ids].sort(), ["sleep", "wait"]);
  assert.equal(await abortSeen, "wait");
  const turn = await client.drain();
  assert.deepEqual(turn.results.map((r) => [r.tool_use_id, r.meta.status]), [
    ["sleep", "interrupted"],
    ["wait", "interrupted"],
  ]);
  assert.equal(await client.close(), 0);
});

test("discard throws the open turn away", TIMEOUT, async () => {
  const client = await start({}, ["--permission-mode", "bypassPermissions"]);
  const started = nextEvent(client, (e) => e.type === "tool_started");
  await client.addTool(bash("long", "sleep 30"));
  await started;
  const discarded = await client.discard();
  assert.deepEqual(discarded.tool_use_ids, ["long"]);
  const next = await client.runTurn([bash("after", "echo after")]);
  assert.deepEqual(next.results.map((r) => r.tool_use_id), ["after"], "nothing of the discarded turn");
  assert.equal(await client.close(), 0);
});

test("trustWorkspace applies what ready held back; listJobs lists background shells", TIMEOUT, async () => {
  const workspace = mkdtempSync(join(tmpdir(), "stdio-executor-ts-"));
  workspaces.push(workspace);
  mkdirSync(join(workspace, ".claude"));
  writeFileSync(join(workspace, ".claude", "settings.json"), '{"permissions":{"allow":["Bash(touch:*)","Bash(sleep:*)"]}}');
  const client = await tracked(Client.start({ command, args: ["--workspace", workspace] }));
  assert.deepEqual(client.ready.workspace_trust?.held_back?.allow, ["Bash(touch:*)", "Bash(sleep:*)"]);
  const before = await client.runTurn([bash("a", "touch before")]);
  assert.equal(before.results[0].meta.status, "denied", "untrusted: the allow rule is held back");
  const trusted = await client.trustWorkspace();
  assert.deepEqual(trusted.applied.allow, ["Bash(touch:*)", "Bash(sleep:*)"]);
  const after = await client.runTurn([bash("b", "touch after")]);
  assert.equal(after.results[0].meta.status, "success");
  assert.deepEqual((await client.listJobs()).jobs, []);
  await client.runTurn([{ ...bash("bg", "sleep 30"), input: { command: "sleep 30", run_in_background: true } }]);
  const jobs = (await client.listJobs()).jobs;
  assert.deepEqual(jobs.map((j) => [j.tool_use_id, j.status]), [["bg", "running"]]);
  await client.close();
});

test("close lets the open turn finish, then the daemon exits 0", TIMEOUT, async () => {
  const client = await start({}, ["--permission-mode", "bypassPermissions"]);
  const workspace = client.options.args?.[1] ?? "";
  /** @type {Event[]} */
  const events = [];
  client.onEvent((event) => events.push(event));
  await client.addTool({ id: "w", name: "Write", input: { file_path: join(workspace, "out.txt"), content: "kept\n" } });
  assert.equal(await client.close(), 0);
  assert.equal(readFileSync(join(workspace, "out.txt"), "utf8"), "kept\n");
  assert.ok(events.some((e) => e.type === "tool_result" && e.tool_use_id === "w"));
  await assert.rejects(client.addTool(bash("late", "true")), ClientError);
  assert.throws(() => process.kill(/** @type {number} */ (client.pid), 0), "the daemon is gone");
});

/**
 * A stand-in daemon: writes `lines`, then `later` once the first command arrives, then
 * exits 0 when stdin closes.
 * @param {object[]} lines @param {object[]} [later]
 */
function fakeDaemon(lines, later = []) {
  const dir = mkdtempSync(join(tmpdir(), "stdio-executor-fake-"));
  workspaces.push(dir);
  const script = join(dir, "fake.mjs");
  const encode = (/** @type {object[]} */ list) => JSON.stringify(list.map((l) => JSON.stringify(l)));
  writeFileSync(
    script,
    `for (const line of ${encode(lines)}) console.log(line);\n` +
      `process.stdin.once("data", () => { for (const line of ${encode(later)}) console.log(line); });\n` +
      'process.stdin.on("end", () => process.exit(0));\n',
  );
  return [process.execPath, script];
}

const ready = { type: "ready", protocol_version: 1, version: "9.9.9", pid: 1, tools: [], tool_info: {}, limits: {} };

test("a daemon of another protocol version is refused", TIMEOUT, async () => {
  await assert.rejects(Client.start({ command: fakeDaemon([{ ...ready, protocol_version: 2 }]) }), /protocol 2, this client 1/);
});

test("events of a newer daemon that this client does not know are skipped", TIMEOUT, async () => {
  const started = { type: "tool_started", tool_use_id: "t", name: "Bash", turn: 1 };
  const client = await tracked(Client.start({ command: fakeDaemon([ready], [{ type: "from_the_future", x: 1 }, started]) }));
  /** @type {string[]} */
  const seen = [];
  client.onEvent((event) => seen.push(event.type));
  const known = nextEvent(client, (e) => e.type === "tool_started");
  await client.addTool(bash("t", "true"));
  await known;
  assert.deepEqual(seen, ["tool_started"]);
  assert.equal(await client.close(), 0);
});

test("a daemon that exits without answering rejects what waits on it", TIMEOUT, async () => {
  await assert.rejects(Client.start({ command: [process.execPath, "-e", "process.exit(3)"] }), ClientError);
  const client = await tracked(Client.start({ command: fakeDaemon([ready]) }));
  const drained = client.drain();
  client.process.kill("SIGTERM");
  await assert.rejects(drained, /exited before answering/);
  await client.close();
});
