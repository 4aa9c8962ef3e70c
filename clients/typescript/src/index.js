// @ts-check
// A typed async client for stdio-executor (Node 20+).
//
// Owns: spawning the daemon, writing commands, reading and parsing events, matching answers
// to requests by `request_id`, collecting each turn's results, serving host tools and
// permission requests with the host's functions, and closing the daemon cleanly.
// Must not: interpret tool results or re-implement any scheduling rule (the daemon owns
// them), or depend on anything but Node's standard library at run time.
//
// Written in JavaScript with JSDoc types so that it runs on Node 20 as it is, with no build
// step; `tsc --strict` checks it in CI and emits the .d.ts files TypeScript users get. The
// wire types in ./protocol.d.ts are generated from protocol/schema.json.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * @typedef {import("./protocol.js").Command} Command
 * @typedef {import("./protocol.js").Event} Event
 * @typedef {import("./protocol.js").Ready} Ready
 * @typedef {import("./protocol.js").ToolUse} ToolUse
 * @typedef {import("./protocol.js").ToolResult} ToolResult
 * @typedef {import("./protocol.js").Drained} Drained
 * @typedef {import("./protocol.js").Discarded} Discarded
 * @typedef {import("./protocol.js").Interrupted} Interrupted
 * @typedef {import("./protocol.js").ErrorEvent} ErrorEvent
 * @typedef {import("./protocol.js").ToolsChanged} ToolsChanged
 * @typedef {import("./protocol.js").WorkspaceTrusted} WorkspaceTrusted
 * @typedef {import("./protocol.js").Jobs} Jobs
 * @typedef {import("./protocol.js").ToolDefinition} ToolDefinition
 * @typedef {import("./protocol.js").HostToolDefinition} HostToolDefinition
 * @typedef {import("./protocol.js").PermissionRequest} PermissionRequest
 * @typedef {import("./protocol.js").ToolCall} ToolCall
 * @typedef {import("./protocol.js").ToolOutput} ToolOutput
 */

/**
 * A `tool_use` block: a dict as the API returns it, or an SDK object such as the Anthropic
 * SDK's `ToolUseBlock` (other fields are ignored).
 * @typedef {{ id: string, name: string, input?: unknown, [field: string]: unknown }} ToolUseBlock
 */

/** The protocol version this client speaks; `ready.protocol_version` must equal it. */
export const PROTOCOL_VERSION = 1;

/**
 * The event types of this protocol version (tests/clients/test_typescript.py keeps the list
 * equal to the schema's); a newer daemon's other events are skipped.
 */
const KNOWN_EVENTS = new Set([
  "ready",
  "tool_started",
  "progress",
  "tool_result",
  "drained",
  "discarded",
  "interrupted",
  "error",
  "permission_request",
  "permission_cancelled",
  "tool_call",
  "tool_cancel",
  "tools_changed",
  "journal_recovered",
  "job_started",
  "job_exited",
  "jobs",
  "todos",
  "workspace_trusted",
]);

/** The daemon refused a request (an `error` event, in `.event`), or it is gone. */
export class ClientError extends Error {
  /** @param {string} message @param {ErrorEvent | null} [event] */
  constructor(message, event = null) {
    super(message);
    this.name = "ClientError";
    /** @type {ErrorEvent | null} */
    this.event = event;
  }
}

/** Throw in a host tool handler to give the model an error result with this message. */
export class HostToolError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = "HostToolError";
  }
}

/**
 * The answer to a `permission_request`. `updatedInput` replaces the tool's input when
 * allowing (the daemon validates it again); `interrupt` denies and aborts the whole turn.
 * @typedef {object} PermissionDecision
 * @property {boolean} allow
 * @property {string | null} [message]
 * @property {Record<string, unknown> | null} [updatedInput]
 * @property {boolean} [interrupt]
 */

/**
 * Decides a `permission_request`. `signal` aborts when the daemon withdraws the request
 * (`permission_cancelled`: interrupt, discard, shutdown); the answer is then not sent.
 * @callback PermissionHandler
 * @param {PermissionRequest} request
 * @param {{ signal: AbortSignal }} context
 * @returns {boolean | PermissionDecision | Promise<boolean | PermissionDecision>}
 */

/**
 * One call of a host tool, as its handler sees it.
 * @typedef {object} HostCall
 * @property {string} toolUseId
 * @property {string} name
 * @property {number | null} turn
 * @property {AbortSignal} signal aborts on `tool_cancel` (the daemon has written the result)
 * @property {(data: Record<string, unknown>) => Promise<void>} progress relayed as a `progress` event
 */

/**
 * Serves a host tool: returns the result's content (text or content blocks).
 * @callback HostToolHandler
 * @param {Record<string, unknown>} input validated by the daemon against `input_schema`
 * @param {HostCall} call
 * @returns {Promise<ToolOutput["content"]> | ToolOutput["content"]}
 */

/**
 * @typedef {object} HostTool
 * @property {HostToolDefinition} definition
 * @property {HostToolHandler} handler
 */

/**
 * @typedef {object} ClientOptions
 * @property {string[]} [command] the daemon command (default `["stdio-executor"]`)
 * @property {string[]} [args] extra daemon options, e.g. `["--permission-mode", "acceptEdits"]`
 * @property {string} [cwd] the daemon's working directory (its workspace unless `--workspace`)
 * @property {NodeJS.ProcessEnv} [env] the daemon's environment (default: this process's)
 * @property {"inherit" | "ignore"} [stderr] where the daemon's logs go (default `"inherit"`)
 * @property {PermissionHandler} [onPermission] without one, every request is denied
 * @property {HostTool[]} [tools] host tools, registered right after `ready`
 * @property {number} [readyTimeoutMs] for the `ready` line (default 30000)
 * @property {number} [closeTimeoutMs] for the daemon to finish the open turn after stdin
 *   closes, before SIGTERM (default 10000); SIGKILL follows 5 s later
 */

/** What `drain` returns: the `drained` event and the turn's results, in result order. */
export class TurnResult {
  /** @param {Drained} drained @param {ToolResult[]} results */
  constructor(drained, results) {
    this.drained = drained;
    this.results = results;
  }

  /**
   * The results as Anthropic `tool_result` blocks (`meta` dropped), ready to be the content
   * of the next user message.
   * @returns {Omit<ToolResult, "meta">[]}
   */
  contentBlocks() {
    return this.results.map(({ meta, ...block }) => block);
  }
}

/**
 * @internal
 * @template T
 * @typedef {object} Waiter
 * @property {string} kind the event type that answers
 * @property {(event: T) => void} resolve
 * @property {(error: Error) => void} reject
 */

/**
 * A running daemon. `await Client.start(options)` spawns it and waits for `ready`;
 * `await client.close()` ends it.
 */
export class Client {
  /** @param {ClientOptions} options */
  constructor(options = {}) {
    this.options = options;
    const [file, ...rest] = options.command ?? ["stdio-executor"];
    /** @type {import("node:child_process").ChildProcessByStdio<import("node:stream").Writable, import("node:stream").Readable, null>} */
    this.process = spawn(file, [...rest, ...(options.args ?? [])], {
      cwd: options.cwd,
      env: options.env,
      stdio: ["pipe", "pipe", options.stderr ?? "inherit"],
    });
    /** @private @type {Ready | null} */
    this._ready = null;
    /** @private @type {ToolDefinition[]} */
    this._tools = [];
    /** @private */
    this._ids = 0;
    /** @private */
    this._closed = false;
    /** @private @type {Map<string, Waiter<any>>} */
    this._waiters = new Map();
    /** @private @type {Map<number, ToolResult[]>} results by turn, until a later turn is drained */
    this._results = new Map();
    /** @private @type {Map<string, HostToolHandler>} */
    this._handlers = new Map();
    /** @private @type {Map<string, AbortController>} running host tool calls by tool_use_id */
    this._calls = new Map();
    /** @private @type {Map<string, AbortController>} open permission requests by request_id */
    this._asks = new Map();
    /** @private @type {Set<(event: Event) => void>} */
    this._listeners = new Set();
    for (const tool of options.tools ?? []) this._handlers.set(tool.definition.name, tool.handler);

    /** Settles with the exit code (or `null` after a signal) when the daemon has exited. */
    this.exited = new Promise((resolve) => {
      this.process.on("close", (code) => resolve(code));
    });
    /** @private @type {Promise<Ready>} */
    this._readyPromise = new Promise((resolve, reject) => {
      this._waiters.set("", { kind: "ready", resolve, reject });
    });
    this.process.on("error", (error) => this._gone(new ClientError(`cannot run the daemon: ${error.message}`)));
    // A write to a daemon that has exited fails here; the exit itself is reported by "close".
    this.process.stdin.on("error", () => {});
    const lines = createInterface({ input: this.process.stdout, crlfDelay: Infinity });
    lines.on("line", (line) => this._onLine(line));
    this.process.on("close", () => this._gone(new ClientError("the daemon exited before answering")));
  }

  /**
   * Spawn the daemon, wait for `ready` (checking the protocol version), register the host
   * tools given in `options.tools`.
   * @param {ClientOptions} [options]
   * @returns {Promise<Client>}
   */
  static async start(options = {}) {
    const client = new Client(options);
    try {
      const ready = await withTimeout(
        client._readyPromise,
        options.readyTimeoutMs ?? 30_000,
        "the daemon did not write its ready line",
      );
      if (ready.protocol_version !== PROTOCOL_VERSION) {
        throw new ClientError(
          `the daemon speaks protocol ${ready.protocol_version}, this client ${PROTOCOL_VERSION}`,
        );
      }
      for (const tool of options.tools ?? []) await client._register(tool.definition);
    } catch (error) {
      await client.close();
      throw error;
    }
    return client;
  }

  /** The daemon's `ready` event. */
  get ready() {
    if (this._ready === null) throw new Error("the client is not started");
    return this._ready;
  }

  /** The daemon's process id. */
  get pid() {
    return this.process.pid;
  }

  /** The enabled tools as the Messages API `tools` parameter (kept current by `tools_changed`). */
  apiTools() {
    return [...this._tools];
  }

  /**
   * Call `listener` with every event from now on, in order. Returns the unsubscribe function.
   * @param {(event: Event) => void} listener
   * @returns {() => void}
   */
  onEvent(listener) {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  /**
   * Write one command. Resolves when it is handed to the pipe.
   * @param {Command} command
   * @returns {Promise<void>}
   */
  send(command) {
    if (this._closed || this.process.exitCode !== null || this.process.stdin.destroyed) {
      return Promise.reject(new ClientError("the client is closed"));
    }
    return new Promise((resolve, reject) => {
      this.process.stdin.write(`${JSON.stringify(command)}\n`, (error) =>
        error ? reject(new ClientError(`the daemon is gone: ${error.message}`)) : resolve(),
      );
    });
  }

  /**
   * Schedule one `tool_use` block; send each the moment the model's stream completes it.
   * @param {ToolUseBlock} block
   */
  addTool(block) {
    const input = /** @type {Record<string, unknown>} */ (block.input ?? {});
    return this.send({
      type: "add_tool",
      tool_use: { type: "tool_use", id: block.id, name: block.name, input },
    });
  }

  /**
   * Wait until every tool of the turn has its result; end the turn.
   * @returns {Promise<TurnResult>} the `drained` event and the turn's results, in order
   */
  async drain() {
    /** @type {Drained} */
    const drained = await this._request((id) => ({ type: "drain", request_id: id }), "drained");
    if (drained.turn === null) return new TurnResult(drained, []);
    // Kept until a later turn ends, so several drains of one turn all get the results.
    for (const turn of this._results.keys()) if (turn < drained.turn) this._results.delete(turn);
    return new TurnResult(drained, [...(this._results.get(drained.turn) ?? [])]);
  }

  /**
   * `add_tool` each block, then `drain`.
   * @param {ToolUseBlock[]} blocks
   */
  async runTurn(blocks) {
    for (const block of blocks) await this.addTool(block);
    return this.drain();
  }

  /**
   * `"interrupt"` (the user typed a new message) cancels only the tools that allow it;
   * any other reason aborts every unfinished tool of the turn. Their results follow:
   * collect them with `drain`.
   * @param {string} [reason]
   * @returns {Promise<Interrupted>}
   */
  interrupt(reason = "interrupt") {
    return this._request((id) => ({ type: "interrupt", reason, request_id: id }), "interrupted");
  }

  /**
   * Throw the open turn away (a retried stream): no further result of it is written.
   * @returns {Promise<Discarded>}
   */
  async discard() {
    /** @type {Discarded} */
    const discarded = await this._request((id) => ({ type: "discard", request_id: id }), "discarded");
    if (discarded.turn !== null) this._results.delete(discarded.turn);
    return discarded;
  }

  /**
   * Trust the workspace: the settings and MCP servers `ready.workspace_trust` listed as held
   * back take effect for calls judged from now on.
   * @returns {Promise<WorkspaceTrusted>}
   */
  trustWorkspace() {
    return this._request((id) => ({ type: "trust_workspace", request_id: id }), "workspace_trusted");
  }

  /**
   * The session's background jobs (Bash with `run_in_background`), oldest first.
   * @returns {Promise<Jobs>}
   */
  listJobs() {
    return this._request((id) => ({ type: "list_jobs", request_id: id }), "jobs");
  }

  /**
   * Register a host tool now and wait for the daemon to accept it.
   * @param {HostToolDefinition} definition
   * @param {HostToolHandler} handler
   * @returns {Promise<ToolsChanged>}
   */
  registerTool(definition, handler) {
    this._handlers.set(definition.name, handler);
    return this._register(definition);
  }

  /**
   * @param {string} name
   * @returns {Promise<ToolsChanged>}
   */
  async unregisterTool(name) {
    /** @type {ToolsChanged} */
    const changed = await this._request(
      (id) => ({ type: "unregister_tool", name, request_id: id }),
      "tools_changed",
    );
    this._handlers.delete(name);
    return changed;
  }

  /**
   * Close stdin (the daemon finishes the open turn and exits), wait up to
   * `closeTimeoutMs`, then SIGTERM, then 5 s later SIGKILL. Resolves with the exit code.
   * @returns {Promise<number | null>}
   */
  async close() {
    if (!this._closed) {
      this._closed = true;
      this.process.stdin.end();
    }
    const timeout = this.options.closeTimeoutMs ?? 10_000;
    for (const [wait, signal] of /** @type {const} */ ([
      [timeout, "SIGTERM"],
      [5_000, "SIGKILL"],
    ])) {
      if (await settlesWithin(this.exited, wait)) break;
      this.process.kill(signal);
    }
    return this.exited;
  }

  /** `await using client = await Client.start()` closes it (TypeScript 5.2+). */
  [Symbol.asyncDispose]() {
    return this.close().then(() => undefined);
  }

  /**
   * @param {HostToolDefinition} definition
   * @returns {Promise<ToolsChanged>}
   * @private
   */
  _register(definition) {
    return this._request(
      (id) => ({ type: "register_tool", tool: definition, request_id: id }),
      "tools_changed",
    );
  }

  /**
   * Send the command `make(id)` and wait for the event of type `kind` with that
   * `request_id`; an `error` event with it rejects.
   * @param {(requestId: string) => Command} make
   * @param {string} kind
   * @returns {Promise<any>}
   * @private
   */
  _request(make, kind) {
    const id = `ts-${++this._ids}`;
    return new Promise((resolve, reject) => {
      this._waiters.set(id, { kind, resolve, reject });
      this.send(make(id)).catch((error) => {
        this._waiters.delete(id);
        reject(error);
      });
    });
  }

  /** @private @param {string} line */
  _onLine(line) {
    /** @type {Event} */
    let event;
    try {
      event = JSON.parse(line);
    } catch {
      return; // not ours to judge: the daemon writes only JSON lines
    }
    if (!KNOWN_EVENTS.has(event.type)) return; // a newer daemon's event: skip it
    switch (event.type) {
      case "ready":
        this._ready = event;
        this._tools = event.tools;
        this._settle("", event);
        break;
      case "tools_changed":
        this._tools = event.tools;
        break;
      case "tool_result": {
        const results = this._results.get(event.meta.turn) ?? [];
        results.push(event);
        this._results.set(event.meta.turn, results);
        break;
      }
      case "tool_call":
        void this._serveCall(event);
        break;
      case "tool_cancel":
        this._calls.get(event.tool_use_id)?.abort();
        this._calls.delete(event.tool_use_id);
        break;
      case "permission_request":
        void this._answer(event);
        break;
      case "permission_cancelled":
        this._asks.get(event.request_id)?.abort();
        this._asks.delete(event.request_id);
        break;
    }
    if (
      "request_id" in event &&
      event.request_id !== null &&
      event.type !== "permission_request" &&
      event.type !== "permission_cancelled"
    ) {
      this._settle(event.request_id, event);
    }
    for (const listener of this._listeners) listener(event);
  }

  /** @private @param {string} id @param {Event} event */
  _settle(id, event) {
    const waiter = this._waiters.get(id);
    if (waiter === undefined) return;
    this._waiters.delete(id);
    if (event.type === "error") {
      waiter.reject(new ClientError(`${event.code}: ${event.message}`, event));
    } else if (event.type === waiter.kind) {
      waiter.resolve(event);
    } else {
      waiter.reject(new ClientError(`unexpected answer to ${id}: ${event.type}`));
    }
  }

  /** @private @param {Error} error */
  _gone(error) {
    for (const waiter of this._waiters.values()) waiter.reject(error);
    this._waiters.clear();
    for (const controller of [...this._calls.values(), ...this._asks.values()]) controller.abort();
  }

  /** @private @param {ToolCall} call */
  async _serveCall(call) {
    const controller = new AbortController();
    this._calls.set(call.tool_use_id, controller);
    const handler = this._handlers.get(call.name);
    /** @type {ToolOutput} */
    let output;
    try {
      if (handler === undefined) throw new HostToolError(`this host does not serve ${call.name}`);
      const content = await handler(call.input, {
        toolUseId: call.tool_use_id,
        name: call.name,
        turn: call.turn,
        signal: controller.signal,
        progress: (data) => this.send({ type: "tool_progress", tool_use_id: call.tool_use_id, data }),
      });
      output = { type: "tool_output", tool_use_id: call.tool_use_id, content, is_error: false };
    } catch (error) {
      const message =
        error instanceof HostToolError
          ? error.message
          : error instanceof Error
            ? `${error.name}: ${error.message}`
            : String(error);
      output = { type: "tool_output", tool_use_id: call.tool_use_id, content: message, is_error: true };
    } finally {
      this._calls.delete(call.tool_use_id);
    }
    // After a tool_cancel the daemon has written the result already: nothing to answer.
    if (!controller.signal.aborted) await this.send(output).catch(() => {});
  }

  /** @private @param {PermissionRequest} request */
  async _answer(request) {
    const controller = new AbortController();
    this._asks.set(request.request_id, controller);
    /** @type {PermissionDecision} */
    let decision;
    try {
      const handler = this.options.onPermission;
      const answer = handler
        ? await handler(request, { signal: controller.signal })
        : { allow: false, message: "the host has no permission handler" };
      decision = typeof answer === "boolean" ? { allow: answer } : answer;
    } catch (error) {
      decision = { allow: false, message: `permission check failed: ${String(error)}` };
    } finally {
      this._asks.delete(request.request_id);
    }
    if (controller.signal.aborted) return; // withdrawn: a late answer would be ignored anyway
    await this.send({
      type: "permission_response",
      request_id: request.request_id,
      decision: decision.allow ? "allow" : "deny",
      message: decision.message ?? null,
      updated_input: decision.updatedInput ?? null,
      interrupt: decision.interrupt ?? false,
    }).catch(() => {});
  }
}

/**
 * @template T
 * @param {Promise<T>} promise
 * @param {number} ms
 * @param {string} message
 * @returns {Promise<T>}
 */
function withTimeout(promise, ms, message) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new ClientError(`${message} within ${ms} ms`)), ms);
  });
  return /** @type {Promise<T>} */ (Promise.race([promise, timeout])).finally(() => clearTimeout(timer));
}

/**
 * Whether `promise` settles within `ms`.
 * @param {Promise<unknown>} promise
 * @param {number} ms
 */
async function settlesWithin(promise, ms) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
