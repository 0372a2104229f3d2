/** IPAddress object names (spec §3.1). */
import { canonicalAddress } from "./address.js";

/**
 * Name of the IPAddress object holding `address` in a pool with `namePrefix`:
 * `<namePrefix>-<address with '.' and ':' replaced by '-'>`, every trailing '-' trimmed (as Metal3 does).
 * The address is first put in canonical form, so every spelling of one address yields one name; text that is not an
 * address is used as written (the name is then still deterministic, and the API server judges it).
 * Examples: `abc` + `192.168.0.15` → `abc-192-168-0-15`; `pfx` + `2001:db8::1` → `pfx-2001-db8--1`.
 * Never throws. Does not check the result against Kubernetes name rules (length, characters).
 */
export function ipAddressName(namePrefix: string, address: string): string {
  const text = canonicalAddress(address) ?? address;
  return `${namePrefix}-${text.replace(/[.:]/g, "-")}`.replace(/-+$/, "");
}
