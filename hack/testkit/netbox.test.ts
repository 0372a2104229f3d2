/**
 * The test NetBox's own life cycle: `stop` leaves no process and no file, and a run killed with SIGKILL is reaped by
 * the next start, gunicorn's forked workers included. Each test starts a NetBox of its own (15-50 s on a busy
 * 2-core machine); the behaviour of NetBox itself is e2e/netbox-client.test.ts's.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "chai";
import { NETBOX_DIR_PREFIX, startNetBox } from "./netbox.js";
import { ensureNetBoxInstalled, NETBOX_TOOL } from "./netboxinstall.js";
import { processAlive, processesMentioning, reapOrphanedPlanes } from "./reaper.js";
import { skipWithout } from "./skips.js";
import { eventually } from "./wait.js";

const child = join(dirname(fileURLToPath(import.meta.url)), "testdata", "netbox-child.ts");

describe("the test NetBox", function () {
  this.timeout(300_000);
  before(async function () {
    skipWithout(this, NETBOX_TOOL);
    // The first run on a machine installs NetBox here (hack/ runs before e2e/): minutes, once.
    this.timeout(20 * 60_000);
    await ensureNetBoxInstalled();
  });

  it("answers with its token, and leaves no process and no file once stopped", async () => {
    const nb = await startNetBox();
    // The admin's request rejects unless NetBox answers 2xx on the run's token.
    const status = (await nb.admin.request("GET", "/api/status/")) as { "netbox-version": string };
    expect(status["netbox-version"]).to.match(/^4\.7\.3/);
    const pids = processesMentioning(nb.dir);
    expect(pids.length).to.be.at.least(4); // postgres, redis, the gunicorn master and its workers
    await nb.stop();
    expect(processesMentioning(nb.dir)).to.deep.equal([]);
    expect(existsSync(nb.dir)).to.equal(false);
  });

  it("is reaped by the next start when its run was killed with SIGKILL", async () => {
    const proc = spawn(process.execPath, ["--import", "tsx", child], { stdio: ["ignore", "pipe", "inherit"] });
    const started = await new Promise<{ dir: string; pids: number[] }>((resolve, reject) => {
      let out = "";
      proc.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) resolve(JSON.parse(out.split("\n")[0] ?? "") as { dir: string; pids: number[] });
      });
      proc.once("exit", (code) => reject(new Error(`the child exited (${code}) before starting NetBox`)));
    });
    proc.kill("SIGKILL");
    await new Promise((r) => proc.once("exit", r));
    expect(started.pids.some(processAlive)).to.equal(true);
    expect(reapOrphanedPlanes(NETBOX_DIR_PREFIX)).to.include(started.dir);
    await eventually("the orphans to die", () => started.pids.every((p) => !processAlive(p)), 10_000);
    expect(existsSync(started.dir)).to.equal(false);
  });
});
