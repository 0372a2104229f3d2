import { expect } from "chai";
import { parseInvocation } from "./args.js";
import { CliError, ExitCode } from "./errors.js";

function usageError(argv: string[]): string {
  try {
    parseInvocation(argv);
  } catch (err) {
    expect(err).to.be.instanceOf(CliError);
    expect((err as CliError).exitCode).to.equal(ExitCode.usage);
    return (err as CliError).message.split("\n")[0]!;
  }
  throw new Error(`accepted ${argv.join(" ")}`);
}

describe("cli/args", () => {
  it("parses kubectl's flags in any order", () => {
    expect(
      parseInvocation(["-n", "x", "free", "p", "-o", "json", "--context", "c", "--kubeconfig", "/k"]),
    ).to.deep.equal({
      command: "free",
      args: ["p"],
      namespace: "x",
      output: "json",
      context: "c",
      kubeconfig: "/k",
      allNamespaces: false,
      watch: false,
    });
    expect(parseInvocation(["pools", "-A", "-w"])).to.include({ command: "pools", allNamespaces: true, watch: true });
    expect(parseInvocation(["preflight-move", "--to-kubeconfig", "/t", "--to-kubeconfig-context", "tc"])).to.include({
      command: "preflight-move",
      toKubeconfig: "/t",
      toContext: "tc",
    });
    expect(parseInvocation([]).command).to.equal("help");
    expect(parseInvocation(["who", "--help"]).command).to.equal("help");
  });

  it("refuses what makes no sense, as a usage error", () => {
    expect(usageError(["frobnicate"])).to.equal('unknown command "frobnicate"');
    expect(usageError(["free"])).to.equal("free needs exactly one argument");
    expect(usageError(["pools", "x"])).to.equal("pools takes no arguments");
    expect(usageError(["pools", "-o", "xml"])).to.equal('unknown output format "xml": use text, json or yaml');
    expect(usageError(["who", "1.2.3.4", "-w"])).to.equal("--watch only applies to pools");
    expect(usageError(["pools", "-w", "-o", "json"])).to.equal("--watch draws text; it cannot be combined with -o");
    expect(usageError(["preflight-move", "-A"])).to.equal(
      "preflight-move works on one namespace: use -n instead of -A",
    );
    expect(usageError(["pools", "--to-kubeconfig", "/t"])).to.equal(
      "--to-kubeconfig and --to-kubeconfig-context only apply to preflight-move",
    );
    expect(usageError(["pools", "--bogus"])).to.match(/Unknown option '--bogus'/);
  });

  it("parses reserve and release with their flags, and refuses them where they make no sense", () => {
    expect(
      parseInvocation(["reserve", "vip", "--pool", "inclusterippool/vips", "--owner", "svc/ingress", "-n", "a"]),
    ).to.include({ command: "reserve", pool: "inclusterippool/vips", owner: "svc/ingress", namespace: "a" });
    expect(parseInvocation(["release", "vip"])).to.include({ command: "release" });
    expect(usageError(["reserve", "vip"])).to.equal("reserve needs --pool POOL");
    expect(usageError(["reserve", "--pool", "p"])).to.equal("reserve needs exactly one argument");
    expect(usageError(["reserve", "vip", "--pool", "secret/x"])).to.equal('unknown pool kind in --pool "secret/x"');
    expect(usageError(["who", "x", "--pool", "p"])).to.equal("--pool, --owner and --address only apply to reserve");
    expect(usageError(["release", "vip", "-A"])).to.equal("release works on one namespace: use -n instead of -A");
  });
});
