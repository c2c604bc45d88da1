// A TypeScript ACP client built on @agentclientprotocol/sdk (ClientApp) that
// spawns an ACP agent and drives one cancellation scenario against it.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/client.ts --scenario NAME [--timeout MS] [--report PATH] [--] AGENT_COMMAND...
//
// NAME is one of:
//   session-cancel  prompt; the permission and terminal handlers wait for their
//                   abort signals; once both requests have arrived the client
//                   sends `session/cancel`. Expect both signals to fire (the
//                   agent's `$/cancel_request`) and stopReason "cancelled".
//   request-cancel  two rounds, each a prompt containing "slow" whose requests
//                   are answered at once, then cancelled with the SDK's
//                   per-request `cancellationSignal`: round "graceful"
//                   (stopWaitingOnCancel false) and round "stop-waiting"
//                   (stopWaitingOnCancel true).
//   normal          a prompt without "slow"; both requests answered at once;
//                   expect stopReason "end_turn".
//
// The agent's stdin/stdout carry ACP; its stderr is passed through to ours.
// One JSON report line is printed on stdout (or written to --report PATH).
// The exit status is 0 whenever the scenario ran, whatever it observed; the
// `checks` and `pass` fields summarise the expectations.

import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk";
import {
  abortedPromise,
  describeError,
  emitReport,
  jsonSafe,
  nextSeq,
  nodeNdJsonStream,
  parseScenarioCommandLine,
  now,
  sleep,
  tapStream,
  type ErrorReport,
  type WireEntry,
} from "./common.ts";

// ---------------------------------------------------------------- arguments

type Scenario = "session-cancel" | "request-cancel" | "normal";
const scenarios: Scenario[] = ["session-cancel", "request-cancel", "normal"];

const args = parseScenarioCommandLine("client.ts", scenarios, process.argv.slice(2));

// ---------------------------------------------------------------- report types

type HandlerRecord = {
  requestId: acp.JsonRpcId;
  receivedAt: number;
  params: unknown;
  /** When the handler's AbortSignal fired, or null if it never did. */
  signalAbortedAt: number | null;
  signalReason: unknown;
  /** What the handler did: "result" (returned a value) or "error" (threw). */
  answer: "result" | "error" | null;
  answeredAt: number | null;
  result?: unknown;
  error?: ErrorReport;
};

type UpdateRecord = {
  seq: number;
  t: number;
  sessionId: string;
  sessionUpdate: string;
  text?: string;
  /** False when the handler ran after the prompt's promise had already settled. */
  deliveredBeforePromptSettled: boolean;
};

type RoundRecord = {
  label: string;
  sessionId: string | null;
  promptText: string;
  requestOptions: { cancellationSignal: boolean; stopWaitingOnCancel: boolean };
  /** JSON-RPC id the SDK used for session/prompt (from the wire). */
  promptRequestId: acp.JsonRpcId | undefined;
  sentAt: number | null;
  permission: HandlerRecord | null;
  terminal: HandlerRecord | null;
  /** session-cancel: when `session/cancel` was sent. */
  sessionCancelSentAt: number | null;
  /** request-cancel: when the prompt's cancellationSignal was aborted. */
  cancelSignalAbortedAt: number | null;
  /** "resolved", "rejected", or "timeout" (no settlement within --timeout). */
  outcome: "resolved" | "rejected" | "timeout" | null;
  settledAt: number | null;
  /** settledAt minus the moment of cancellation, when there was one. */
  settledMsAfterCancel: number | null;
  result?: unknown;
  error?: ErrorReport;
  updates: UpdateRecord[];
  /** Order in which ActiveSession.nextUpdate() yielded messages: update kinds, then "stop" or "error:<code>". */
  activeSessionQueue: string[];
  /** Filled from the wire log after the round. */
  wire: {
    /** `$/cancel_request` this client sent, with the id it named. */
    cancelRequestsSent: Array<{ t: number; requestId: unknown }>;
    /** `$/cancel_request` the agent sent, with what the named id was. */
    cancelRequestsReceived: Array<{ t: number; requestId: unknown; names: string | null }>;
    /** The agent's response to session/prompt as read from the wire, even when the SDK dropped it. */
    promptResponse: { t: number; message: unknown } | null;
    /** session/update notifications read after the prompt's response line. */
    updatesAfterPromptResponse: number;
    updatesBeforePromptResponse: number;
  };
};

const wire: WireEntry[] = [];
const report = {
  role: "ts-client",
  sdk: "@agentclientprotocol/sdk@2.4.0",
  scenario: args.scenario,
  agentCommand: args.agentCommand,
  timeoutMs: args.timeoutMs,
  initialize: null as unknown,
  rounds: [] as RoundRecord[],
  otherRequests: [] as Array<{ t: number; method: string; requestId: acp.JsonRpcId }>,
  otherNotifications: [] as Array<{ t: number; method: string }>,
  checks: {} as Record<string, boolean>,
  pass: false,
  agentExit: null as null | { code: number | null; signal: string | null },
  error: null as ErrorReport | null,
  wire,
};

// ---------------------------------------------------------------- per-round behaviour

type Mode = "wait-abort" | "answer";
let current: {
  round: RoundRecord;
  mode: Mode;
  settled: boolean;
  bothReceived: () => void;
  permissionReceived: () => void;
} | null = null;

function newHandlerRecord(requestId: acp.JsonRpcId, params: unknown, signal: AbortSignal): HandlerRecord {
  const record: HandlerRecord = {
    requestId,
    receivedAt: now(),
    params,
    signalAbortedAt: null,
    signalReason: null,
    answer: null,
    answeredAt: null,
  };
  void abortedPromise(signal).then((reason) => {
    record.signalAbortedAt = now();
    record.signalReason = jsonSafe(reason);
  });
  return record;
}

function finishHandler<T>(record: HandlerRecord, value: T): T {
  record.answer = "result";
  record.answeredAt = now();
  record.result = value;
  return value;
}

function failHandler(record: HandlerRecord, error: unknown): never {
  record.answer = "error";
  record.answeredAt = now();
  record.error = describeError(error);
  throw error;
}

const app = acp
  .client({ name: "acprpc-interop-ts-client" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal, requestId }) => {
    const state = current;
    const record = newHandlerRecord(requestId, params, signal);
    if (state) {
      state.round.permission = record;
      state.permissionReceived();
      if (state.round.terminal) state.bothReceived();
    }
    if (state?.mode === "wait-abort") {
      await abortedPromise(signal);
      // The client's duty after cancellation: the `cancelled` outcome.
      return finishHandler(record, { outcome: { outcome: "cancelled" as const } });
    }
    const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    return finishHandler(record, { outcome: { outcome: "selected" as const, optionId: allow.optionId } });
  })
  .onRequest(acp.methods.client.terminal.create, async ({ params, signal, requestId }) => {
    const state = current;
    const record = newHandlerRecord(requestId, params, signal);
    if (state) {
      state.round.terminal = record;
      if (state.round.permission) state.bothReceived();
    }
    if (state?.mode === "wait-abort") {
      const reason = await abortedPromise(signal);
      // Throwing the signal's reason (a -32800 RequestError) makes the SDK answer -32800.
      return failHandler(record, reason);
    }
    return finishHandler(record, { terminalId: `term_${report.rounds.length}` });
  })
  .onRequest("*", ({ method, requestId }) => {
    report.otherRequests.push({ t: now(), method, requestId });
    throw acp.RequestError.methodNotFound(method);
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const state = current;
    const update = params.update as { sessionUpdate: string; content?: { type: string; text?: string } };
    const record: UpdateRecord = {
      seq: nextSeq(),
      t: now(),
      sessionId: params.sessionId,
      sessionUpdate: update.sessionUpdate,
      ...(update.content?.type === "text" ? { text: update.content.text } : {}),
      deliveredBeforePromptSettled: state ? !state.settled : true,
    };
    const round = report.rounds.find((r) => r.sessionId === params.sessionId) ?? state?.round;
    round?.updates.push(record);
  })
  .onNotification("*", ({ method }) => {
    report.otherNotifications.push({ t: now(), method });
  });

// ---------------------------------------------------------------- one prompt round

type RoundPlan = {
  label: string;
  text: string;
  mode: Mode;
  cancellation: "none" | "session/cancel" | "cancellationSignal";
  stopWaitingOnCancel?: boolean;
};

async function runRound(ctx: acp.ClientContext, plan: RoundPlan): Promise<RoundRecord> {
  const round: RoundRecord = {
    label: plan.label,
    sessionId: null,
    promptText: plan.text,
    requestOptions: {
      cancellationSignal: plan.cancellation === "cancellationSignal",
      stopWaitingOnCancel: Boolean(plan.stopWaitingOnCancel),
    },
    promptRequestId: undefined,
    sentAt: null,
    permission: null,
    terminal: null,
    sessionCancelSentAt: null,
    cancelSignalAbortedAt: null,
    outcome: null,
    settledAt: null,
    settledMsAfterCancel: null,
    updates: [],
    activeSessionQueue: [],
    wire: {
      cancelRequestsSent: [],
      cancelRequestsReceived: [],
      promptResponse: null,
      updatesAfterPromptResponse: 0,
      updatesBeforePromptResponse: 0,
    },
  };
  report.rounds.push(round);

  let bothReceived!: () => void;
  const both = new Promise<void>((resolve) => (bothReceived = resolve));
  let permissionReceived!: () => void;
  const permission = new Promise<void>((resolve) => (permissionReceived = resolve));
  const state = { round, mode: plan.mode, settled: false, bothReceived, permissionReceived };
  current = state;

  const session = await ctx.buildSession(process.cwd()).start();
  round.sessionId = session.sessionId;
  const wireFrom = wire.length;

  // Drain the ActiveSession queue in the background to see the order it yields.
  const drained = (async () => {
    for (;;) {
      try {
        const message = await session.nextUpdate();
        round.activeSessionQueue.push(message.kind === "stop" ? "stop" : message.update.sessionUpdate);
        if (message.kind === "stop") return;
      } catch (error) {
        const code = error instanceof acp.RequestError ? error.code : "none";
        round.activeSessionQueue.push(`error:${code}`);
        return;
      }
    }
  })();

  const controller = new AbortController();
  const options: acp.SendRequestOptions =
    plan.cancellation === "cancellationSignal"
      ? { cancellationSignal: controller.signal, stopWaitingOnCancel: Boolean(plan.stopWaitingOnCancel) }
      : {};
  round.sentAt = now();
  let cancelledAt: number | null = null;
  const settled = session.prompt(plan.text, options).then(
    (result) => {
      state.settled = true;
      round.outcome = "resolved";
      round.settledAt = now();
      round.result = result;
    },
    (error: unknown) => {
      state.settled = true;
      round.outcome = "rejected";
      round.settledAt = now();
      round.error = describeError(error);
    },
  );

  const deadline = sleep(args.timeoutMs).then(() => "timeout" as const);
  const withDeadline = <T>(p: Promise<T>) => Promise.race([p, deadline]);

  if (plan.cancellation !== "none") {
    // Wait for the permission request, then give a concurrent terminal/create a moment to arrive too.
    if ((await withDeadline(permission)) !== "timeout") {
      await Promise.race([both, sleep(2000)]);
      if (plan.cancellation === "session/cancel") {
        round.sessionCancelSentAt = cancelledAt = now();
        await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      } else {
        // Let the immediate answers reach the wire first, so only the prompt is in flight.
        await sleep(100);
        round.cancelSignalAbortedAt = cancelledAt = now();
        controller.abort();
      }
    }
  }

  if ((await withDeadline(settled)) === "timeout") {
    round.outcome = "timeout";
  }
  if (round.settledAt !== null && cancelledAt !== null) {
    round.settledMsAfterCancel = Math.round((round.settledAt - cancelledAt) * 10) / 10;
  }
  // Linger: catch updates or a response that arrive after the promise settled.
  await Promise.race([drained, sleep(500)]);
  const promptId = findPromptId(wireFrom);
  const lingerUntil = Date.now() + (round.outcome === "rejected" ? 3000 : 300);
  while (Date.now() < lingerUntil && !wireHasResponse(promptId, wireFrom)) await sleep(20);
  await sleep(100);
  session.dispose();
  current = null;
  summariseWire(round, wireFrom);
  return round;
}

function findPromptId(from: number): acp.JsonRpcId | undefined {
  for (const entry of wire.slice(from)) {
    const msg = entry.msg as { id?: acp.JsonRpcId; method?: string };
    if (entry.dir === "out" && msg.method === "session/prompt") return msg.id;
  }
  return undefined;
}

function wireHasResponse(id: acp.JsonRpcId | undefined, from: number): boolean {
  return wire
    .slice(from)
    .some((e) => e.dir === "in" && !("method" in (e.msg as object)) && (e.msg as { id?: unknown }).id === id);
}

function summariseWire(round: RoundRecord, from: number): void {
  const entries = wire.slice(from);
  round.promptRequestId = findPromptId(from);
  const names = (id: unknown): string | null => {
    if (round.permission && round.permission.requestId === id) return "session/request_permission";
    if (round.terminal && round.terminal.requestId === id) return "terminal/create";
    return null;
  };
  let responseSeen = false;
  for (const entry of entries) {
    const msg = entry.msg as { id?: unknown; method?: string; params?: { requestId?: unknown } };
    if (msg.method === "$/cancel_request") {
      const item = { t: entry.t, requestId: msg.params?.requestId };
      if (entry.dir === "out") round.wire.cancelRequestsSent.push(item);
      else round.wire.cancelRequestsReceived.push({ ...item, names: names(item.requestId) });
    } else if (entry.dir === "in" && msg.method === "session/update") {
      if (responseSeen) round.wire.updatesAfterPromptResponse++;
      else round.wire.updatesBeforePromptResponse++;
    } else if (entry.dir === "in" && msg.method === undefined && msg.id === round.promptRequestId) {
      round.wire.promptResponse = { t: entry.t, message: msg };
      responseSeen = true;
    }
  }
}

// ---------------------------------------------------------------- checks

function stopReason(round: RoundRecord | undefined): unknown {
  return (round?.result as { stopReason?: unknown } | undefined)?.stopReason;
}

function orderChecks(prefix: string, round: RoundRecord | undefined): Record<string, boolean> {
  return {
    [`${prefix}updatesReceived`]: (round?.updates.length ?? 0) > 0,
    [`${prefix}updatesBeforeResponseOnWire`]: round?.wire.updatesAfterPromptResponse === 0,
    [`${prefix}updatesDeliveredBeforeSettle`]: (round?.updates ?? []).every((u) => u.deliveredBeforePromptSettled),
  };
}

function computeChecks(): Record<string, boolean> {
  const [first, second] = report.rounds;
  switch (args.scenario) {
    case "session-cancel":
      return {
        stopReasonCancelled: first?.outcome === "resolved" && stopReason(first) === "cancelled",
        permissionSignalAborted: first?.permission?.signalAbortedAt != null,
        terminalSignalAborted: first?.terminal?.signalAbortedAt != null,
        cancelRequestForPermission: (first?.wire.cancelRequestsReceived ?? []).some(
          (c) => c.names === "session/request_permission",
        ),
        cancelRequestForTerminal: (first?.wire.cancelRequestsReceived ?? []).some((c) => c.names === "terminal/create"),
        ...orderChecks("", first),
      };
    case "request-cancel":
      return {
        gracefulCancelRequestSent: (first?.wire.cancelRequestsSent ?? []).some(
          (c) => c.requestId === first?.promptRequestId,
        ),
        gracefulResolvedCancelled: first?.outcome === "resolved" && stopReason(first) === "cancelled",
        stopWaitingCancelRequestSent: (second?.wire.cancelRequestsSent ?? []).some(
          (c) => c.requestId === second?.promptRequestId,
        ),
        stopWaitingRejected32800: second?.outcome === "rejected" && second.error?.code === -32800,
        stopWaitingPeerStillAnswered: second?.wire.promptResponse != null,
        ...orderChecks("graceful.", first),
      };
    case "normal":
      return {
        stopReasonEndTurn: first?.outcome === "resolved" && stopReason(first) === "end_turn",
        permissionAnswered: first?.permission?.answer === "result",
        ...orderChecks("", first),
      };
  }
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const [command, ...commandArgs] = args.agentCommand;
  const child = spawn(command, commandArgs, { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const spawnFailed = new Promise<never>((_, reject) => child.on("error", reject));

  const stream = tapStream(nodeNdJsonStream(child.stdout, child.stdin), wire);
  try {
    await Promise.race([
      spawnFailed,
      app.connectWith(stream, async (ctx) => {
        report.initialize = await ctx.request(acp.methods.agent.initialize, {
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
          clientInfo: { name: "acprpc-interop-ts-client", version: "0.0.0" },
        });
        switch (args.scenario) {
          case "session-cancel":
            await runRound(ctx, {
              label: "session-cancel",
              text: "run the tool",
              mode: "wait-abort",
              cancellation: "session/cancel",
            });
            break;
          case "request-cancel":
            await runRound(ctx, {
              label: "graceful",
              text: "please be slow",
              mode: "answer",
              cancellation: "cancellationSignal",
              stopWaitingOnCancel: false,
            });
            await runRound(ctx, {
              label: "stop-waiting",
              text: "please be slow",
              mode: "answer",
              cancellation: "cancellationSignal",
              stopWaitingOnCancel: true,
            });
            break;
          case "normal":
            await runRound(ctx, { label: "normal", text: "hello", mode: "answer", cancellation: "none" });
            break;
        }
      }),
    ]);
  } catch (error) {
    report.error = describeError(error);
  }

  // Close the agent's stdin and give it a moment to exit by itself.
  child.stdin.end();
  const exit = await Promise.race([exited, sleep(3000).then(() => null)]);
  if (exit) {
    report.agentExit = exit;
  } else {
    child.kill("SIGTERM");
    report.agentExit = await Promise.race([
      exited,
      sleep(2000).then(() => {
        child.kill("SIGKILL");
        return exited;
      }),
    ]);
  }

  report.checks = computeChecks();
  report.pass = report.error === null && Object.values(report.checks).every(Boolean);
  emitReport(report, args.reportPath, process.stdout);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`client.ts crashed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
