import { expect } from "chai";
import { SKIP_VALIDATE_DELETE_ANNOTATION } from "../../api/incluster/types.js";
import type { InClusterIPPool, InClusterIPPoolSpec } from "../../api/incluster/types.js";
import { formatFieldError } from "./fielderror.js";
import { deleteRefusal, droppedInUse, gatewayParseError, validateInClusterPool } from "./incluster-validation.js";

function pool(spec: Partial<InClusterIPPoolSpec>, annotations?: Record<string, string>): InClusterIPPool {
  return {
    metadata: { name: "my-pool", namespace: "default", ...(annotations ? { annotations } : {}) },
    spec: spec as InClusterIPPoolSpec,
  };
}

const messages = (spec: Partial<InClusterIPPoolSpec>): string[] =>
  validateInClusterPool(pool(spec)).map(formatFieldError);

const VALID: InClusterIPPoolSpec = { addresses: ["10.0.0.10-10.0.0.20"], prefix: 24, gateway: "10.0.0.1" };

describe("in-cluster pool admission (the provider's webhook rules)", () => {
  describe("the provider's 22 invalid specs, refused on create and on update", () => {
    const cases: Array<{ name: string; spec: Partial<InClusterIPPoolSpec>; expected: string }> = [
      {
        name: "addresses must be set",
        spec: { addresses: [], prefix: 24, gateway: "10.0.0.1" },
        expected: "addresses is required",
      },
      {
        name: "invalid gateway",
        spec: { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], prefix: 24, gateway: "invalid" },
        expected: 'spec.gateway: Invalid value: "invalid": ParseAddr("invalid"): unable to parse IP',
      },
      {
        name: "addresses in separate subnets",
        spec: { addresses: ["10.0.0.25", "10.0.0.26", "10.0.1.27"], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided address belongs to a different subnet than others",
      },
      {
        name: "an address that is garbage",
        spec: { addresses: ["10.0.0.25", "10.0.0.26", "garbage"], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided address is not a valid IP, range, nor CIDR",
      },
      {
        name: "negative prefix",
        spec: { addresses: ["10.0.0.25", "10.0.0.26"], prefix: -1, gateway: "10.0.0.1" },
        expected: "a valid prefix is required",
      },
      {
        name: "prefix 9999",
        spec: { addresses: ["10.0.0.25", "10.0.0.26"], prefix: 9999, gateway: "10.0.0.1" },
        expected: "provided prefix is not valid",
      },
      {
        name: "range out of order",
        spec: { addresses: ["10.0.0.10-10.0.0.5"], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided address is not a valid IP, range, nor CIDR",
      },
      {
        name: "CIDR with an invalid prefix",
        spec: { addresses: ["10.0.0.10/33"], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided address is not a valid IP, range, nor CIDR",
      },
      ...(
        [
          ["range below the prefix", ["10.0.1.0", "10.0.0.10-10.0.0.20"]],
          ["range above the prefix", ["10.0.1.0", "10.0.2.10-10.0.2.20"]],
          ["range starting below the prefix", ["10.0.1.0", "10.0.0.20-10.0.1.20"]],
          ["range ending above the prefix", ["10.0.1.0", "10.0.1.20-10.0.2.20"]],
          ["CIDR below the prefix", ["10.0.1.0", "10.0.0.1/24"]],
          ["CIDR above the prefix", ["10.0.1.0", "10.0.2.1/24"]],
          ["CIDR starting below the prefix", ["10.0.1.0", "10.0.0.0/23"]],
          ["CIDR ending above the prefix", ["10.0.1.0", "10.0.1.0/23"]],
        ] as const
      ).map(([name, addresses]) => ({
        name,
        spec: { addresses: [...addresses], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided address belongs to a different subnet than others",
      })),
      {
        name: "IPv4 addresses, IPv6 gateway",
        spec: { addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"], prefix: 24, gateway: "fd00::1" },
        expected: 'spec.gateway: Invalid value: "fd00::1": provided gateway and addresses are of mixed IP families',
      },
      {
        name: "IPv6 addresses, IPv4 gateway",
        spec: { addresses: ["fd00::1", "fd00::100-fd00::200"], prefix: 24, gateway: "10.0.0.1" },
        expected: "provided gateway and addresses are of mixed IP families",
      },
      {
        name: "addresses of both families",
        spec: {
          addresses: ["fd00::1", "fd00::100-fd00::200", "10.0.1.0", "10.0.0.2-10.0.0.250"],
          prefix: 24,
          gateway: "10.0.0.1",
        },
        expected:
          'spec.addresses: Invalid value: []string{"fd00::1", "fd00::100-fd00::200", "10.0.1.0", "10.0.0.2-10.0.0.250"}: ' +
          "provided addresses are of mixed IP families",
      },
      {
        name: "excluded addresses of both families",
        spec: {
          addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"],
          prefix: 24,
          gateway: "10.0.0.1",
          excludedAddresses: ["fd00::1", "10.0.0.4"],
        },
        expected:
          'spec.excludedAddresses: Invalid value: []string{"fd00::1", "10.0.0.4"}: provided addresses are of mixed IP families',
      },
      {
        name: "addresses and excluded addresses of different families",
        spec: {
          addresses: ["10.0.1.0", "10.0.0.2-10.0.0.250"],
          prefix: 24,
          gateway: "10.0.0.1",
          excludedAddresses: ["fd00::1"],
        },
        expected: "addresses and excluded addresses are of mixed IP families",
      },
      {
        name: "negative addressReuseGracePeriodSeconds",
        spec: {
          addresses: ["10.0.0.10-10.0.0.20"],
          prefix: 24,
          gateway: "10.0.0.1",
          addressReuseGracePeriodSeconds: -1,
        },
        expected:
          "spec.addressReuseGracePeriodSeconds: Invalid value: -1: addressReuseGracePeriodSeconds must not be negative",
      },
    ];

    it("has all 22", () => expect(cases).to.have.length(22));

    for (const c of cases) {
      it(c.name, () => {
        const onCreate = validateInClusterPool(pool(c.spec)).map(formatFieldError);
        expect(
          onCreate.some((m) => m.includes(c.expected)),
          onCreate.join("\n"),
        ).to.equal(true);
        const onUpdate = validateInClusterPool(pool(c.spec), pool(VALID)).map(formatFieldError);
        expect(onUpdate).to.deep.equal(onCreate);
        expect(deleteRefusal(pool(c.spec), 0)).to.equal(undefined);
      });
    }
  });

  describe("valid specs", () => {
    const valid: Array<[string, Partial<InClusterIPPoolSpec>]> = [
      [
        "addresses, gateway and prefix",
        { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], gateway: "10.0.0.24", prefix: 28 },
      ],
      ["no gateway", { addresses: ["10.0.0.25", "10.0.0.26", "10.0.0.27"], prefix: 28 }],
      [
        "excluded addresses outside the addresses and the prefix (not checked)",
        { addresses: ["10.0.0.25", "10.0.0.26"], prefix: 28, excludedAddresses: ["10.0.0.23", "10.9.0.24"] },
      ],
      ["gateway outside the prefix (not checked)", { addresses: ["10.0.0.25"], prefix: 28, gateway: "192.168.0.1" }],
      [
        "IPv6 entries of every form",
        { addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"], gateway: "fe01::1", prefix: 28 },
      ],
      [
        "IPv6 excluded addresses",
        {
          addresses: ["fe01::2", "fe01::3-fe01::5", "fe01::1:1/126"],
          prefix: 28,
          excludedAddresses: ["fe01::4", "fe01::6-fe01::8", "fe01::1:10/126"],
        },
      ],
      [
        "a grace period",
        { addresses: ["10.0.0.25", "10.0.0.26"], gateway: "10.0.0.24", prefix: 28, addressReuseGracePeriodSeconds: 60 },
      ],
      ["a /0 prefix", { addresses: ["10.0.0.10-10.0.0.20"], prefix: 0, gateway: "10.0.0.1" }],
      ["an empty (absent) prefix: Go's zero value, /0", { addresses: ["10.0.0.10-10.0.0.20"], gateway: "10.0.0.1" }],
      ["an empty gateway", { addresses: ["10.0.0.10"], prefix: 24, gateway: "" }],
      ["a /32 single address", { addresses: ["10.0.0.10"], prefix: 32 }],
      ["a /128 single address", { addresses: ["fd00::10"], prefix: 128 }],
    ];
    for (const [name, spec] of valid) {
      it(name, () => expect(messages(spec)).to.deep.equal([]));
    }
  });

  describe("exact messages", () => {
    it("renders values as the provider's Go code does", () => {
      expect(messages({ prefix: 24 })).to.deep.equal([
        "spec.addresses: Invalid value: []string(nil): addresses is required",
      ]);
      expect(messages({ addresses: [], prefix: 24 })).to.deep.equal([
        "spec.addresses: Invalid value: []string{}: addresses is required",
      ]);
      expect(messages({ addresses: ["10.0.0.1"], prefix: -1 })).to.deep.equal([
        "spec.prefix: Invalid value: -1: a valid prefix is required",
      ]);
      expect(messages({ addresses: ["10.0.0.1"], prefix: 33 })).to.deep.equal([
        "spec.prefix: Invalid value: 33: provided prefix is not valid",
      ]);
      expect(messages({ addresses: ["fd00::1"], prefix: 129 })).to.deep.equal([
        "spec.prefix: Invalid value: 129: provided prefix is not valid",
      ]);
      expect(messages({ addresses: ["10.0.0.1", "10.0.1.0/24"], prefix: 24, excludedAddresses: ["x"] })).to.deep.equal([
        'spec.excludedAddresses: Invalid value: "x": provided address is not a valid IP, range, nor CIDR',
      ]);
    });

    it("checks the prefix and the subnet only once everything else holds", () => {
      expect(messages({ addresses: ["10.0.0.1", "10.9.0.1", "garbage"], prefix: 33 })).to.deep.equal([
        'spec.addresses: Invalid value: "garbage": provided address is not a valid IP, range, nor CIDR',
      ]);
      expect(messages({ addresses: ["10.0.0.1", "10.9.0.1", "10.8.0.0/16"], prefix: 24 })).to.deep.equal([
        'spec.addresses: Invalid value: "10.9.0.1": provided address belongs to a different subnet than others',
        'spec.addresses: Invalid value: "10.8.0.0/16": provided address belongs to a different subnet than others',
      ]);
    });

    it("names the gateway's parse problem as Go's netip.ParseAddr does", () => {
      const cases: Array<[string, string]> = [
        ["invalid", "unable to parse IP"],
        ["%eth0", "missing IPv6 address"],
        ["10.0.0.256", "IPv4 field has value >255"],
        ["10.00.0.1", "IPv4 field has octet with leading zero"],
        ["10.0.0", "IPv4 address too short"],
        ["10.0.0.1.2", "IPv4 address too long"],
        ["10..0.1", 'IPv4 field must have at least one digit (at ".0.1")'],
        ["10.0.0.1:80", 'unexpected character (at ":80")'],
      ];
      for (const [text, reason] of cases)
        expect(gatewayParseError(text)).to.equal(`ParseAddr(${JSON.stringify(text)}): ${reason}`);
      expect(gatewayParseError("fe80::1%eth0")).to.match(/^ParseAddr\("fe80::1%eth0"\): /);
    });

    it("never throws on objects with missing or odd parts", () => {
      const odd = { addresses: "10.0.0.1", prefix: "24", gateway: 7 } as unknown as InClusterIPPoolSpec;
      expect(() => validateInClusterPool(pool(odd))).not.to.throw();
      expect(validateInClusterPool({ metadata: {} } as InClusterIPPool).map(formatFieldError)).to.deep.equal([
        "spec.addresses: Invalid value: []string(nil): addresses is required",
      ]);
    });
  });

  describe("update: addresses in use must stay in the pool (400)", () => {
    const update = (spec: Partial<InClusterIPPoolSpec>, inUse: string[]): string | undefined =>
      droppedInUse(pool(spec), inUse);

    it("refuses dropping an address in use, as in the provider's test", () => {
      expect(update({ ...VALID, addresses: ["10.0.0.15-10.0.0.20"] }, ["10.0.0.10"])).to.equal(
        "pool addresses do not contain allocated addresses: [10.0.0.10-10.0.0.10]",
      );
    });

    it("merges consecutive addresses into ranges, ascending and canonical, as Go prints its IP set", () => {
      const inUse = ["10.0.0.14", "10.0.0.11", "10.0.0.10", "10.0.0.12", "10.0.0.16", "10.0.0.12"];
      expect(update({ ...VALID, addresses: ["10.0.0.15-10.0.0.20"] }, inUse)).to.equal(
        "pool addresses do not contain allocated addresses: [10.0.0.10-10.0.0.12 10.0.0.14-10.0.0.14]",
      );
      expect(update({ addresses: ["fd00::3-fd00::9"], prefix: 64 }, ["fd00:0::1", "FD00::2", "fd00::5"])).to.equal(
        "pool addresses do not contain allocated addresses: [fd00::1-fd00::2]",
      );
    });

    it("refuses an address in use becoming the gateway, excluded or reserved", () => {
      expect(update({ ...VALID, gateway: "10.0.0.12" }, ["10.0.0.12"])).to.match(/\[10\.0\.0\.12-10\.0\.0\.12\]$/);
      expect(update({ ...VALID, excludedAddresses: ["10.0.0.11/32"] }, ["10.0.0.11"])).to.match(/10\.0\.0\.11\]$/);
      expect(
        update({ addresses: ["10.0.0.0-10.0.0.255"], prefix: 24 }, ["10.0.0.0", "10.0.0.5", "10.0.0.255"]),
      ).to.equal("pool addresses do not contain allocated addresses: [10.0.0.0-10.0.0.0 10.0.0.255-10.0.0.255]");
    });

    it("accepts specs that keep every readable address in use", () => {
      expect(update({ ...VALID, addresses: ["10.0.0.5-10.0.0.30"] }, ["10.0.0.10", "10.0.0.20"])).to.equal(undefined);
      expect(update({ ...VALID, excludedAddresses: ["10.0.0.19"] }, ["10.0.0.10", "not-an-ip"])).to.equal(undefined);
    });

    it("counts every address in use, also one the old spec did not hand out either (as the provider)", () => {
      expect(update(VALID, ["10.0.0.10", "10.9.9.9"])).to.equal(
        "pool addresses do not contain allocated addresses: [10.9.9.9-10.9.9.9]",
      );
    });
  });

  describe("delete (400)", () => {
    it("refuses while IPAddresses refer to the pool, allows once none do", () => {
      expect(deleteRefusal(pool(VALID), 2)).to.equal(
        "Pool has IPAddresses allocated. Cannot delete Pool until all IPAddresses have been removed.",
      );
      expect(deleteRefusal(pool(VALID), 0)).to.equal(undefined);
    });

    it("allows it with the skip annotation, whatever its value", () => {
      expect(deleteRefusal(pool(VALID, { [SKIP_VALIDATE_DELETE_ANNOTATION]: "" }), 2)).to.equal(undefined);
      expect(deleteRefusal(pool(VALID, { [SKIP_VALIDATE_DELETE_ANNOTATION]: "false" }), 2)).to.equal(undefined);
      expect(deleteRefusal(pool(VALID, { other: "" }), 1)).to.not.equal(undefined);
    });
  });
});
