// A TypeScript ACP v2 client built on @agentclientprotocol/sdk/experimental/v2
// that spawns an ACP agent and drives one v2 scenario against it.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/v2-client.ts --scenario NAME [--timeout MS] [--report PATH] [--] AGENT_COMMAND...
//
// NAME is one of:
//   normal          a prompt without "slow"; the permission request and
//                   terminal/create are answered at once; expect the prompt
//                   answered with a messageId and the work to end with one
//                   idle state_update, stopReason end_turn.
//   session-cancel  a "slow" prompt; the permission and terminal handlers wait
//                   for their abort signals; once the prompt is answered and
//                   both requests have arrived, the client sends
//                   session/cancel. Expect the agent's $/cancel_request for
//                   both (the signals fire), then exactly one idle
//                   state_update with stopReason cancelled, after every other
//                   update and followed by none.
//   permission-cancel  session-cancel for an agent that sends no
//                   terminal/create (v2 has none): session/cancel once the
//                   prompt is answered and the permission request has
//                   arrived; expect the agent's $/cancel_request for it, then
//                   exactly one idle state_update, cancelled.
//   request-cancel  a "slow" prompt whose requests are answered at once keeps
//                   the session working; a second prompt, sent with a
//                   cancellationSignal, is held behind the work and withdrawn
//                   by aborting the signal ($/cancel_request): expect -32800.
//                   A third prompt is held too, then session/cancel: expect
//                   -32800 for it and one idle state_update, cancelled.
//
// The client serves terminal/create, which is not a v2 method, because the
// demo's v2 scenario still sends it as its second nested request. The
// agent's stdin/stdout carry ACP; its stderr is passed through to ours. One
// JSON report line goes to stdout (or --report PATH). The exit status is 0
// whenever the scenario ran; `checks` and `pass` say what it observed. Every
// message on the wire is also checked against the SDK's v2 validators.

import { spawn } from "node:child_process";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
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
import { checkWire, type SchemaReport } from "./schema-check.ts";

// ---------------------------------------------------------------- arguments

type Scenario = "normal" | "session-cancel" | "permission-cancel" | "request-cancel";
const scenarios: Scenario[] = ["normal", "session-cancel", "permission-cancel", "request-cancel"];

const args = parseScenarioCommandLine("v2-client.ts", scenarios, process.argv.slice(2));

// ---------------------------------------------------------------- report

type HandlerRecord = {
  method: string;
  requestId: acp.JsonRpcId;
  receivedAt: number;
  signalAbortedAt: number | null;
  signalReason: unknown;
  answer: "result" | "error" | null;
  answeredAt: number | null;
  result?: unknown;
  error?: ErrorReport;
};

type UpdateRecord = {
  seq: number;
  t: number;
  sessionUpdate: string;
  state?: string;
  stopReason?: string | null;
  messageId?: string;
};

type PromptRecord = {
  label: string;
  text: string;
  withSignal: boolean;
  sentAt: number;
  outcome: "resolved" | "rejected" | "pending";
  settledAt: number | null;
  result?: unknown;
  error?: ErrorReport;
  /** JSON-RPC id of the session/prompt request, read from the wire. */
  requestId?: acp.JsonRpcId;
};

const wire: WireEntry[] = [];
const report = {
  role: "ts-v2-client",
  sdk: "@agentclientprotocol/sdk@2.4.0",
  scenario: args.scenario,
  agentCommand: args.agentCommand,
  initialize: null as unknown,
  sessionId: null as string | null,
  prompts: [] as PromptRecord[],
  handlers: [] as HandlerRecord[],
  updates: [] as UpdateRecord[],
  sessionCancelSentAt: null as number | null,
  otherRequests: [] as Array<{ t: number; method: string }>,
  checks: {} as Record<string, boolean>,
  pass: false,
  schema: null as SchemaReport | null,
  agentExit: null as null | { code: number | null; signal: string | null },
  error: null as ErrorReport | null,
  wire,
};

// ---------------------------------------------------------------- handlers

/** "wait-abort": the handlers wait for their request to be cancelled; "answer": they answer at once. */
let mode: "wait-abort" | "answer" = "answer";
const arrivals = new Set<() => void>();

function arrived(method: string, requestId: acp.JsonRpcId, signal: AbortSignal): HandlerRecord {
  const record: HandlerRecord = {
    method,
    requestId,
    receivedAt: now(),
    signalAbortedAt: null,
    signalReason: null,
    answer: null,
    answeredAt: null,
  };
  report.handlers.push(record);
  void abortedPromise(signal).then((reason) => {
    record.signalAbortedAt = now();
    record.signalReason = jsonSafe(reason);
  });
  for (const wake of arrivals) wake();
  return record;
}

function answered<T>(record: HandlerRecord, value: T): T {
  record.answer = "result";
  record.answeredAt = now();
  record.result = value;
  for (const wake of arrivals) wake();
  return value;
}

function failed(record: HandlerRecord, error: unknown): never {
  record.answer = "error";
  record.answeredAt = now();
  record.error = describeError(error);
  for (const wake of arrivals) wake();
  throw error;
}

/** Resolves once `ready` holds, checked whenever a handler record changes. */
function until(ready: () => boolean): Promise<void> {
  if (ready()) return Promise.resolve();
  return new Promise((resolve) => {
    const wake = () => {
      if (ready()) {
        arrivals.delete(wake);
        resolve();
      }
    };
    arrivals.add(wake);
  });
}

type CreateTerminalParams = { sessionId: string; command: string; args?: string[] };
const parseCreateTerminal = (params: unknown): CreateTerminalParams => {
  const p = params as Partial<CreateTerminalParams> | null;
  if (!p || typeof p.sessionId !== "string" || typeof p.command !== "string") {
    throw acp.RequestError.invalidParams(params, "terminal/create needs sessionId and command");
  }
  return p as CreateTerminalParams;
};

const app = acp
  .client({ name: "acprpc-interop-ts-v2-client" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, signal, requestId }) => {
    const record = arrived("session/request_permission", requestId, signal);
    if (mode === "wait-abort") {
      await abortedPromise(signal);
      return answered(record, { outcome: { outcome: "cancelled" as const } });
    }
    const allow = params.options.find((o) => o.kind.startsWith("allow")) ?? params.options[0];
    return answered(record, { outcome: { outcome: "selected" as const, optionId: allow.optionId } });
  })
  .onRequest("terminal/create", parseCreateTerminal, async ({ signal, requestId }) => {
    const record = arrived("terminal/create", requestId, signal);
    if (mode === "wait-abort") {
      return failed(record, await abortedPromise(signal));
    }
    return answered(record, { terminalId: "term_1" });
  })
  .onRequest("*", ({ method }) => {
    report.otherRequests.push({ t: now(), method });
    throw acp.RequestError.methodNotFound(method);
  });

// ---------------------------------------------------------------- scenario steps

function recordUpdate(message: acp.ActiveSessionMessage): UpdateRecord {
  const u = message.update as { sessionUpdate: string; state?: string; stopReason?: string | null; messageId?: string };
  const record: UpdateRecord = { seq: nextSeq(), t: now(), sessionUpdate: u.sessionUpdate };
  if (u.state !== undefined) record.state = u.state;
  if (u.stopReason !== undefined) record.stopReason = u.stopReason;
  if (u.messageId !== undefined) record.messageId = u.messageId;
  report.updates.push(record);
  for (const wake of arrivals) wake();
  return record;
}

function sendPrompt(session: acp.ActiveSession, label: string, text: string, signal?: AbortSignal): Promise<void> {
  const record: PromptRecord = { label, text, withSignal: signal !== undefined, sentAt: now(), outcome: "pending", settledAt: null };
  report.prompts.push(record);
  return session.prompt(text, signal ? { cancellationSignal: signal } : undefined).then(
    (result) => {
      record.outcome = "resolved";
      record.settledAt = now();
      record.result = result;
      for (const wake of arrivals) wake();
    },
    (error: unknown) => {
      record.outcome = "rejected";
      record.settledAt = now();
      record.error = describeError(error);
      for (const wake of arrivals) wake();
    },
  );
}

const idles = () => report.updates.filter((u) => u.sessionUpdate === "state_update" && u.state === "idle");
const handler = (method: string) => report.handlers.find((h) => h.method === method);

async function scenario(ctx: acp.ClientContext): Promise<void> {
  report.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "acprpc-interop-ts-v2-client", version: "0.0.0" },
    capabilities: {},
  });
  const session = await ctx.buildSession(process.cwd()).start();
  report.sessionId = session.sessionId;
  let reading = true;
  const drained = (async () => {
    while (reading) {
      const controller = new AbortController();
      const stop = sleep(50).then(() => controller.abort());
      try {
        recordUpdate(await session.nextUpdate(controller.signal));
      } catch {
        // the read was aborted: look at `reading` again
      }
      void stop;
    }
  })();

  switch (args.scenario) {
    case "normal":
      mode = "answer";
      await sendPrompt(session, "normal", "hello");
      await until(() => idles().length > 0);
      break;
    case "session-cancel":
    case "permission-cancel": {
      mode = "wait-abort";
      const prompt = sendPrompt(session, "slow", "slow: analyze file X");
      await prompt;
      const awaited = args.scenario === "session-cancel" ? ["session/request_permission", "terminal/create"] : ["session/request_permission"];
      await until(() => awaited.every((m) => handler(m) !== undefined));
      report.sessionCancelSentAt = now();
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      await until(() => idles().length > 0);
      break;
    }
    case "request-cancel": {
      mode = "answer";
      await sendPrompt(session, "working", "slow: analyze file X");
      await until(() => ["session/request_permission", "terminal/create"].every((m) => handler(m)?.answer != null));
      // A prompt sent while the session works is held: withdraw it.
      const controller = new AbortController();
      const withdrawn = sendPrompt(session, "withdrawn", "and then this", controller.signal);
      await sleep(300);
      controller.abort();
      await withdrawn;
      // Another held prompt, then session/cancel for the whole session.
      const held = sendPrompt(session, "held", "and this too");
      await sleep(300);
      report.sessionCancelSentAt = now();
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      await held;
      await until(() => idles().length > 0);
      break;
    }
  }
  // Linger: anything that still comes for the session is recorded, and must not be an update.
  await sleep(500);
  reading = false;
  await drained;
  session.dispose();
}

// ---------------------------------------------------------------- checks

function promptIds(): void {
  const ids = wire
    .filter((e) => e.dir === "out" && (e.msg as { method?: string }).method === "session/prompt")
    .map((e) => (e.msg as { id: acp.JsonRpcId }).id);
  report.prompts.forEach((p, i) => (p.requestId = ids[i]));
}

function responsesTo(id: acp.JsonRpcId | undefined): Array<{ result?: unknown; error?: { code: number } }> {
  return wire
    .filter((e) => e.dir === "in" && !("method" in (e.msg as object)) && (e.msg as { id?: unknown }).id === id)
    .map((e) => e.msg as { result?: unknown; error?: { code: number } });
}

function cancelsIn(): unknown[] {
  return wire
    .filter((e) => e.dir === "in" && (e.msg as { method?: string }).method === "$/cancel_request")
    .map((e) => (e.msg as { params: { requestId: unknown } }).params.requestId);
}

function cancelsOut(): unknown[] {
  return wire
    .filter((e) => e.dir === "out" && (e.msg as { method?: string }).method === "$/cancel_request")
    .map((e) => (e.msg as { params: { requestId: unknown } }).params.requestId);
}

function messageIdOf(p: PromptRecord | undefined): string | undefined {
  const id = (p?.result as { messageId?: unknown } | undefined)?.messageId;
  return typeof id === "string" ? id : undefined;
}

/** The checks every scenario shares: one idle, last, with the given stop reason; valid messages. */
function endingChecks(stopReason: string): Record<string, boolean> {
  const all = idles();
  const last = report.updates[report.updates.length - 1];
  return {
    exactlyOneIdle: all.length === 1,
    idleStopReason: all[0]?.stopReason === stopReason,
    idleIsLastUpdate: last !== undefined && last === all[0],
    runningFirst: report.updates[0]?.sessionUpdate === "state_update" && report.updates[0]?.state === "running",
    agentChunksCarryMessageIds: report.updates
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .every((u) => typeof u.messageId === "string"),
    // The inserted prompt is echoed as a user message (whole, or in chunks) with its messageId.
    userMessageEchoed: report.updates.some(
      (u) =>
        (u.sessionUpdate === "user_message" || u.sessionUpdate === "user_message_chunk") &&
        u.messageId === messageIdOf(report.prompts[0]),
    ),
    schemaValid: (report.schema?.failures.length ?? 1) === 0,
    noOtherRequests: report.otherRequests.length === 0,
  };
}

function computeChecks(): Record<string, boolean> {
  promptIds();
  const [first, second, third] = report.prompts;
  const perm = handler("session/request_permission");
  const term = handler("terminal/create");
  const oneAnswer = (p: PromptRecord | undefined) => p !== undefined && responsesTo(p.requestId).length === 1;
  switch (args.scenario) {
    case "normal":
      return {
        promptAnsweredWithMessageId: first?.outcome === "resolved" && messageIdOf(first) !== undefined,
        promptAnsweredOnce: oneAnswer(first),
        permissionAnswered: perm?.answer === "result" && perm.signalAbortedAt === null,
        terminalAnswered: term?.answer === "result" && term.signalAbortedAt === null,
        noCancels: cancelsIn().length === 0 && cancelsOut().length === 0,
        ...endingChecks("end_turn"),
      };
    case "session-cancel": {
      const sentAt = report.sessionCancelSentAt ?? Infinity;
      const idleAt = idles()[0]?.t ?? -Infinity;
      const abortedByCancel = (h: HandlerRecord | undefined) =>
        h !== undefined && h.signalAbortedAt !== null && (h.signalReason as { code?: number } | null)?.code === -32800;
      return {
        promptAnsweredBeforeItsWork: first?.outcome === "resolved" && messageIdOf(first) !== undefined && (first.settledAt ?? Infinity) < sentAt,
        promptAnsweredOnce: oneAnswer(first),
        permissionCancelledByItsId: abortedByCancel(perm) && cancelsIn().includes(perm?.requestId),
        terminalCancelledByItsId: abortedByCancel(term) && cancelsIn().includes(term?.requestId),
        oneCancelPerRequest: cancelsIn().length === 2,
        permissionAnsweredCancelled: (perm?.result as { outcome?: { outcome?: string } } | undefined)?.outcome?.outcome === "cancelled",
        terminalAnswered32800: term?.error?.code === -32800,
        idleAfterBothAnswers: (perm?.answeredAt ?? Infinity) < idleAt && (term?.answeredAt ?? Infinity) < idleAt,
        ...endingChecks("cancelled"),
      };
    }
    case "permission-cancel": {
      const sentAt = report.sessionCancelSentAt ?? Infinity;
      const idleAt = idles()[0]?.t ?? -Infinity;
      return {
        promptAnsweredBeforeItsWork: first?.outcome === "resolved" && messageIdOf(first) !== undefined && (first.settledAt ?? Infinity) < sentAt,
        promptAnsweredOnce: oneAnswer(first),
        permissionCancelledByItsId: perm?.signalAbortedAt != null && cancelsIn().includes(perm?.requestId),
        permissionAnsweredCancelled: (perm?.result as { outcome?: { outcome?: string } } | undefined)?.outcome?.outcome === "cancelled",
        idleAfterTheAnswer: (perm?.answeredAt ?? Infinity) < idleAt,
        ...endingChecks("cancelled"),
      };
    }
    case "request-cancel":
      return {
        firstInserted: first?.outcome === "resolved" && messageIdOf(first) !== undefined,
        withdrawnSentCancel: cancelsOut().length === 1 && cancelsOut()[0] === second?.requestId,
        withdrawnRejected32800: second?.outcome === "rejected" && second.error?.code === -32800,
        withdrawnAnsweredOnce: oneAnswer(second),
        heldRejected32800OnSessionCancel:
          third?.outcome === "rejected" && third.error?.code === -32800 && (third.settledAt ?? 0) > (report.sessionCancelSentAt ?? Infinity),
        heldAnsweredOnce: oneAnswer(third),
        noIdleBeforeSessionCancel: idles().every((u) => u.t > (report.sessionCancelSentAt ?? Infinity)),
        ...endingChecks("cancelled"),
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
  const deadline = sleep(args.timeoutMs).then(() => {
    throw new Error(`the scenario did not finish within ${args.timeoutMs} ms`);
  });
  try {
    await Promise.race([spawnFailed, deadline, app.connectWith(stream, scenario)]);
  } catch (error) {
    report.error = describeError(error);
  }

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
  report.schema = checkWire(2, wire);
  report.checks = computeChecks();
  report.pass = report.error === null && Object.values(report.checks).every(Boolean);
  emitReport(report, args.reportPath, process.stdout);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`v2-client.ts crashed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
