/**
 * Test oracle: Metal3's per-index candidate arithmetic written literally from the text of spec §2, independently of
 * entries.ts, so tests can compare the interval compilation against a plain scan. Test-only; not exported by index.ts.
 */
import type { Pool } from "../../api/v1alpha1/types.js";
import { maxValue, parseAddress, parseSubnet } from "./address.js";

/** Metal3's candidate i of an entry (spec §2), or undefined when out of bounds. Unparsable fields yield nothing. */
export function metal3Candidate(e: Pool, i: bigint): bigint | undefined {
  if (e.start !== undefined) {
    const start = parseAddress(e.start);
    if (!start) return undefined;
    const v = start.value + i;
    if (v > maxValue(start.family)) return undefined;
    const end = e.end !== undefined ? parseAddress(e.end) : undefined;
    if (end && v > end.value) return undefined;
    const subnet = e.subnet !== undefined ? parseSubnet(e.subnet) : undefined;
    if (subnet && (v < subnet.first || v > subnet.last)) return undefined;
    return v;
  }
  const subnet = e.subnet !== undefined ? parseSubnet(e.subnet) : undefined;
  if (!subnet) return undefined;
  const v = subnet.network.value + 1n + i;
  return v < subnet.first || v > subnet.last ? undefined : v;
}

/** Every candidate of an entry in scan order, stopping at the first out-of-bounds index (at most `limit`). */
export function metal3Scan(e: Pool, limit = 100_000): bigint[] {
  const out: bigint[] = [];
  for (let i = 0n; i < BigInt(limit); i++) {
    const v = metal3Candidate(e, i);
    if (v === undefined) break;
    out.push(v);
  }
  return out;
}
