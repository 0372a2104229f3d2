/**
 * How a record in NetBox says which claim, of which management cluster, it was made for. Pure: no Kubernetes or
 * HTTP imports.
 *
 * Every record we create carries our tag ({@link OWNER_TAG}) and, in `description`, its key:
 * `IPAddressClaim <namespace>/<name> @<installation>`. NetBox filters `description` exactly, so the key holds nothing
 * else; the claim's Cluster and pool go into `comments` for people reading NetBox.
 *
 * Why each part:
 * - namespace and name: what `clusterctl move` keeps (uids change in a move, names do not);
 * - the installation: two management clusters may have claims of the same namespace and name on one prefix (a
 *   second cluster, a rebuilt one, a test plane). Without it their records share a key, and each cluster's release
 *   and clean-up would delete the other's live records. Only records with our installation are ours: listed, kept,
 *   settled, released. The id is per management cluster (see installation.ts: by default the short form of the
 *   `kube-system` Namespace's uid, which lives as long as the cluster and needs no write), not per pool: a pool is
 *   recreated by `clusterctl move` on the target with a new uid, and pools of one cluster never share a claim.
 * - a moved claim: its IPAddress names the record it holds ({@link RECORD_ID_ANNOTATION}, written when the IPAddress
 *   is made) and travels with it. The target's controller takes over a record only when the id, the address and the
 *   claim's namespace and name all match, whatever installation made it, and re-keys it to its own installation;
 *   from then on the source (whose release skips claims deleted for the move anyway) never finds it under its key.
 * - records of the key used before installations ({@link legacyKey}, no `@`): taken over by a bound IPAddress holding
 *   that address for that claim and naming no record (IPAddresses made before the annotation); never adopted
 *   otherwise, never deleted. Such an IPAddress may also take over another installation's record of its claim at its
 *   address: its cluster re-keyed it after an upgrade, then the claim moved. A hand-made record that merely looks like
 *   ours (our tag, a plausible description) is thus never adopted unless an IPAddress here already holds its address
 *   for its claim. What an IPAddress naming a record never takes over is any other record, so two live management
 *   clusters (whose IPAddresses all name their records) never take each other's.
 */

/** The tag on every NetBox record we create: only tagged records are ever looked up as ours, or deleted. */
export const OWNER_TAG = { slug: "metal3-ipam-ts", name: "metal3-ipam-ts" } as const;

/** A claim as NetBox records name it. */
export interface RecordOwner {
  namespace: string;
  name: string;
  cluster: string | undefined;
}

/** The installation's part of a key: 1 to 32 letters, digits, `.`, `_` or `-` (no space, no `@`). */
export const INSTALLATION_PATTERN = /^[A-Za-z0-9._-]{1,32}$/;

/** The annotation on an IPAddress naming the NetBox record (its id) that holds its address. */
export const RECORD_ID_ANNOTATION = "netbox.ipam.cluster.x-k8s.io/record-id";

/**
 * The short installation id of a management cluster whose `kube-system` Namespace has uid `uid`: its first twelve
 * hex digits (48 random bits of a version 4 uid), lower-cased. Undefined for a uid without twelve.
 */
export function installationOfUid(uid: string): string | undefined {
  const hex = uid.replaceAll("-", "").toLowerCase();
  return /^[0-9a-f]{12}/.test(hex) ? hex.slice(0, 12) : undefined;
}

/** The `description` of the record made for claim `owner` by `installation`: `IPAddressClaim <ns>/<name> @<id>`. */
export function recordKey(owner: Pick<RecordOwner, "namespace" | "name">, installation: string): string {
  return `${legacyKey(owner)} @${installation}`;
}

/** The key records had before installations: `IPAddressClaim <namespace>/<name>`. */
export function legacyKey(owner: Pick<RecordOwner, "namespace" | "name">): string {
  return `IPAddressClaim ${owner.namespace}/${owner.name}`;
}

/** The end every key of `installation` has: what NetBox is asked to filter on (`description__iew`). */
export function keySuffix(installation: string): string {
  return ` @${installation}`;
}

/** A record's description read as a key; `installation` is absent for a {@link legacyKey}. */
export interface ParsedKey {
  namespace: string;
  name: string;
  installation?: string;
}

const KEY = /^IPAddressClaim ([a-z0-9.-]{1,253})\/([a-z0-9.-]{1,253})(?: @([A-Za-z0-9._-]{1,32}))?$/;

/** The claim and installation a description names, or undefined when it is not a key of ours (anything else). */
export function parseKey(description: string): ParsedKey | undefined {
  if (description.length > 600) return undefined;
  const m = KEY.exec(description);
  if (!m) return undefined;
  return { namespace: m[1] ?? "", name: m[2] ?? "", ...(m[3] !== undefined ? { installation: m[3] } : {}) };
}

/** The record id an IPAddress's annotations name, when they name a positive integer. */
export function recordIdOf(annotations: Readonly<Record<string, string>> | undefined): number | undefined {
  const text = annotations?.[RECORD_ID_ANNOTATION];
  if (text === undefined || !/^[1-9][0-9]{0,15}$/.test(text)) return undefined;
  return Number(text);
}

/**
 * Whether the record `record` may be taken over by the claim `claim` bound here to `address`, the IPAddress naming
 * record `recordId` (undefined: an IPAddress made before ids were written). Always the same claim and the same
 * address; then the named record whatever installation made it (a move), or, for an IPAddress naming none, a record
 * of the legacy key or of another installation (one made before ids were written and moved after its cluster
 * re-keyed the record). A record of ours needs no taking over.
 */
export function mayTakeOver(
  record: { id: number; address: string; description: string },
  claim: { namespace: string; name: string; address: string; recordId: number | undefined },
  installation: string,
): boolean {
  const key = parseKey(record.description);
  if (!key || key.namespace !== claim.namespace || key.name !== claim.name) return false;
  if (key.installation === installation) return false;
  if (splitCidr(record.address).address !== claim.address) return false;
  return claim.recordId === undefined || claim.recordId === record.id;
}

/** The `comments` of the record: what people want to know besides the key. */
export function ownerComments(owner: RecordOwner, pool: string): string {
  const cluster = owner.cluster ? `Cluster ${owner.cluster}, ` : "";
  return `Allocated by metal3-ipam-ts for ${legacyKey(owner)} (${cluster}pool ${pool}).`;
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
