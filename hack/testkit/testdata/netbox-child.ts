/**
 * A test run that dies without cleaning up: starts a NetBox, prints its folder and the pids of everything it runs
 * (PostgreSQL, Redis, gunicorn and its workers) as one JSON line, then waits to be killed. netbox.test.ts SIGKILLs it.
 */
import { NetBoxServer } from "../netbox.js";
import { processesMentioning } from "../reaper.js";

const server = await NetBoxServer.start();
process.stdout.write(`${JSON.stringify({ dir: server.dir, pids: processesMentioning(server.dir) })}\n`);
setInterval(() => undefined, 1 << 30);
