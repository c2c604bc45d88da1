// A TypeScript ACP client built on @agentclientprotocol/sdk that connects to
// an agent serving ACP remotely, with the SDK's experimental transports
// (`experimental/ws-client` for ws:// URLs, `experimental/http-client` for
// http:// URLs), and drives one cancellation scenario against it.
//
// Run from the interop directory (after `npm ci`):
//
//   node --import tsx src/remote-client.ts --url URL --scenario NAME [--timeout MS]
//
// NAME is one of:
//   session-cancel  a prompt whose permission and terminal requests wait for
//                   their abort signals; once both have arrived the client
//                   sends session/cancel. Expect both signals to fire (the
//                   agent's $/cancel_request) and stopReason "cancelled".
//   request-cancel  the same prompt, cancelled instead with the SDK's
//                   per-request cancellationSignal ($/cancel_request on the
//                   prompt). Expect the same cascade and stopReason
//                   "cancelled".
//
// One JSON report line is printed on stdout. The exit status is 0 whenever
// the scenario ran; `checks` and `pass` summarise what it observed.

import { parseArgs } from "node:util";
import WebSocket from "ws";
import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream, type WebSocketConstructor } from "@agentclientprotocol/sdk/experimental/ws-client";
import { abortedPromise, describeError, emitReport, now, sleep, tapStream, type ErrorReport, type WireEntry } from "./common.ts";

const { values: opts } = parseArgs({
  options: {
    url: { type: "string" },
    scenario: { type: "string" },
    timeout: { type: "string", default: "20000" },
  },
  strict: true,
});
const scenarios = ["session-cancel", "request-cancel"] as const;
type Scenario = (typeof scenarios)[number];
if (!opts.url || !scenarios.includes(opts.scenario as Scenario)) {
  process.stderr.write(`usage: remote-client.ts --url ws://…|http://… --scenario ${scenarios.join("|")} [--timeout MS]\n`);
  process.exit(2);
}
const url = opts.url;
const scenario = opts.scenario as Scenario;
const timeoutMs = Number(opts.timeout);
const transport = url.startsWith("ws") ? "websocket" : "streamable-http";

type HandlerRecord = { requestId: acp.JsonRpcId; receivedAt: number; signalAbortedAt: number | null };

const wire: WireEntry[] = [];
const report = {
  role: "ts-remote-client",
  sdk: "@agentclientprotocol/sdk@2.4.0",
  transport,
  url,
  scenario,
  initialize: null as unknown,
  sessionId: null as string | null,
  permission: null as HandlerRecord | null,
  terminal: null as HandlerRecord | null,
  cancelledAt: null as number | null,
  outcome: null as "resolved" | "rejected" | "timeout" | null,
  result: null as unknown,
  updates: [] as Array<{ t: number; text?: string; beforeSettled: boolean }>,
  cancelRequestsReceived: [] as Array<{ requestId: unknown; names: string | null }>,
  checks: {} as Record<string, boolean>,
  pass: false,
  error: null as ErrorReport | null,
  wire,
};

let settled = false;
let bothArrived!: () => void;
const both = new Promise<void>((resolve) => (bothArrived = resolve));
const arrived = () => {
  if (report.permission && report.terminal) bothArrived();
};
const record = (requestId: acp.JsonRpcId, signal: AbortSignal): HandlerRecord => {
  const r: HandlerRecord = { requestId, receivedAt: now(), signalAbortedAt: null };
  void abortedPromise(signal).then(() => (r.signalAbortedAt = now()));
  return r;
};

const app = acp
  .client({ name: "acprpc-interop-ts-remote-client" })
  .onRequest(acp.methods.client.session.requestPermission, async ({ signal, requestId }) => {
    report.permission = record(requestId, signal);
    arrived();
    await abortedPromise(signal);
    return { outcome: { outcome: "cancelled" as const } }; // the client's duty once the turn is cancelled
  })
  .onRequest(acp.methods.client.terminal.create, async ({ signal, requestId }) => {
    report.terminal = record(requestId, signal);
    arrived();
    throw await abortedPromise(signal); // the signal's reason is -32800
  })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const update = params.update as { content?: { type: string; text?: string } };
    report.updates.push({ t: now(), text: update.content?.text, beforeSettled: !settled });
  });

function openStream(): acp.Stream {
  if (transport === "websocket") {
    return createWebSocketStream(url, { WebSocket: WebSocket as unknown as WebSocketConstructor });
  }
  return createHttpStream(url);
}

async function run(ctx: acp.ClientContext): Promise<void> {
  report.initialize = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: 1,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: true },
    clientInfo: { name: "acprpc-interop-ts-remote-client", version: "0.0.0" },
  });
  const session = await ctx.buildSession(process.cwd()).start();
  report.sessionId = session.sessionId;
  const controller = new AbortController();
  const options: acp.SendRequestOptions = scenario === "request-cancel" ? { cancellationSignal: controller.signal } : {};
  const prompt = session.prompt("slow: analyze file X", options).then(
    (result) => {
      report.outcome = "resolved";
      report.result = result;
    },
    (error: unknown) => {
      report.outcome = "rejected";
      report.error = describeError(error);
    },
  );
  void prompt.finally(() => (settled = true));
  const deadline = sleep(timeoutMs).then(() => "timeout" as const);
  if ((await Promise.race([both, deadline])) !== "timeout") {
    report.cancelledAt = now();
    if (scenario === "session-cancel") {
      await ctx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
    } else {
      controller.abort();
    }
  }
  if ((await Promise.race([prompt, deadline])) === "timeout") {
    report.outcome ??= "timeout";
  }
  session.dispose();
}

function computeChecks(): Record<string, boolean> {
  const names = (id: unknown) =>
    id === report.permission?.requestId ? "session/request_permission" : id === report.terminal?.requestId ? "terminal/create" : null;
  for (const entry of wire) {
    const msg = entry.msg as { method?: string; params?: { requestId?: unknown } };
    if (entry.dir === "in" && msg.method === "$/cancel_request") {
      report.cancelRequestsReceived.push({ requestId: msg.params?.requestId, names: names(msg.params?.requestId) });
    }
  }
  const stopReason = (report.result as { stopReason?: unknown } | null)?.stopReason;
  return {
    stopReasonCancelled: report.outcome === "resolved" && stopReason === "cancelled",
    permissionSignalAborted: report.permission?.signalAbortedAt != null,
    terminalSignalAborted: report.terminal?.signalAbortedAt != null,
    cancelRequestForTerminal: report.cancelRequestsReceived.some((c) => c.names === "terminal/create"),
    updatesReceived: report.updates.length > 0,
    updatesBeforeAnswer: report.updates.every((u) => u.beforeSettled),
  };
}

async function main(): Promise<void> {
  try {
    await app.connectWith(tapStream(openStream(), wire), run);
  } catch (error) {
    report.error ??= describeError(error);
  }
  report.checks = computeChecks();
  report.pass = report.error === null && Object.values(report.checks).every(Boolean);
  emitReport(report, undefined, process.stdout);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`remote-client.ts crashed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
