#!/usr/bin/env node
// kubectl-ipam launcher. In a checkout (TypeScript source and the tsx devDependency present) it runs the source, so
// the tool never lags behind the code and needs no build; in an installed package (no source, no tsx) it runs the
// compiled dist/src/cli/main.js that `npm run build` produced before packing.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";
import { URL } from "node:url";

const source = new URL("../src/cli/main.ts", import.meta.url);
const compiled = new URL("../dist/src/cli/main.js", import.meta.url);

function hasTsx() {
  try {
    createRequire(import.meta.url).resolve("tsx/esm/api");
    return true;
  } catch {
    return false;
  }
}

if (existsSync(source) && hasTsx()) {
  const { register } = await import("tsx/esm/api");
  register();
  await import(source.href);
} else if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  process.stderr.write(
    "kubectl-ipam: neither the TypeScript source with tsx nor dist/src/cli/main.js is present; run `npm run build`\n",
  );
  process.exit(3);
}
