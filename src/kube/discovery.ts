/**
 * Which version of a kind the API server serves: the one discovery routine of the controller (Clusters, Cluster API
 * IPAM). Versions come from the kind's descriptor in api/registry.ts, preferred first.
 */
import { resourceType, type ResourceDescriptor, type VersionOf } from "../../api/registry.js";
import type { Kube } from "./access.js";
import { ResourceClient } from "./resource.js";

/**
 * The first of `descriptor`'s versions the API server serves (probed in order with a one-object list), or undefined
 * when it serves none. Rejects on any failure other than 404 (unreachable server, forbidden), so a caller never takes
 * an outage for a missing API.
 */
export async function servedVersion<D extends ResourceDescriptor>(
  kube: Kube,
  descriptor: D,
): Promise<VersionOf<D> | undefined> {
  for (const version of descriptor.versions) {
    if (await new ResourceClient(kube, resourceType(descriptor, version)).served()) return version;
  }
  return undefined;
}
