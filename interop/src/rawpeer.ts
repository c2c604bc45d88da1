// A raw newline-delimited JSON peer for probing an ACP process: it spawns a
// command, writes exact lines to its stdin and collects every line it prints
// on stdout. No SDK involved, so probes see precisely what goes over the wire.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { now } from "./common.ts";

export type RawLine = { t: number; text: string; json: unknown };

export class RawPeer {
  readonly lines: RawLine[] = [];
  readonly stderr: string[] = [];
  private readonly child: ChildProcessWithoutNullStreams;
  private waiters: Array<() => void> = [];
  readonly exited: Promise<number | null>;

  constructor(command: string, args: string[], cwd?: string) {
    this.child = spawn(command, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.child.stdout }).on("line", (text) => {
      let json: unknown = undefined;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      this.lines.push({ t: now(), text, json });
      for (const wake of this.waiters.splice(0)) wake();
    });
    createInterface({ input: this.child.stderr }).on("line", (text) => this.stderr.push(text));
    this.exited = new Promise((resolve) => this.child.on("exit", (code) => resolve(code)));
  }

  /** Writes one line: objects are JSON-encoded, strings are sent verbatim. */
  send(message: unknown): void {
    const text = typeof message === "string" ? message : JSON.stringify(message);
    this.child.stdin.write(text + "\n");
  }

  /** Waits for the first line (from index `from`) whose JSON satisfies `match`. */
  async waitFor(match: (json: any) => boolean, timeoutMs = 3000, from = 0): Promise<RawLine | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.lines.slice(from).find((line) => line.json !== undefined && match(line.json));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Waits for the response to request `id`. */
  response(id: unknown, timeoutMs = 3000): Promise<RawLine | undefined> {
    return this.waitFor((m) => m && !("method" in m) && "id" in m && m.id === id, timeoutMs);
  }

  /** Collects lines that arrive within `ms`, starting now. */
  async linesDuring(ms: number): Promise<RawLine[]> {
    const from = this.lines.length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.lines.slice(from);
  }

  closeStdin(): void {
    this.child.stdin.end();
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): void {
    this.child.kill(signal);
  }
}
