// Test helper: starts a plane in a child process, prints its folder and pids as one JSON line, then either exits
// without calling stop() ("exit") or waits to be killed ("wait").
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LocalPlane } from "../plane.js";

const mode = process.argv[2] ?? "exit";
const plane = await LocalPlane.start({ controllerManager: false });
const owner = JSON.parse(readFileSync(join(plane.dir, "owner.json"), "utf8")) as { children: number[] };
console.log(JSON.stringify({ dir: plane.dir, pids: owner.children }));
if (mode === "exit") process.exit(0);
setInterval(() => undefined, 1 << 30);
