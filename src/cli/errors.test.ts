import { expect } from "chai";
import { CliError, explainReadError } from "./errors.js";

const failure = (status: number, message?: string) => ({
  ok: false,
  status,
  statusText: "x",
  data: message ? { kind: "Status", message } : undefined,
});

describe("cli/errors", () => {
  it("names the verb and resource of an RBAC refusal", () => {
    const e = explainReadError(
      failure(403, 'ippools.ipam.metal3.io is forbidden: User "u" cannot list resource "ippools"'),
      { verb: "list", resource: "ippools.ipam.metal3.io", namespace: "n" },
    );
    expect(e.message).to.match(
      /^forbidden: your user may not list ippools\.ipam\.metal3\.io in namespace "n"; ask for an RBAC rule granting "list" on ippools\.ipam\.metal3\.io/,
    );
    expect(e.exitCode).to.equal(3);
  });

  it("says the server cannot be reached, with the cause, instead of a status", () => {
    const cause = new Error("connect ECONNREFUSED 127.0.0.1:1");
    const e = explainReadError(
      { ok: false, status: 400, statusText: "fetch failed", e: new Error("fetch failed", { cause }) },
      { verb: "list", resource: "ippools.ipam.metal3.io" },
      "https://127.0.0.1:1",
    );
    expect(e.message).to.equal("cannot reach the API server at https://127.0.0.1:1: connect ECONNREFUSED 127.0.0.1:1");
  });

  it("passes CLI errors through and wraps anything else", () => {
    const mine = new CliError("mine");
    expect(explainReadError(mine, { verb: "get", resource: "r" })).to.equal(mine);
    expect(explainReadError(new Error("boom"), { verb: "get", resource: "r" }).message).to.equal("boom");
    expect(
      explainReadError(failure(404), { verb: "get", resource: "ippools.ipam.metal3.io", name: "p", namespace: "n" })
        .message,
    ).to.equal('ippools.ipam.metal3.io "p" not found in namespace "n"');
  });
});
