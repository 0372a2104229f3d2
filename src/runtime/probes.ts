/** `/healthz` and `/readyz` for kubelet probes, over plain HTTP (`/metrics` is diagnostics.ts's). */
import type { Server } from "node:http";

// Not an ES import of node:http: that loads Node's bundled undici (see src/kube/transport.ts).
const { createServer } = process.getBuiltinModule("node:http");

export interface ProbeOptions {
  /** `host:port` or `:port`. */
  address: string;
  /** Named readiness checks; /readyz is 200 only when all pass, and lists the failing ones otherwise. */
  readiness?: Record<string, () => boolean>;
}

export function parseAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(":");
  const host = i > 0 ? address.slice(0, i) : "0.0.0.0";
  const port = Number(i >= 0 ? address.slice(i + 1) : address);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid bind address "${address}"`);
  return { host, port };
}

/** Starts a server for `/healthz` and `/readyz`; resolves once listening, with the bound port. */
export async function startProbeServer(
  options: ProbeOptions,
): Promise<{ server: Server; port: number; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      res.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
    } else if (path === "/readyz") {
      const failing = Object.entries(options.readiness ?? {})
        .filter(([, check]) => !check())
        .map(([name]) => name);
      res
        .writeHead(failing.length === 0 ? 200 : 503, { "Content-Type": "text/plain" })
        .end(failing.length === 0 ? "ok" : `not ready: ${failing.join(", ")}`);
    } else {
      res.writeHead(404).end("not found");
    }
  });
  const { host, port } = parseAddress(options.address);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = server.address();
  return {
    server,
    port: typeof bound === "object" && bound ? bound.port : port,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
