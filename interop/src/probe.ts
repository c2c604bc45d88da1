// Probes of @agentclientprotocol/sdk behaviour that matters for cancellation.
// Agent-side probes drive a spawned SDK agent (probe-agent.ts) over raw JSON
// lines; client-side probes feed a ClientApp exact bytes through an in-memory
// stream. Prints one JSON line: {sdk, findings: [{id, question, observed}]}.
//
// Run from the interop directory: node --import tsx src/probe.ts

import * as acp from "@agentclientprotocol/sdk";
import { RawPeer, type RawLine } from "./rawpeer.ts";
import { describeError, sleep } from "./common.ts";

type Finding = { id: string; question: string; observed: unknown };
const findings: Finding[] = [];
const note = (id: string, question: string, observed: unknown) => findings.push({ id, question, observed });

const INIT = { protocolVersion: 1, clientCapabilities: {} };

function spawnAgent(extra: string[] = []): RawPeer {
  return new RawPeer(process.execPath, ["--import", "tsx", "src/probe-agent.ts", ...extra]);
}

async function initialized(extra: string[] = []): Promise<RawPeer> {
  const peer = spawnAgent(extra);
  peer.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: INIT });
  if (!(await peer.response("init", 10000))) throw new Error("probe agent did not initialize");
  return peer;
}

const json = (line: RawLine | undefined) => line?.json ?? null;
const sleepReq = (id: unknown, ms: number, onAbort: string) => ({
  jsonrpc: "2.0",
  id,
  method: "_probe/sleep",
  params: { ms, onAbort },
});
const cancel = (requestId: unknown) => ({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId } });

/** Sends a sleep request, cancels it after 50 ms, and reports the response and its delay. */
async function cancelDuring(peer: RawPeer, id: number, onAbort: string, ms = 400) {
  peer.send(sleepReq(id, ms, onAbort));
  await sleep(50);
  const cancelledAt = Date.now();
  peer.send(cancel(id));
  const line = await peer.response(id, ms + 2000);
  return { response: json(line), msAfterCancel: line ? Date.now() - cancelledAt : null };
}

async function agentProbes(): Promise<void> {
  // Gate before initialize.
  {
    const peer = spawnAgent();
    peer.send({ jsonrpc: "2.0", id: 1, method: "session/new", params: { cwd: "/", mcpServers: [] } });
    note("request-before-initialize", "What does an SDK agent answer to a request sent before initialize?", json(await peer.response(1, 10000)));
    peer.kill();
  }

  const peer = await initialized();

  // session/cancel with no session/cancel handler registered.
  {
    peer.send({ jsonrpc: "2.0", id: 5, method: "session/prompt", params: { sessionId: "probe_sess", prompt: [{ type: "text", text: "x" }] } });
    await sleep(30);
    const from = peer.lines.length;
    peer.send({ jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "probe_sess" } });
    const prompt = await peer.response(5, 2000);
    note("agent-session-cancel-unhandled", "Does an SDK agent abort a prompt handler's signal by itself on session/cancel (no handler registered)?", {
      promptAnsweredWith: json(prompt),
      otherLines: peer.lines.slice(from).filter((l) => l !== prompt).map((l) => l.text),
    });
  }

  // Handler behaviour after $/cancel_request.
  note(
    "handler-ignores-abort",
    "A handler ignores its aborted signal after $/cancel_request: what is sent, and when?",
    await cancelDuring(peer, 10, "ignore"),
  );
  note("handler-throwIfAborted", "Handler calls signal.throwIfAborted() after $/cancel_request", await cancelDuring(peer, 11, "throwIfAborted"));
  note("handler-abortError", "Handler's awaited timers/promises setTimeout(signal) rejects with AbortError", await cancelDuring(peer, 12, "abortError"));
  note("handler-plainError", "Handler throws a plain Error after its signal aborted", await cancelDuring(peer, 13, "plainError"));
  note("handler-partial", "Handler returns a partial result after its signal aborted", await cancelDuring(peer, 14, "partial"));

  // Cancellation spellings that must not match.
  {
    const variants: Array<[string, unknown]> = [
      ["$/cancelRequest {id}", { jsonrpc: "2.0", method: "$/cancelRequest", params: { id: 20 } }],
      ["$/cancelRequest {requestId}", { jsonrpc: "2.0", method: "$/cancelRequest", params: { requestId: 21 } }],
      ["$/cancel_request {id}", { jsonrpc: "2.0", method: "$/cancel_request", params: { id: 22 } }],
      ['$/cancel_request {requestId:"23"} for numeric id 23', cancel("23")],
      ["$/cancel_request sent as a request (with an id)", { jsonrpc: "2.0", id: "cr", method: "$/cancel_request", params: { requestId: 24 } }],
    ];
    const observed: Record<string, unknown> = {};
    for (const [index, [label, message]] of variants.entries()) {
      const id = 20 + index;
      peer.send(sleepReq(id, 250, "ignore"));
      await sleep(30);
      peer.send(message);
      observed[label] = json(await peer.response(id, 2000));
    }
    observed["reply to the request-form $/cancel_request"] = json(await peer.response("cr", 500));
    note("cancel-spellings", "Are LSP's $/cancelRequest, {id} params, a string id for a numeric one, or a request-form cancel honoured? (aborted:false = not honoured)", observed);
  }

  // Unknown / answered IDs and unknown $/ methods.
  {
    let from = peer.lines.length;
    peer.send(cancel(999));
    peer.send(sleepReq(30, 1, "partial"));
    await peer.response(30, 2000);
    from = peer.lines.length;
    peer.send(cancel(30));
    peer.send({ jsonrpc: "2.0", method: "$/unknown_notification", params: {} });
    const quiet = await peer.linesDuring(300);
    peer.send({ jsonrpc: "2.0", id: 31, method: "$/unknown_request", params: {} });
    note("unknown-ids-and-methods", "Replies to $/cancel_request for unknown/answered ids, an unknown $/ notification, an unknown $/ request", {
      linesAfterCancelOfUnknownOrAnsweredIdAndUnknownNotification: quiet.map((l) => l.text),
      unknownDollarRequest: json(await peer.response(31, 2000)),
      linesSinceCheck: peer.lines.length - from,
    });
  }

  // ID handling.
  {
    peer.send(sleepReq(null, 1, "partial"));
    const nullId = await peer.waitFor((m) => !("method" in m) && m.id === null && "result" in m, 2000);
    peer.send(sleepReq("abc", 1, "partial"));
    const stringId = await peer.response("abc", 2000);
    // Same value, different types, both in flight; cancel the number only.
    peer.send(sleepReq(40, 250, "ignore"));
    peer.send(sleepReq("40", 250, "ignore"));
    await sleep(30);
    peer.send(cancel(40));
    const numeric = await peer.response(40, 2000);
    const text = await peer.response("40", 2000);
    // The same id twice in flight.
    const from = peer.lines.length;
    peer.send(sleepReq(41, 200, "ignore"));
    peer.send(sleepReq(41, 300, "ignore"));
    await sleep(30);
    peer.send(cancel(41));
    await sleep(600);
    const dupes = peer.lines.slice(from).filter((l) => (l.json as { id?: unknown })?.id === 41).map((l) => l.json);
    note("request-ids", "How are null, string, 1-vs-\"1\" and duplicate in-flight ids treated?", {
      nullIdRequestAnsweredWith: json(nullId),
      stringIdAnsweredWith: json(stringId),
      cancelNumber40: { numeric: json(numeric), string: json(text) },
      duplicateId41BothAnswered_cancelHitsOnlyTheLatest: dupes,
    });
  }

  // Outgoing requests: ids and the SDK's own $/cancel_request.
  {
    const outgoing = async (id: number, params: Record<string, unknown>, answer: "immediately" | "after-cancel" | "late") => {
      const from = peer.lines.length;
      peer.send({ jsonrpc: "2.0", id, method: "_probe/call_peer", params: { method: "_peer/ping", params: {}, ...params } });
      const request = await peer.waitFor((m) => m.method === "_peer/ping", 2000, from);
      const requestId = (request?.json as { id?: unknown })?.id;
      if (answer === "immediately") peer.send({ jsonrpc: "2.0", id: requestId, result: { pong: true } });
      const cancelLine = await peer.waitFor((m) => m.method === "$/cancel_request", answer === "immediately" ? 400 : 2000, from);
      if (answer === "after-cancel") peer.send({ jsonrpc: "2.0", id: requestId, error: { code: -32800, message: "Request cancelled" } });
      const callResult = await peer.response(id, 2000);
      if (answer === "late") {
        await sleep(50);
        peer.send({ jsonrpc: "2.0", id: requestId, result: { pong: "late" } });
        await sleep(100);
      }
      return {
        requestLine: request?.text ?? null,
        cancelLine: cancelLine?.text ?? null,
        cancelAfterRequestMs: cancelLine && request ? Math.round(cancelLine.t - request.t) : null,
        callSettledWith: (json(callResult) as { result?: unknown })?.result ?? json(callResult),
      };
    };
    const stderrBefore = peer.stderr.length;
    note("outgoing-cancel", "What does the SDK send when a request's cancellationSignal aborts, and what does the call return?", {
      graceful_abortAfter50ms: await outgoing(50, { abortAfterMs: 50 }, "after-cancel"),
      stopWaiting_abortAfter50ms_peerAnswersLate: await outgoing(51, { abortAfterMs: 50, stopWaiting: true }, "late"),
      preAborted: await outgoing(52, { preAborted: true }, "after-cancel"),
      abortAfterAnswer: await outgoing(53, { abortAfterMs: 100 }, "immediately"),
      stderrWhileProbing: peer.stderr.slice(stderrBefore),
    });
  }

  // Responses for ids the SDK never sent.
  {
    const from = peer.lines.length;
    const stderrBefore = peer.stderr.length;
    peer.send({ jsonrpc: "2.0", id: 12345, result: {} });
    await sleep(200);
    note("unknown-response", "What happens on a response to an id the SDK never sent?", {
      linesSent: peer.lines.slice(from).map((l) => l.text),
      stderr: peer.stderr.slice(stderrBefore),
    });
  }

  // Framing: arrays, invalid JSON, scalars, CRLF.
  {
    const cases: Array<[string, string]> = [
      ["batch of one request", JSON.stringify([sleepReq(60, 1, "partial")])],
      ["empty array", "[]"],
      ["invalid JSON", "{not json"],
      ["JSON scalar", "42"],
      ["object without jsonrpc", JSON.stringify({ id: 61, method: "_probe/sleep", params: { ms: 1, onAbort: "partial" } })],
    ];
    const observed: Record<string, unknown> = {};
    for (const [label, text] of cases) {
      const from = peer.lines.length;
      peer.send(text);
      observed[label] = (await peer.linesDuring(200)).map((l) => l.json ?? l.text);
      void from;
    }
    peer.send(JSON.stringify(sleepReq(62, 1, "partial")) + "\r");
    observed["CRLF-terminated request"] = json(await peer.response(62, 2000));
    peer.send(sleepReq(63, 1, "partial"));
    observed["connection still serves requests afterwards"] = json(await peer.response(63, 2000)) !== null;
    note("framing", "Answers to a JSON array, invalid JSON, a scalar, a non-JSON-RPC object, and CRLF", observed);
  }

  peer.closeStdin();
  await peer.exited;

  // Oversized line.
  {
    const small = await initialized(["--max-bytes", "1000"]);
    const from = small.lines.length;
    small.send({ jsonrpc: "2.0", id: 70, method: "_probe/sleep", params: { ms: 1, onAbort: "partial", pad: "x".repeat(2000) } });
    const exit = await Promise.race([small.exited, sleep(2000).then(() => "still running")]);
    note("oversize", "A line longer than maxMessageBytes (set to 1000 here; default 32 MiB)", {
      linesSent: small.lines.slice(from).map((l) => l.text),
      agentExit: exit,
      stderr: small.stderr,
    });
    small.kill();
  }
}

/** A ClientApp fed exact bytes: does a session/update written just before the prompt's response reach handlers first? */
async function clientOrderingProbe(
  chunking: "one-chunk" | "separate-chunks",
  updates: number,
  asyncHandler = false,
): Promise<unknown> {
  const encoder = new TextEncoder();
  let push!: (text: string) => void;
  const input = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (text) => controller.enqueue(encoder.encode(text));
    },
  });
  const reply = (messages: unknown[]) => {
    const lines = messages.map((m) => JSON.stringify(m) + "\n");
    if (chunking === "one-chunk") push(lines.join(""));
    else for (const line of lines) push(line);
  };
  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      for (const line of new TextDecoder().decode(chunk).split("\n").filter(Boolean)) {
        const msg = JSON.parse(line) as { id?: unknown; method?: string };
        if (msg.method === "initialize") reply([{ jsonrpc: "2.0", id: msg.id, result: { protocolVersion: 1 } }]);
        if (msg.method === "session/new") reply([{ jsonrpc: "2.0", id: msg.id, result: { sessionId: "s" } }]);
        if (msg.method === "session/prompt") {
          const batch: unknown[] = [];
          for (let i = 0; i < updates; i++) {
            batch.push({
              jsonrpc: "2.0",
              method: "session/update",
              params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: `u${i}` } } },
            });
          }
          batch.push({ jsonrpc: "2.0", id: msg.id, result: { stopReason: "end_turn" } });
          reply(batch);
        }
      }
    },
  });

  const order: string[] = [];
  const app = acp.client().onNotification(acp.methods.client.session.update, async ({ params }) => {
    if (asyncHandler) await sleep(1);
    const update = params.update as { content?: { text?: string } };
    order.push(`handler:${update.content?.text}`);
  });
  const queue: string[] = [];
  await app.connectWith(acp.ndJsonStream(output, input), async (ctx) => {
    await ctx.request(acp.methods.agent.initialize, INIT);
    const session = await ctx.buildSession("/").start();
    const drained = (async () => {
      for (;;) {
        const m = await session.nextUpdate();
        if (m.kind === "stop") {
          queue.push("stop");
          return;
        }
        queue.push((m.update as { content?: { text?: string } }).content?.text ?? "?");
      }
    })();
    await session.prompt("hi").then(() => order.push("prompt-resolved"));
    await Promise.race([drained, sleep(200)]);
    await sleep(50);
    session.dispose();
  });
  return { handlerOrder: order, activeSessionQueue: queue };
}

/** A ClientApp whose permission handler waits for its signal; the client sends session/cancel. */
async function clientSessionCancelProbe(): Promise<unknown> {
  const encoder = new TextEncoder();
  let push!: (text: string) => void;
  const input = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (text) => controller.enqueue(encoder.encode(text));
    },
  });
  const sent: unknown[] = [];
  const output = new WritableStream<Uint8Array>({
    write(chunk) {
      for (const line of new TextDecoder().decode(chunk).split("\n").filter(Boolean)) sent.push(JSON.parse(line));
    },
  });
  let handlerSignal: AbortSignal | undefined;
  const app = acp.client().onRequest(acp.methods.client.session.requestPermission, async ({ signal }) => {
    handlerSignal = signal;
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    return { outcome: { outcome: "cancelled" as const } };
  });
  const connection = app.connect(acp.ndJsonStream(output, input));
  push(
    JSON.stringify({
      jsonrpc: "2.0",
      id: 0,
      method: "session/request_permission",
      params: { sessionId: "s", toolCall: { toolCallId: "call_1" }, options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }] },
    }) + "\n",
  );
  await sleep(50);
  await connection.agent.notify(acp.methods.agent.session.cancel, { sessionId: "s" });
  await sleep(300);
  const abortedAfterSessionCancel = handlerSignal?.aborted ?? null;
  push(JSON.stringify({ jsonrpc: "2.0", method: "$/cancel_request", params: { requestId: 0 } }) + "\n");
  await sleep(100);
  connection.close();
  return { handlerSignalAbortedBy300msAfterSessionCancel: abortedAfterSessionCancel, linesSentByClient: sent };
}

async function main(): Promise<void> {
  try {
    await agentProbes();
  } catch (error) {
    note("agent-probes-error", "probe failure", describeError(error));
  }
  note("client-update-order", "Updates written right before the prompt response: delivered to handlers before the prompt promise resolves?", {
    oneChunk3Updates: await clientOrderingProbe("one-chunk", 3),
    separateChunks3Updates: await clientOrderingProbe("separate-chunks", 3),
    oneChunk3Updates_handlerAwaitsFirst: await clientOrderingProbe("one-chunk", 3, true),
  });
  note(
    "client-session-cancel",
    "Does an SDK client abort its own pending session/request_permission handler when it sends session/cancel?",
    await clientSessionCancelProbe(),
  );
  process.stdout.write(JSON.stringify({ sdk: "@agentclientprotocol/sdk@2.4.0", findings }) + "\n");
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`probe.ts crashed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
