// Generated from protocol/schema.json (protocol version 1) by
// clients/typescript/scripts/generate.mjs. Do not edit by hand: run `npm run generate`.
// schema.json sha256: 1069a44810fe54b19cf47933f5ea7a9beb7408872b9664c2f427404504c5d5a1

/**
 * NDJSON over stdio. Each line the host writes is a Command; each line the daemon writes is an Event. Both are tagged unions on `type`.
 */
export type StdioExecutorProtocol = Command | Event;
export type Command =
  | AddTool
  | Interrupt
  | Discard
  | Drain
  | TrustWorkspace
  | PermissionResponse
  | RegisterTool
  | UnregisterTool
  | ToolProgressCommand
  | ToolOutput
  | ListJobs;
export type Event =
  | Ready
  | ToolStarted
  | Progress
  | ToolResult
  | Drained
  | Discarded
  | Interrupted
  | ErrorEvent
  | PermissionRequest
  | PermissionCancelled
  | ToolCall
  | ToolCancel
  | ToolsChanged
  | JournalRecovered
  | WorkspaceTrusted
  | Todos
  | JobStarted
  | JobExited
  | Jobs;

/**
 * Schedule one tool call; it starts as soon as the concurrency rules allow.
 */
export interface AddTool {
  type: "add_tool";
  tool_use: ToolUse;
  request_id?: string | null;
}
/**
 * An Anthropic ``tool_use`` content block, exactly as the model emitted it.
 */
export interface ToolUse {
  id: string;
  name: string;
  input?: {
    [k: string]: unknown | undefined;
  };
  type?: "tool_use";
}
/**
 * Cancel unfinished tools of the open turn.
 *
 *     ``reason == "interrupt"`` (the user typed a new message) cancels only tools whose
 *     interrupt behaviour is ``cancel``; any other reason cancels everything.
 */
export interface Interrupt {
  type: "interrupt";
  reason?: string;
  request_id?: string | null;
}
/**
 * Throw the open turn away: nothing more of it is written (a retried stream).
 */
export interface Discard {
  type: "discard";
  request_id?: string | null;
}
/**
 * Wait until every tool of the turn has its result written, then end the turn.
 */
export interface Drain {
  type: "drain";
  request_id?: string | null;
}
/**
 * The host trusts the workspace: the settings and MCP servers ``ready`` reported as
 *     held back take effect (answered with ``workspace_trusted``).
 */
export interface TrustWorkspace {
  type: "trust_workspace";
  request_id?: string | null;
}
/**
 * The host's answer to a ``permission_request`` (same ``request_id``).
 */
export interface PermissionResponse {
  type: "permission_response";
  request_id: string;
  decision: "allow" | "deny";
  message?: string | null;
  updated_input?: {
    [k: string]: unknown | undefined;
  } | null;
  interrupt?: boolean;
}
export interface RegisterTool {
  type: "register_tool";
  tool: HostToolDefinition;
  request_id?: string | null;
}
/**
 * A tool the host implements: an API tool definition plus scheduling facts.
 */
export interface HostToolDefinition {
  name: string;
  description?: string;
  input_schema?: {
    [k: string]: unknown | undefined;
  };
  read_only?: boolean;
  interrupt_behavior?: "block" | "cancel";
  timeout_ms?: number | null;
  aliases?: string[];
}
export interface UnregisterTool {
  type: "unregister_tool";
  name: string;
  request_id?: string | null;
}
/**
 * Progress of a host tool call, relayed as a ``progress`` event.
 */
export interface ToolProgressCommand {
  type: "tool_progress";
  tool_use_id: string;
  data: {
    [k: string]: unknown | undefined;
  };
}
/**
 * The result of a host tool call.
 */
export interface ToolOutput {
  type: "tool_output";
  tool_use_id: string;
  content:
    | string
    | {
        [k: string]: unknown | undefined;
      }[];
  is_error?: boolean;
}
/**
 * Ask for the background jobs (``run_in_background``), answered by ``jobs``.
 */
export interface ListJobs {
  type: "list_jobs";
  request_id?: string | null;
}
export interface Ready {
  type: "ready";
  protocol_version: number;
  version: string;
  pid: number;
  tools: ToolDefinition[];
  tool_info: {
    [k: string]: ToolInfo | undefined;
  };
  limits: Limits;
  workspace_trust: WorkspaceTrust | null;
  sandbox: SandboxInfo | null;
}
/**
 * A tool in the Anthropic Messages API shape: only API fields.
 */
export interface ToolDefinition {
  name: string;
  description: string;
  input_schema: {
    [k: string]: unknown | undefined;
  };
}
/**
 * Facts about a tool that are not part of the API definition.
 */
export interface ToolInfo {
  read_only: "always" | "never" | "per_input";
  interrupt_behavior: "block" | "cancel";
  aliases: string[];
  max_result_bytes: number;
  source: "builtin" | "host" | "mcp";
}
export interface Limits {
  max_line_bytes: number;
  max_concurrency: number;
  result_order: "barrier" | "strict";
}
export interface WorkspaceTrust {
  trusted: boolean;
  held_back: HeldBack | null;
}
/**
 * What the workspace's own files asked for that an untrusted workspace does not get:
 *     only their deny and ask rules apply until the host trusts it.
 */
export interface HeldBack {
  files: string[];
  allow: string[];
  default_mode: string | null;
  additional_directories: string[];
  hooks: string[];
  sandbox: boolean;
  mcp_servers: string[];
}
/**
 * Whether Bash runs in an OS sandbox, by what, and what it does and does not cover.
 */
export interface SandboxInfo {
  enabled: boolean;
  mechanism: "bubblewrap" | "landlock" | "landlock+namespaces" | "none";
  network: "blocked" | "proxy" | "unrestricted";
  enforced: string[];
  not_enforced: string[];
  held_back: string[];
  reason: string | null;
  allowed_domains: string[];
}
export interface ToolStarted {
  type: "tool_started";
  tool_use_id: string;
  name: string;
  turn: number;
}
export interface Progress {
  type: "progress";
  tool_use_id: string;
  data: {
    [k: string]: unknown | undefined;
  };
}
/**
 * Minus ``meta``, exactly an Anthropic ``tool_result`` content block.
 */
export interface ToolResult {
  type: "tool_result";
  tool_use_id: string;
  content:
    | string
    | {
        [k: string]: unknown | undefined;
      }[];
  is_error: boolean;
  meta: ResultMeta;
}
/**
 * What a host wants to know about a result besides what the model sees.
 */
export interface ResultMeta {
  status:
    | "denied"
    | "error"
    | "interrupted"
    | "invalid_input"
    | "rejected"
    | "sibling_cancelled"
    | "success"
    | "timed_out"
    | "unknown_tool";
  turn: number;
  duration_ms: number | null;
  exit_code: number | null;
  truncated: boolean;
  output_path: string | null;
  output_bytes: number | null;
}
export interface Drained {
  type: "drained";
  request_id: string | null;
  turn: number | null;
  results: number;
  errors: number;
  by_status: {
    [k: string]: number | undefined;
  };
}
export interface Discarded {
  type: "discarded";
  tool_use_ids: string[];
  request_id: string | null;
  turn: number | null;
}
/**
 * Acknowledges an ``interrupt``: which tools it cancelled (their results follow).
 */
export interface Interrupted {
  type: "interrupted";
  reason: string;
  tool_use_ids: string[];
  request_id: string | null;
  turn: number | null;
}
export interface ErrorEvent {
  type: "error";
  code:
    | "duplicate_tool_use_id"
    | "internal_error"
    | "invalid_command"
    | "invalid_json"
    | "invalid_tool_definition"
    | "invalid_utf8"
    | "line_too_long"
    | "missing_type"
    | "not_an_object"
    | "unknown_request_id"
    | "unknown_tool_use_id"
    | "unknown_type";
  message: string;
  line: number | null;
  request_id: string | null;
  tool_use_id: string | null;
}
/**
 * A tool waits for the host to allow or deny it (answer: ``permission_response``).
 */
export interface PermissionRequest {
  type: "permission_request";
  request_id: string;
  tool_use_id: string;
  name: string;
  input: {
    [k: string]: unknown | undefined;
  };
  reason: string;
  turn: number | null;
  siblings: string[];
}
/**
 * A pending ``permission_request`` will not be needed any more (interrupt, discard,
 *     shutdown, end of input); a late answer to it is ignored.
 */
export interface PermissionCancelled {
  type: "permission_cancelled";
  request_id: string;
  tool_use_id: string;
  reason: string;
}
/**
 * Run a host tool now: answer with ``tool_progress`` (any number) and ``tool_output``.
 */
export interface ToolCall {
  type: "tool_call";
  tool_use_id: string;
  name: string;
  input: {
    [k: string]: unknown | undefined;
  };
  turn: number | null;
}
/**
 * Stop a host tool call; its result has been (or is being) written by the daemon.
 */
export interface ToolCancel {
  type: "tool_cancel";
  tool_use_id: string;
  reason: string;
}
/**
 * The enabled tools changed (host registration, an MCP server came up or went away).
 */
export interface ToolsChanged {
  type: "tools_changed";
  tools: ToolDefinition[];
  tool_info: {
    [k: string]: ToolInfo | undefined;
  };
  added: string[];
  removed: string[];
  request_id: string | null;
}
/**
 * Written right after ``ready`` when the journal shows tools that started in an earlier
 *     run and never finished: their side effects may or may not have happened.
 */
export interface JournalRecovered {
  type: "journal_recovered";
  journal: string;
  unfinished: UnfinishedTool[];
}
export interface UnfinishedTool {
  tool_use_id: string;
  name: string;
  input: {
    [k: string]: unknown | undefined;
  };
  turn: number | null;
}
/**
 * The answer to ``trust_workspace``: what took effect (empty if nothing was held).
 */
export interface WorkspaceTrusted {
  type: "workspace_trusted";
  applied: HeldBack;
  request_id: string | null;
}
/**
 * The model replaced its task list (a ``TodoWrite`` call), for the host to show.
 *
 *     Written as soon as the call runs, before its ``tool_result``. ``todos`` is the whole new
 *     list as the model sent it; ``previous`` the session's list before the call. As in Claude
 *     Code, a list whose tasks are all completed is then forgotten: the next call's
 *     ``previous`` is empty.
 */
export interface Todos {
  type: "todos";
  tool_use_id: string;
  todos: TodoItem[];
  previous: TodoItem[];
}
/**
 * One task of the model's list, in the shape the model sent it: ``activeForm`` (Claude
 *     Code 1.0.9x on) or ``id`` and ``priority`` (before); absent fields are left out.
 */
export interface TodoItem {
  content: string;
  status: "completed" | "in_progress" | "pending";
  activeForm: string | null;
  id: string | null;
  priority: ("high" | "low" | "medium") | null;
}
/**
 * A Bash call started a background job (its result names ``job_id`` to the model).
 */
export interface JobStarted {
  type: "job_started";
  job: JobInfo;
}
/**
 * A background job: a Bash call with ``run_in_background``, running or finished.
 */
export interface JobInfo {
  job_id: string;
  tool_use_id: string;
  command: string;
  description: string;
  status: "completed" | "failed" | "killed" | "running";
  exit_code: number | null;
  pid: number;
  output_path: string;
  output_bytes: number;
  unread_bytes: number;
  started_at: number;
}
/**
 * A background job's shell exited (of itself, or stopped by KillShell/TaskStop).
 */
export interface JobExited {
  type: "job_exited";
  job: JobInfo;
}
/**
 * The answer to ``list_jobs``: every job of the session, oldest first.
 */
export interface Jobs {
  type: "jobs";
  jobs: JobInfo[];
  request_id: string | null;
}

/** The protocol version this file was generated for (`ready.protocol_version`). */
export type ProtocolVersion = 1;
