/**
 * Images for a local node without a registry: tarballs in `docker save` format imported into the node's containerd
 * (namespace k8s.io, where the CRI plugin looks), used by pods with `imagePullPolicy: Never`.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PAUSE_IMAGE } from "./nodeconfig.js";

/** Writes the sandbox image (one layer: the pause binary as /pause) to `dir`/pause.tar and returns its path. */
export function writePauseImage(dir: string, pauseBinary: string): string {
  const work = join(dir, "pause-image");
  mkdirSync(join(work, "rootfs"), { recursive: true });
  copyFileSync(pauseBinary, join(work, "rootfs", "pause"));
  execFileSync("chmod", ["0755", join(work, "rootfs", "pause")]);
  execFileSync("tar", [
    "--numeric-owner",
    "--owner=0",
    "--group=0",
    "-C",
    join(work, "rootfs"),
    "-cf",
    join(work, "layer.tar"),
    "pause",
  ]);
  const diffId = `sha256:${createHash("sha256")
    .update(readFileSync(join(work, "layer.tar")))
    .digest("hex")}`;
  const config = {
    architecture: "amd64",
    os: "linux",
    config: { Entrypoint: ["/pause"] },
    rootfs: { type: "layers", diff_ids: [diffId] },
  };
  writeFileSync(join(work, "config.json"), JSON.stringify(config));
  writeFileSync(
    join(work, "manifest.json"),
    JSON.stringify([{ Config: "config.json", RepoTags: [PAUSE_IMAGE], Layers: ["layer.tar"] }]),
  );
  const out = join(dir, "pause.tar");
  execFileSync("tar", ["-C", work, "-cf", out, "manifest.json", "config.json", "layer.tar"]);
  return out;
}

/** Imports a `docker save` tarball into the node's containerd; returns the image names it holds afterwards. */
export function importImage(containerdSocket: string, tarball: string): string[] {
  execFileSync("ctr", ["-n", "k8s.io", "-a", containerdSocket, "images", "import", tarball], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  return execFileSync("ctr", ["-n", "k8s.io", "-a", containerdSocket, "images", "ls", "-q"], { encoding: "utf8" })
    .split("\n")
    .filter(Boolean);
}
