/** Loopback ports: pick a free one, or prove a chosen one is free before a child process tries to bind it. */
import { createServer, type Server } from "node:net";

/** Resolves when 127.0.0.1:`port` can be bound (0 picks one); rejects with a clear message when it is taken. */
export async function claimPort(port = 0): Promise<number> {
  const [chosen] = await claimPorts([port]);
  return chosen ?? port;
}

/**
 * {@link claimPort} for several ports at once, all different: each stays bound until every one is chosen, so the
 * kernel cannot hand a port it just freed out twice (two picks in a row may otherwise get the same port).
 */
export async function claimPorts(ports: readonly number[]): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const chosen: number[] = [];
    for (const port of ports) {
      const server = await bound(port);
      servers.push(server);
      const address = server.address();
      chosen.push(typeof address === "object" && address ? address.port : port);
    }
    return chosen;
  } finally {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }
}

/** A server listening on 127.0.0.1:`port` (0 picks one); rejects with a clear message when the port is taken. */
async function bound(port: number): Promise<Server> {
  return await new Promise<Server>((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (err: NodeJS.ErrnoException) => {
      reject(
        new Error(
          err.code === "EADDRINUSE"
            ? `port 127.0.0.1:${port} is already in use; choose another port or stop what holds it`
            : `cannot bind 127.0.0.1:${port}: ${err.message}`,
        ),
      );
    });
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}
