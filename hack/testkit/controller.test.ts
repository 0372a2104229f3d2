import { expect } from "chai";
import { deploymentNodeFlags, imageEnv, imageNodeFlags } from "./controller.js";

const DOCKERFILE = `
FROM node AS build
ENV BUILD_ONLY=1
FROM node
ENV NODE_ENV=production MALLOC_ARENA_MAX=2
ENV EMPTY=
ENTRYPOINT ["node", "--some-v8-flag", "dist/src/main.js"]
`;

describe("the controller child process runs as the image and the Deployment say", () => {
  it("takes the ENV of the image's last stage only", () => {
    expect(imageEnv(DOCKERFILE)).to.deep.equal({ NODE_ENV: "production", MALLOC_ARENA_MAX: "2", EMPTY: "" });
  });

  it("refuses an ENV it cannot read, so a changed Dockerfile cannot silently drop a setting from every measurement", () => {
    expect(() => imageEnv("FROM node\nENV MALLOC_ARENA_MAX 2\n")).to.throw(/KEY=value/);
  });

  it("takes the ENTRYPOINT's Node flags", () => {
    expect(imageNodeFlags(DOCKERFILE)).to.deep.equal(["--some-v8-flag"]);
  });

  it("reads this repository's Dockerfile and Deployment", () => {
    expect(imageEnv()).to.include({ MALLOC_ARENA_MAX: "2" });
    // --expose-gc: the controller's memory release needs V8's gc() (src/runtime/memory.ts).
    expect(imageNodeFlags()).to.include("--expose-gc");
    // The heap's growth between major collections in proportion to it (Dockerfile): a trickle's cost at 10,000 claims.
    expect(imageNodeFlags()).to.include("--heap-growing-percent=50");
    expect(deploymentNodeFlags()).to.include("--max-semi-space-size=2");
  });
});
