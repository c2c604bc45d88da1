// A TypeScript ACP agent built on @agentclientprotocol/sdk (AgentApp), speaking
// ACP v1 on stdin/stdout. Used to test a Go ACP client against the official SDK.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/agent.ts --report PATH [--terminal] [--stop-waiting]
//                                  [--late-update] [--grace-ms N]
//
// stdout is the ACP channel, so the JSON observation report goes to PATH
// (written when stdin closes, on SIGTERM/SIGINT); without --report it goes to
// stderr as one line.
//
// Behaviour for `session/prompt`:
//   1. sends one `session/update` (agent_message_chunk);
//   2. sends `session/request_permission` (toolCallId "call_1", options
//      "allow"/"reject"), and with --terminal also `terminal/create`
//      (`sleep 30`), both concurrently and both with a `cancellationSignal`;
//   3. if the prompt text contains the word "slow" it waits until the prompt is
//      cancelled (a `session/cancel` for its session, or `$/cancel_request` for
//      the prompt, which aborts the handler's signal); otherwise it waits for
//      the answers and returns {stopReason:"end_turn"} unless cancelled first;
//   4. when cancelled it aborts the signal of its outgoing requests, so the SDK
//      sends `$/cancel_request` for each one still pending, waits up to
//      --grace-ms (default 5000) for their answers (with --stop-waiting the SDK
//      stops waiting at once), optionally sends one more `session/update`
//      (--late-update), and returns {stopReason:"cancelled"}.

import { parseArgs } from "node:util";
import * as acp from "@agentclientprotocol/sdk";
import {
  abortedPromise,
  describeError,
  emitReport,
  hasWord,
  jsonSafe,
  nodeNdJsonStream,
  now,
  promptText,
  sleep,
  tapStream,
  type ErrorReport,
  type WireEntry,
} from "./common.ts";

const { values: opts } = parseArgs({
  options: {
    report: { type: "string" },
    terminal: { type: "boolean", default: false },
    "stop-waiting": { type: "boolean", default: false },
    "late-update": { type: "boolean", default: false },
    "grace-ms": { type: "string", default: "5000" },
  },
  strict: true,
});
const graceMs = Number(opts["grace-ms"]);

type OutgoingRecord = {
  method: string;
  /** JSON-RPC id the SDK gave the request (read from the wire). */
  requestId: acp.JsonRpcId | undefined;
  sentAt: number;
  /** When this agent aborted the request's cancellationSignal, if it did. */
  cancelSignalAbortedAt: number | null;
  /** "result", "error", or "unsettled" if no answer came before the report. */
  outcome: "result" | "error" | "unsettled";
  settledAt: number | null;
  result?: unknown;
  error?: ErrorReport;
  /** The client's response as read from the wire (also when the SDK had stopped waiting), and how many came. */
  answerOnWire: { t: number; message: unknown } | null;
  answersOnWireCount: number;
};

type PromptRecord = {
  requestId: acp.JsonRpcId;
  sessionId: string;
  text: string;
  slow: boolean;
  receivedAt: number;
  /**
   * What stopped the turn first: "session/cancel", "$/cancel_request" (the
   * handler's signal aborted with a -32800 reason), "connection-closed", or null.
   */
  cancelledBy: "session/cancel" | "$/cancel_request" | "connection-closed" | null;
  sessionCancelAt: number | null;
  handlerSignalAbortedAt: number | null;
  handlerSignalReason: unknown;
  outgoing: OutgoingRecord[];
  lateUpdateSent: boolean;
  response: unknown;
  respondedAt: number | null;
};

const wire: WireEntry[] = [];
const report = {
  role: "ts-agent",
  sdk: "@agentclientprotocol/sdk@2.4.0",
  options: {
    terminal: opts.terminal,
    stopWaitingOnCancel: opts["stop-waiting"],
    lateUpdate: opts["late-update"],
    graceMs,
  },
  endedBy: null as string | null,
  initialize: [] as Array<{ t: number; params: unknown }>,
  sessions: [] as string[],
  prompts: [] as PromptRecord[],
  sessionCancels: [] as Array<{ t: number; sessionId: string; activePrompt: boolean }>,
  /** `$/cancel_request` notifications read from the wire, with whether they named a request in flight. */
  cancelRequestsReceived: [] as Array<{ t: number; requestId: unknown; matchedPromptInFlight: boolean }>,
  /** Notifications other than session/cancel that reached the fallback handler. */
  otherNotifications: [] as Array<{ t: number; method: string; params: unknown }>,
  wire,
};

/** Per session: the AbortController of the prompt turn now running, and the session/cancel resolver. */
const turns = new Map<string, { cancel: (t: number) => void; requestId: acp.JsonRpcId }>();
let sessionCounter = 0;

function describeOutgoing(record: OutgoingRecord, promise: Promise<unknown>): Promise<void> {
  return promise.then(
    (result) => {
      record.outcome = "result";
      record.result = result;
      record.settledAt = now();
    },
    (error: unknown) => {
      record.outcome = "error";
      record.error = describeError(error);
      record.settledAt = now();
    },
  );
}

const app = acp
  .agent({ name: "acprpc-interop-ts-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    report.initialize.push({ t: now(), params });
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      authMethods: [],
      agentInfo: { name: "acprpc-interop-ts-agent", version: "0.0.0" },
    };
  })
  .onRequest(acp.methods.agent.session.new, () => {
    sessionCounter += 1;
    const sessionId = `ts_sess_${sessionCounter}`;
    report.sessions.push(sessionId);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, signal, requestId, client }) => {
    const text = promptText(params.prompt);
    const record: PromptRecord = {
      requestId,
      sessionId: params.sessionId,
      text,
      slow: hasWord(text, "slow"),
      receivedAt: now(),
      cancelledBy: null,
      sessionCancelAt: null,
      handlerSignalAbortedAt: null,
      handlerSignalReason: null,
      outgoing: [],
      lateUpdateSent: false,
      response: null,
      respondedAt: null,
    };
    report.prompts.push(record);

    // Cancellation of this turn: session/cancel (via `turns`) or the handler's own signal.
    let resolveSessionCancel: () => void = () => {};
    const sessionCancelled = new Promise<void>((resolve) => {
      resolveSessionCancel = resolve;
    });
    turns.set(params.sessionId, {
      requestId,
      cancel: (t) => {
        record.sessionCancelAt ??= t;
        record.cancelledBy ??= "session/cancel";
        resolveSessionCancel();
      },
    });
    const signalAborted = abortedPromise(signal).then((reason) => {
      record.handlerSignalAbortedAt = now();
      record.handlerSignalReason = jsonSafe(reason);
      const byPeer = reason instanceof acp.RequestError && reason.code === -32800;
      record.cancelledBy ??= byPeer ? "$/cancel_request" : "connection-closed";
    });
    const cancelled = Promise.race([sessionCancelled, signalAborted]).then(() => "cancelled" as const);

    try {
      await client.notify(acp.methods.client.session.update, {
        sessionId: params.sessionId,
        update: {
          sessionUpdate: "agent_message_chunk",
          content: { type: "text", text: "working on it" },
        },
      });

      const outgoingController = new AbortController();
      const requestOptions: acp.SendRequestOptions = {
        cancellationSignal: outgoingController.signal,
        stopWaitingOnCancel: opts["stop-waiting"],
      };
      const settled: Promise<void>[] = [];
      const send = (method: string, call: () => Promise<unknown>) => {
        const out: OutgoingRecord = {
          method,
          requestId: undefined,
          sentAt: now(),
          cancelSignalAbortedAt: null,
          outcome: "unsettled",
          settledAt: null,
          answerOnWire: null,
          answersOnWireCount: 0,
        };
        record.outgoing.push(out);
        settled.push(describeOutgoing(out, call()));
      };
      send(acp.methods.client.session.requestPermission, () =>
        client.request(
          acp.methods.client.session.requestPermission,
          {
            sessionId: params.sessionId,
            toolCall: { toolCallId: "call_1", title: "Run sleep 30", kind: "execute", status: "pending" },
            options: [
              { optionId: "allow", name: "Allow", kind: "allow_once" },
              { optionId: "reject", name: "Reject", kind: "reject_once" },
            ],
          },
          requestOptions,
        ),
      );
      if (opts.terminal) {
        send(acp.methods.client.terminal.create, () =>
          client.request(
            acp.methods.client.terminal.create,
            { sessionId: params.sessionId, command: "sleep", args: ["30"] },
            requestOptions,
          ),
        );
      }
      const allAnswered = Promise.all(settled).then(() => "answered" as const);

      const outcome = record.slow ? await cancelled : await Promise.race([allAnswered, cancelled]);
      if (outcome === "answered") {
        record.response = { stopReason: "end_turn" };
        return { stopReason: "end_turn" };
      }

      // Cascade the cancellation to our own outstanding requests to the client.
      const abortedAt = now();
      for (const out of record.outgoing) {
        if (out.outcome === "unsettled") {
          out.cancelSignalAbortedAt = abortedAt;
        }
      }
      outgoingController.abort(acp.RequestError.requestCancelled({ reason: "prompt turn cancelled" }));
      await Promise.race([allAnswered, sleep(graceMs)]);

      if (opts["late-update"]) {
        await client.notify(acp.methods.client.session.update, {
          sessionId: params.sessionId,
          update: {
            sessionUpdate: "agent_message_chunk",
            content: { type: "text", text: "stopped" },
          },
        });
        record.lateUpdateSent = true;
      }
      record.response = { stopReason: "cancelled" };
      return { stopReason: "cancelled" };
    } finally {
      record.respondedAt = now();
      if (turns.get(params.sessionId)?.requestId === requestId) {
        turns.delete(params.sessionId);
      }
    }
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    const t = now();
    const turn = turns.get(params.sessionId);
    report.sessionCancels.push({ t, sessionId: params.sessionId, activePrompt: turn !== undefined });
    turn?.cancel(t);
  })
  .onNotification("*", ({ method, params }) => {
    report.otherNotifications.push({ t: now(), method, params });
  });

/** Fills in request IDs and the `$/cancel_request` list from the wire log. */
function finishReport(endedBy: string): void {
  report.endedBy = endedBy;
  const outByMethod = new Map<string, acp.JsonRpcId[]>();
  for (const entry of wire) {
    const msg = entry.msg as { id?: acp.JsonRpcId; method?: string; params?: { requestId?: unknown } };
    if (entry.dir === "out" && msg.method !== undefined && msg.id !== undefined) {
      const ids = outByMethod.get(msg.method) ?? [];
      ids.push(msg.id);
      outByMethod.set(msg.method, ids);
    }
    if (entry.dir === "in" && msg.method === "$/cancel_request" && msg.id === undefined) {
      const requestId = msg.params?.requestId;
      const matched = report.prompts.some(
        (p) => p.requestId === requestId && (p.respondedAt === null || p.respondedAt >= entry.t),
      );
      report.cancelRequestsReceived.push({ t: entry.t, requestId, matchedPromptInFlight: matched });
    }
  }
  for (const prompt of report.prompts) {
    for (const out of prompt.outgoing) {
      out.requestId = outByMethod.get(out.method)?.shift();
      const answers = wire.filter((entry) => {
        const msg = entry.msg as { id?: unknown; method?: unknown };
        return entry.dir === "in" && msg.method === undefined && out.requestId !== undefined && msg.id === out.requestId;
      });
      out.answersOnWireCount = answers.length;
      out.answerOnWire = answers.length > 0 ? { t: answers[0].t, message: answers[0].msg } : null;
    }
  }
}

let reported = false;
function reportAndExit(endedBy: string, code: number): void {
  if (!reported) {
    reported = true;
    finishReport(endedBy);
    emitReport(report, opts.report, process.stderr);
  }
  process.exit(code);
}

process.on("SIGTERM", () => reportAndExit("SIGTERM", 0));
process.on("SIGINT", () => reportAndExit("SIGINT", 0));

const connection = app.connect(tapStream(nodeNdJsonStream(process.stdin, process.stdout), wire));
void connection.closed.then(() => reportAndExit("stdin-closed", 0));
