import { expect } from "chai";
import {
  decideServing,
  DEFAULT_LEASE_DURATION_MS,
  MAX_LEASE_DURATION_MS,
  observeLease,
  type LeaseRecord,
  type LeaseSighting,
  type ProviderState,
} from "./providers.js";

describe("serving a pool kind another provider may serve (pure)", () => {
  const rows: [boolean, ProviderState, boolean, string][] = [
    [false, "stopped", false, "NotEnabled"],
    [false, "running", false, "NotEnabled"],
    [false, "unknown", false, "NotEnabled"],
    [true, "stopped", true, "Serving"],
    [true, "running", false, "ServedByAnotherProvider"],
    [true, "unknown", false, "ProviderStateUnknown"],
  ];
  for (const [enabled, provider, serve, reason] of rows)
    it(`flag ${enabled ? "on" : "off"}, other provider ${provider}: ${serve ? "serves" : "refuses"} (${reason})`, () => {
      expect(decideServing(enabled, provider)).to.deep.equal({ serve, reason });
    });
});

describe("reading another provider's leader-election Lease (pure)", () => {
  const held = (renewTime: string, leaseDurationSeconds: number | null = 15): LeaseRecord => ({
    holderIdentity: "caip-0_abc",
    renewTime,
    leaseDurationSeconds,
  });
  const T0 = 1_000_000;

  it("no Lease, or one released (no holder): not running", () => {
    expect(observeLease(undefined, undefined, T0)).to.deep.equal({ running: false });
    expect(observeLease(undefined, { holderIdentity: "", renewTime: "r1" }, T0).running).to.equal(false);
    expect(observeLease(undefined, { holderIdentity: null }, T0).running).to.equal(false);
  });

  it("a held Lease first seen runs for its duration on our clock, whatever its renew time says", () => {
    const first = observeLease(undefined, held("2001-01-01T00:00:00.000000Z"), T0);
    expect(first.running).to.equal(true);
    expect(observeLease(first.sighting, held("2001-01-01T00:00:00.000000Z"), T0 + 14_999).running).to.equal(true);
    expect(observeLease(first.sighting, held("2001-01-01T00:00:00.000000Z"), T0 + 15_000).running).to.equal(false);
  });

  it("each renewal restarts the duration; renewals stopping make it stale after the duration", () => {
    let s: LeaseSighting | undefined;
    for (let i = 0; i < 10; i++) {
      const seen = observeLease(s, held(`r${i}`), T0 + i * 10_000);
      expect(seen.running, `renewal ${i}`).to.equal(true);
      s = seen.sighting;
    }
    expect(observeLease(s, held("r9"), T0 + 9 * 10_000 + 14_000).running).to.equal(true);
    expect(observeLease(s, held("r9"), T0 + 9 * 10_000 + 15_000).running).to.equal(false);
    expect(observeLease(s, held("r10"), T0 + 200_000).running, "renewed again").to.equal(true);
  });

  it("a new holder with the same renew time counts as a change", () => {
    const first = observeLease(undefined, held("r1"), T0);
    const other = observeLease(first.sighting, { ...held("r1"), holderIdentity: "caip-1_def" }, T0 + 20_000);
    expect(other.running).to.equal(true);
  });

  it("the Lease's own duration counts, absent or broken ones fall back to client-go's, huge ones are capped", () => {
    expect(observeLease(undefined, held("r", 60), T0).sighting?.durationMs).to.equal(60_000);
    for (const bad of [null, 0, -5, Number.NaN])
      expect(observeLease(undefined, held("r", bad), T0).sighting?.durationMs, String(bad)).to.equal(
        DEFAULT_LEASE_DURATION_MS,
      );
    expect(observeLease(undefined, held("r", 1e12), T0).sighting?.durationMs).to.equal(MAX_LEASE_DURATION_MS);
  });
});
