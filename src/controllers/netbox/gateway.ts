/**
 * The gateway a NetBox pool writes on its IPAddresses when its spec gives none, read from NetBox.
 *
 * NetBox has no gateway field on prefixes or ranges. The rule (docs/netbox.md): the gateway is the IP address
 * record tagged {@link GATEWAY_TAG} inside the pool's subnet, in its VRF: the prefix itself for a prefix pool; for a
 * range pool the prefix NetBox holds for the range's subnet (its first address with the range's mask; none: no
 * gateway). Several tagged records: the lowest address of the pool's family. None: the IPAddresses carry no gateway.
 * A record that NetBox holds is never handed out by `available-ips`, so the gateway never goes to a machine.
 */
import { formatAddress, maxValue, familyBits, parseAddress, type Family } from "../../ipam/address.js";
import { isNetBoxError, type NetBoxClient, type NetBoxParent } from "../../netbox/client.js";
import type { ResolvedParent } from "./parent.js";

/** The slug of the tag that marks a subnet's gateway record in NetBox. */
export const GATEWAY_TAG = "gateway";

/** The lowest address of `family` among `records` (NetBox's `10.0.0.1/24`), or undefined. Pure. */
export function gatewayAmong(records: readonly { address: string }[], family: Family): string | undefined {
  let best: bigint | undefined;
  for (const r of records) {
    const a = parseAddress(r.address.split("/")[0] ?? "");
    if (a?.family === family && (best === undefined || a.value < best)) best = a.value;
  }
  return best === undefined ? undefined : formatAddress({ family, value: best });
}

/** The CIDR of the subnet `parent` lies in: its first address masked to its length (`10.0.1.0/24`). Pure. */
export function subnetOf(parent: Pick<ResolvedParent, "family" | "first" | "prefixLength">): string {
  const hostMask = (1n << BigInt(familyBits(parent.family) - parent.prefixLength)) - 1n;
  const network = parent.first & (maxValue(parent.family) ^ hostMask);
  return `${formatAddress({ family: parent.family, value: network })}/${parent.prefixLength}`;
}

/**
 * The gateway NetBox records for the pool's subnet (see the rule above). A range whose subnet NetBox holds as no
 * prefix, or as several (BadRequest), has none; other failures are thrown.
 */
export async function readGateway(api: NetBoxClient, parent: ResolvedParent): Promise<string | undefined> {
  let prefix: NetBoxParent = parent.parent;
  if (prefix.kind === "ip-range") {
    try {
      const found = await api.findPrefix({
        cidr: subnetOf(parent),
        ...(parent.vrfId !== undefined ? { vrfId: parent.vrfId } : {}),
      });
      prefix = { kind: "prefix", id: found.id };
    } catch (err) {
      if (isNetBoxError(err, "NotFound") || isNetBoxError(err, "BadRequest")) return undefined;
      throw err;
    }
  }
  return gatewayAmong(await api.listOwned(prefix, GATEWAY_TAG), parent.family);
}
