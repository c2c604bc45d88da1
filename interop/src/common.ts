// Shared helpers for the interop scripts: a monotonic clock, a wire tap that
// records every JSON-RPC message crossing an SDK stream, and error shaping for
// the JSON reports. Nothing here talks to the SDK beyond its public exports.

import { Readable, Writable } from "node:stream";
import { writeFileSync } from "node:fs";
import * as acp from "@agentclientprotocol/sdk";

const started = performance.now();

/** Milliseconds since this process started, rounded to 0.1 ms. */
export function now(): number {
  return Math.round((performance.now() - started) * 10) / 10;
}

export type WireEntry = {
  /** Position in the combined in/out log, starting at 1. */
  seq: number;
  /** Milliseconds since process start. */
  t: number;
  /** "in": read from the peer; "out": written by the SDK to the peer. */
  dir: "in" | "out";
  /** The JSON-RPC message as parsed / as serialised. */
  msg: unknown;
};

/** A shared sequence counter so that wire entries and application events can be ordered. */
let sequence = 0;
export function nextSeq(): number {
  sequence += 1;
  return sequence;
}

/**
 * Wraps an SDK stream so that every message passing through it is appended to
 * `log`. Incoming messages are logged when the SDK pulls them from the
 * transport, which is before the SDK dispatches them.
 */
export function tapStream(stream: acp.Stream, log: WireEntry[]): acp.Stream {
  const incoming = new TransformStream<acp.AnyMessage, acp.AnyMessage>({
    transform(msg, controller) {
      log.push({ seq: nextSeq(), t: now(), dir: "in", msg });
      controller.enqueue(msg);
    },
  });
  const outgoing = new TransformStream<acp.AnyMessage, acp.AnyMessage>({
    transform(msg, controller) {
      log.push({ seq: nextSeq(), t: now(), dir: "out", msg });
      controller.enqueue(msg);
    },
  });
  void stream.readable.pipeTo(incoming.writable).catch(() => {});
  void outgoing.readable.pipeTo(stream.writable).catch(() => {});
  return { readable: incoming.readable, writable: outgoing.writable };
}

/** Builds an ACP stream over a pair of Node streams (stdio of this process or of a child). */
export function nodeNdJsonStream(input: NodeJS.ReadableStream, output: NodeJS.WritableStream): acp.Stream {
  const webOut = Writable.toWeb(output as Writable) as WritableStream<Uint8Array>;
  const webIn = Readable.toWeb(input as Readable) as unknown as ReadableStream<Uint8Array>;
  return acp.ndJsonStream(webOut, webIn);
}

export type ErrorReport = {
  name: string;
  message: string;
  code?: number;
  data?: unknown;
};

/** Turns anything thrown into a JSON-friendly description, keeping JSON-RPC codes. */
export function describeError(error: unknown): ErrorReport {
  if (error instanceof acp.RequestError) {
    return { name: "RequestError", code: error.code, message: error.message, data: jsonSafe(error.data) };
  }
  if (error instanceof Error) {
    const withCode = error as Error & { code?: unknown };
    return {
      name: error.name,
      message: error.message,
      ...(typeof withCode.code === "number" ? { code: withCode.code } : {}),
    };
  }
  return { name: typeof error, message: String(error) };
}

/** Makes a value safe for JSON.stringify (errors become descriptions). */
export function jsonSafe(value: unknown): unknown {
  if (value instanceof Error) {
    return describeError(value);
  }
  return value;
}

/** Resolves when `signal` aborts, with its reason. */
export function abortedPromise(signal: AbortSignal): Promise<unknown> {
  if (signal.aborted) {
    return Promise.resolve(signal.reason);
  }
  return new Promise((resolve) => {
    signal.addEventListener("abort", () => resolve(signal.reason), { once: true });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Writes a one-line JSON report to a file, or to the given Node stream. */
export function emitReport(report: unknown, path: string | undefined, fallback: NodeJS.WritableStream): void {
  const line = JSON.stringify(report) + "\n";
  if (path) {
    writeFileSync(path, line);
  } else {
    fallback.write(line);
  }
}

/** The text of all text blocks of a prompt, joined by newlines. */
export function promptText(prompt: ReadonlyArray<{ type: string; text?: string }>): string {
  return prompt
    .filter((block) => block.type === "text" && typeof block.text === "string")
    .map((block) => block.text as string)
    .join("\n");
}

/** True when `text` contains `word` as a whole word, case-insensitively. */
export function hasWord(text: string, word: string): boolean {
  return new RegExp(`\\b${word}\\b`, "i").test(text);
}

/**
 * The command line every scenario client takes:
 * `--scenario NAME [--timeout MS] [--report PATH] [--] AGENT_COMMAND...`.
 * A bad one prints the usage and exits with status 2.
 */
export function parseScenarioCommandLine<S extends string>(script: string, scenarios: readonly S[], argv: string[]) {
  let scenario: string | undefined;
  let timeoutMs = 20000;
  let reportPath: string | undefined;
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      i++;
      break;
    }
    if (arg === "--scenario") scenario = argv[++i];
    else if (arg.startsWith("--scenario=")) scenario = arg.slice("--scenario=".length);
    else if (arg === "--timeout") timeoutMs = Number(argv[++i]);
    else if (arg === "--report") reportPath = argv[++i];
    else break;
  }
  const agentCommand = argv.slice(i);
  if (!scenario || !scenarios.includes(scenario as S) || agentCommand.length === 0 || !(timeoutMs > 0)) {
    process.stderr.write(
      `usage: ${script} --scenario ${scenarios.join("|")} [--timeout MS] [--report PATH] [--] AGENT_COMMAND...\n`,
    );
    process.exit(2);
  }
  return { scenario: scenario as S, timeoutMs, reportPath, agentCommand };
}
