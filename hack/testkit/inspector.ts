/**
 * The live heap of a Node process started with `--inspect=127.0.0.1:<port>`, read through its inspector: a full
 * collection, then the heap's used size. A heap figure from /metrics counts garbage no collection has freed yet, and
 * when the next collection comes depends on how busy the machine is; this one counts only what the process holds.
 */

interface InspectorReply {
  id?: number;
  result?: Record<string, unknown>;
  error?: { message?: string };
}

/** The bytes the heap holds after a full collection, of the process whose inspector listens on `port` of loopback. */
export async function liveHeapBytes(port: number, timeoutMs = 30_000): Promise<number> {
  const signal = AbortSignal.timeout(timeoutMs);
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`, { signal })).json()) as {
    webSocketDebuggerUrl?: string;
  }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${port}`);
  const socket = new WebSocket(url);
  const replies = new Map<number, (reply: InspectorReply) => void>();
  const failed = new Promise<never>((_, reject) => {
    socket.addEventListener("error", () => reject(new Error(`inspector on port ${port} failed`)));
    signal.addEventListener("abort", () => reject(new Error(`inspector on port ${port} did not answer`)));
  });
  // Once the answer is in, a later abort or error has no one waiting for it.
  failed.catch(() => undefined);
  socket.addEventListener("message", (event) => {
    const reply = JSON.parse(String(event.data)) as InspectorReply;
    if (reply.id !== undefined) replies.get(reply.id)?.(reply);
  });
  let next = 0;
  const call = async (method: string): Promise<Record<string, unknown>> => {
    const id = ++next;
    const answered = new Promise<InspectorReply>((resolve) => replies.set(id, resolve));
    socket.send(JSON.stringify({ id, method }));
    const reply = await Promise.race([answered, failed]);
    if (reply.error) throw new Error(`${method}: ${reply.error.message ?? "failed"}`);
    return reply.result ?? {};
  };
  try {
    await Promise.race([new Promise((resolve) => socket.addEventListener("open", resolve)), failed]);
    await call("HeapProfiler.collectGarbage");
    const usage = await call("Runtime.getHeapUsage");
    if (typeof usage.usedSize !== "number") throw new Error("Runtime.getHeapUsage: no usedSize");
    return usage.usedSize;
  } finally {
    socket.close();
  }
}
