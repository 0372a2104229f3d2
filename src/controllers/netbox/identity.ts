/**
 * How a record in NetBox says which claim it was made for. Pure: no Kubernetes or HTTP imports.
 *
 * Every record we create carries our tag ({@link OWNER_TAG}) and, in `description`, the claim's identity: its
 * namespace and name, which `clusterctl move` keeps (uids change in a move; names do not). The description is the key
 * we look records up by (NetBox filters it exactly), so it holds nothing else; the claim's Cluster and pool go into
 * `comments` for people reading NetBox.
 */

/** The tag on every NetBox record we create: only tagged records are ever looked up as ours, or deleted. */
export const OWNER_TAG = { slug: "metal3-ipam-ts", name: "metal3-ipam-ts" } as const;

/** A claim as NetBox records name it. */
export interface RecordOwner {
  namespace: string;
  name: string;
  cluster: string | undefined;
}

/** The `description` of the record made for claim `owner`: `IPAddressClaim <namespace>/<name>`. */
export function ownerDescription(owner: Pick<RecordOwner, "namespace" | "name">): string {
  return `IPAddressClaim ${owner.namespace}/${owner.name}`;
}

/** The `comments` of the record: what people want to know besides the key. */
export function ownerComments(owner: RecordOwner, pool: string): string {
  const cluster = owner.cluster ? `Cluster ${owner.cluster}, ` : "";
  return `Allocated by metal3-ipam-ts for ${ownerDescription(owner)} (${cluster}pool ${pool}).`;
}

/**
 * The DNS name the template gives the claim: `{namespace}`, `{name}` and `{cluster}` replaced (an absent Cluster
 * gives an empty string), lower-cased as DNS names are compared. Undefined without a template.
 */
export function dnsNameOf(template: string | undefined, owner: RecordOwner): string | undefined {
  if (!template) return undefined;
  return template
    .replaceAll("{namespace}", owner.namespace)
    .replaceAll("{name}", owner.name)
    .replaceAll("{cluster}", owner.cluster ?? "")
    .toLowerCase();
}

/** `10.0.0.5` of NetBox's `10.0.0.5/24`; the length, when asked. */
export function splitCidr(text: string): { address: string; length: number | undefined } {
  const slash = text.indexOf("/");
  if (slash < 0) return { address: text, length: undefined };
  const length = Number(text.slice(slash + 1));
  return { address: text.slice(0, slash), length: Number.isInteger(length) ? length : undefined };
}
