// A TypeScript ACP v2 agent built on @agentclientprotocol/sdk/experimental/v2,
// speaking on stdin/stdout, for acprpc clients to drive and cancel. With
// --router it is the SDK's protocol router instead, serving this v2 agent and
// a v1 agent with the same behaviour on one connection, as
// agentProtocolRouter().withV1(..).withV2(..) does: the client's initialize
// picks the version.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/v2-agent.ts --report PATH [--router] [--grace-ms N]
//
// stdout is the ACP channel; the JSON report goes to PATH when stdin closes
// (or on SIGTERM/SIGINT), or to stderr without --report.
//
// A prompt turn, in v2: session/prompt is answered with a messageId at once;
// the foreground work reports state_update running, echoes the user message,
// sends an agent_message_chunk, then asks session/request_permission and
// terminal/create (v1's method, sent as the demo's second nested request)
// at once, both with a cancellationSignal. A prompt containing "slow" keeps
// working until the session is cancelled; any other ends with an idle
// state_update with stopReason end_turn once both are answered. A prompt
// that arrives while the session works is held until that work ends, and is
// answered -32800 if it is withdrawn ($/cancel_request) or the session is
// cancelled first. On session/cancel the work aborts its requests' signal
// (the SDK sends $/cancel_request for each one pending), waits up to
// --grace-ms for their answers, sends a last chunk and then the idle
// state_update with stopReason cancelled.
//
// In v1 (router only) the same turn ends with the prompt's answer:
// {stopReason: "end_turn"} or {stopReason: "cancelled"}.

import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import * as acp1 from "@agentclientprotocol/sdk";
import {
  abortedPromise,
  describeError,
  emitReport,
  hasWord,
  nodeNdJsonStream,
  now,
  promptText,
  sleep,
  tapStream,
  type ErrorReport,
  type WireEntry,
} from "./common.ts";
import { checkWire, type SchemaReport } from "./schema-check.ts";

const { values: opts } = parseArgs({
  options: {
    report: { type: "string" },
    router: { type: "boolean", default: false },
    "grace-ms": { type: "string", default: "2000" },
  },
  strict: true,
});
const graceMs = Number(opts["grace-ms"]);
const agentInfo = { name: "acprpc-interop-ts-v2-agent", version: "0.0.0" };

type OutgoingRecord = {
  method: string;
  signalAbortedAt: number | null;
  outcome: "result" | "error" | "unsettled";
  result?: unknown;
  error?: ErrorReport;
};

type PromptRecord = {
  version: 1 | 2;
  requestId: acp.JsonRpcId;
  sessionId: string;
  text: string;
  receivedAt: number;
  /** v2: whether it waited for earlier work to end. */
  held: boolean;
  /** v2: "inserted" (answered with messageId), "withdrawn", "cancelled"; v1: the stop reason. */
  outcome: string | null;
  messageId?: string;
  answeredAt: number | null;
  outgoing: OutgoingRecord[];
  /** The stop reason the turn ended with (v2: on its idle state_update). */
  stopReason: "end_turn" | "cancelled" | null;
};

const wire: WireEntry[] = [];
const report = {
  role: opts.router ? "ts-router-agent" : "ts-v2-agent",
  sdk: "@agentclientprotocol/sdk@2.4.0",
  options: { router: opts.router, graceMs },
  /** The protocol version the connection was routed to (1 or 2), from the initialize the agent answered. */
  negotiated: null as number | null,
  endedBy: null as string | null,
  prompts: [] as PromptRecord[],
  sessionCancels: [] as Array<{ t: number; sessionId: string; workActive: boolean; held: number }>,
  schema: null as SchemaReport | null,
  wire,
};

// ---------------------------------------------------------------- the turn, shared by both versions

/** The pieces of a turn that differ by version. */
type TurnIO = {
  version: 1 | 2;
  sessionId: string;
  say(text: string): Promise<void>;
  requestPermission(signal: AbortSignal): Promise<unknown>;
  createTerminal(signal: AbortSignal): Promise<unknown> | null;
};

/**
 * Runs the turn's nested requests. It resolves "answered" once both are
 * answered (a prompt without "slow"), or "cancelled" once `cancelled`
 * resolves, after aborting the requests still pending and waiting for their
 * answers up to the grace period.
 */
async function runTurn(io: TurnIO, record: PromptRecord, cancelled: Promise<unknown>): Promise<"answered" | "cancelled"> {
  await io.say("working on it");
  const controller = new AbortController();
  const settled: Promise<void>[] = [];
  const track = (method: string, call: Promise<unknown> | null) => {
    if (!call) return;
    const out: OutgoingRecord = { method, signalAbortedAt: null, outcome: "unsettled" };
    record.outgoing.push(out);
    void abortedPromise(controller.signal).then(() => (out.signalAbortedAt = now()));
    settled.push(
      call.then(
        (result) => {
          out.outcome = "result";
          out.result = result;
        },
        (error: unknown) => {
          out.outcome = "error";
          out.error = describeError(error);
        },
      ),
    );
  };
  track("session/request_permission", io.requestPermission(controller.signal));
  track("terminal/create", io.createTerminal(controller.signal));
  const answered = Promise.all(settled).then(() => "answered" as const);
  const stop = cancelled.then(() => "cancelled" as const);
  const outcome = hasWord(record.text, "slow") ? await stop : await Promise.race([answered, stop]);
  if (outcome === "answered") return outcome;
  controller.abort(acp.RequestError.requestCancelled({ reason: "turn cancelled" }));
  await Promise.race([answered, sleep(graceMs)]);
  await io.say("stopped");
  return "cancelled";
}

function newPrompt(version: 1 | 2, requestId: acp.JsonRpcId, sessionId: string, text: string): PromptRecord {
  const record: PromptRecord = {
    version,
    requestId,
    sessionId,
    text,
    receivedAt: now(),
    held: false,
    outcome: null,
    answeredAt: null,
    outgoing: [],
    stopReason: null,
  };
  report.prompts.push(record);
  return record;
}

const permissionOptions = [
  { optionId: "allow", name: "Allow once", kind: "allow_once" as const },
  { optionId: "reject", name: "Reject", kind: "reject_once" as const },
];
const toolCall = { toolCallId: "call_1", title: "Run `sleep 30`", kind: "execute" as const, status: "pending" as const };

// ---------------------------------------------------------------- v2

/** A v2 session: its foreground work and the prompts held behind it. */
type Session = {
  id: string;
  work: { cancel: () => void } | null;
  held: Array<(outcome: "insert" | "cancelled") => void>;
  messages: number;
};
const sessions = new Map<string, Session>();
let sessionCounter = 0;

function newSessionId(): string {
  sessionCounter += 1;
  return `ts_sess_${sessionCounter}`;
}

/** Runs one v2 foreground work, then inserts the next held prompt, if any. */
async function runWork(session: Session, record: PromptRecord, client: acp.AgentContext): Promise<void> {
  let cancel!: () => void;
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  session.work = { cancel };
  const update = (u: acp.SessionUpdate) => client.notify(acp.methods.client.session.update, { sessionId: session.id, update: u });
  const agentMessageId = `agent_msg_${++session.messages}`;
  try {
    await update({ sessionUpdate: "state_update", state: "running" });
    await update({ sessionUpdate: "user_message", messageId: record.messageId!, content: [{ type: "text", text: record.text }] });
    const io: TurnIO = {
      version: 2,
      sessionId: session.id,
      say: (text) => update({ sessionUpdate: "agent_message_chunk", messageId: agentMessageId, content: { type: "text", text } }),
      requestPermission: (signal) =>
        client.request(
          acp.methods.client.session.requestPermission,
          {
            sessionId: session.id,
            title: "Run `sleep 30`?",
            subject: { type: "tool_call", toolCall },
            options: permissionOptions,
          },
          { cancellationSignal: signal },
        ),
      createTerminal: (signal) =>
        client.request<{ terminalId: string }, unknown, "terminal/create">(
          "terminal/create",
          { sessionId: session.id, command: "sleep", args: ["30"] },
          { cancellationSignal: signal },
        ),
    };
    const outcome = await runTurn(io, record, cancelled);
    const stopReason = outcome === "answered" ? "end_turn" : "cancelled";
    record.stopReason = stopReason;
    await update(
      stopReason === "end_turn"
        ? { sessionUpdate: "state_update", state: "idle", stopReason: "end_turn" }
        : { sessionUpdate: "state_update", state: "idle", stopReason: "cancelled" },
    );
  } finally {
    session.work = null;
    session.held.shift()?.("insert");
  }
}

const v2App = acp
  .agent({ name: agentInfo.name })
  .onRequest(acp.methods.agent.initialize, () => {
    report.negotiated = 2;
    return { protocolVersion: acp.PROTOCOL_VERSION, info: agentInfo, capabilities: { session: {} } };
  })
  .onRequest(acp.methods.agent.session.new, () => {
    const id = newSessionId();
    sessions.set(id, { id, work: null, held: [], messages: 0 });
    return { sessionId: id };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, signal, requestId, client }) => {
    const session = sessions.get(params.sessionId);
    if (!session) throw acp.RequestError.sessionNotFound(params.sessionId);
    const record = newPrompt(2, requestId, params.sessionId, promptText(params.prompt));
    if (session.work) {
      // Held: inserted when the work ends, unless withdrawn or cancelled first.
      record.held = true;
      const outcome = await Promise.race([
        new Promise<"insert" | "cancelled">((resolve) => session.held.push(resolve)),
        abortedPromise(signal).then(() => "withdrawn" as const),
      ]);
      if (outcome !== "insert") {
        record.outcome = outcome;
        record.answeredAt = now();
        throw acp.RequestError.requestCancelled();
      }
    }
    record.outcome = "inserted";
    record.messageId = `user_msg_${report.prompts.length}`;
    record.answeredAt = now();
    void runWork(session, record, client);
    return { messageId: record.messageId };
  })
  .onRequest(acp.methods.agent.session.close, ({ params }) => {
    cancelSession(params.sessionId);
    sessions.delete(params.sessionId);
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => cancelSession(params.sessionId));

/** session/cancel: the held prompts are answered -32800, the work is cancelled. */
function cancelSession(sessionId: string): void {
  const session = sessions.get(sessionId);
  report.sessionCancels.push({
    t: now(),
    sessionId,
    workActive: session?.work != null,
    held: session?.held.length ?? 0,
  });
  if (!session) return;
  for (const release of session.held.splice(0)) release("cancelled");
  session.work?.cancel();
}

// ---------------------------------------------------------------- v1 (router only)

const v1Turns = new Map<string, () => void>();

const v1App = acp1
  .agent({ name: agentInfo.name })
  .onRequest(acp1.methods.agent.initialize, ({ params }) => {
    report.negotiated = 1;
    v1Terminal = params.clientCapabilities?.terminal === true;
    return { protocolVersion: acp1.PROTOCOL_VERSION, agentCapabilities: { loadSession: false }, authMethods: [], agentInfo };
  })
  .onRequest(acp1.methods.agent.session.new, () => ({ sessionId: newSessionId() }))
  .onRequest(acp1.methods.agent.session.prompt, async ({ params, signal, requestId, client }) => {
    const record = newPrompt(1, requestId, params.sessionId, promptText(params.prompt));
    let cancel!: () => void;
    const cancelled = Promise.race([new Promise<void>((resolve) => (cancel = resolve)), abortedPromise(signal)]);
    v1Turns.set(params.sessionId, cancel);
    const io: TurnIO = {
      version: 1,
      sessionId: params.sessionId,
      say: (text) =>
        client.notify(acp1.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
        }),
      requestPermission: (signal) =>
        client.request(
          acp1.methods.client.session.requestPermission,
          { sessionId: params.sessionId, toolCall, options: permissionOptions },
          { cancellationSignal: signal },
        ),
      createTerminal: (signal) =>
        v1Terminal
          ? client.request(
              acp1.methods.client.terminal.create,
              { sessionId: params.sessionId, command: "sleep", args: ["30"] },
              { cancellationSignal: signal },
            )
          : null,
    };
    try {
      const outcome = await runTurn(io, record, cancelled);
      const stopReason = outcome === "answered" ? "end_turn" : "cancelled";
      record.stopReason = record.outcome = stopReason;
      return { stopReason };
    } finally {
      record.answeredAt = now();
      v1Turns.delete(params.sessionId);
    }
  })
  .onNotification(acp1.methods.agent.session.cancel, ({ params }) => {
    report.sessionCancels.push({ t: now(), sessionId: params.sessionId, workActive: v1Turns.has(params.sessionId), held: 0 });
    v1Turns.get(params.sessionId)?.();
  });
let v1Terminal = false;

// ---------------------------------------------------------------- main

let reported = false;
function reportAndExit(endedBy: string, code: number): void {
  if (!reported) {
    reported = true;
    report.endedBy = endedBy;
    report.schema = checkWire(report.negotiated === 1 ? 1 : 2, wire);
    emitReport(report, opts.report, process.stderr);
  }
  process.exit(code);
}

process.on("SIGTERM", () => reportAndExit("SIGTERM", 0));
process.on("SIGINT", () => reportAndExit("SIGINT", 0));

const stream = tapStream(nodeNdJsonStream(process.stdin, process.stdout), wire);
const connection = opts.router ? acp.agentProtocolRouter().withV1(v1App).withV2(v2App).connect(stream) : v2App.connect(stream);
void connection.closed.then(() => reportAndExit("stdin-closed", 0));
