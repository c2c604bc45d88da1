// Agent side of the benchmark workload, served with the TypeScript ACP SDK
// over stdio. Same behaviour as the Go peers' agents (see ../workload.go):
// "block" waits for cancellation and answers {"stopReason":"cancelled"},
// "flood N" sends N session/update notifications first, anything else
// answers {"stopReason":"end_turn"}. Stamps "B <ns>" / "C <ns>" go to stderr
// on CLOCK_MONOTONIC when a blocking prompt starts and sees its cancel.
import * as acp from "@agentclientprotocol/sdk";
import { Readable, Writable } from "node:stream";

const stamp = (tag) => process.stderr.write(`${tag} ${process.hrtime.bigint()}\n`);

const app = acp.agent({ name: "bench" }).onRequest(
  acp.methods.agent.session.prompt,
  async ({ params, signal, client }) => {
    const text = params.prompt[0]?.type === "text" ? params.prompt[0].text : "";
    if (text === "block") {
      stamp("B");
      await new Promise((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener("abort", resolve, { once: true });
      });
      stamp("C");
      return { stopReason: "cancelled" };
    }
    if (text.startsWith("flood ")) {
      const n = Number(text.slice("flood ".length));
      for (let i = 0; i < n; i++) {
        await client.notify(acp.methods.client.session.update, {
          sessionId: params.sessionId,
          update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } },
        });
      }
    }
    return { stopReason: "end_turn" };
  },
);

const conn = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await conn.closed;
process.exit(0);
