/**
 * The single source of truth for the `ipam.metal3.io/v1alpha1` CustomResourceDefinitions (spec §1): structural
 * OpenAPI v3 schemas for IPPool, IPClaim and IPAddress plus the CRD metadata (names, categories, subresources,
 * printer columns). `hack/generate-crds.ts` renders them into `config/crd/bases/`; never edit those files by hand.
 *
 * Compatibility rule: every object Metal3's CRDs accept must be accepted here with the same meaning, so the schemas
 * mirror Metal3 field for field (object references keep all `corev1.ObjectReference` fields so nothing is pruned) and
 * only `status` gains fields. Patterns must be valid RE2 (Kubernetes compiles them with Go's regexp): no lookarounds,
 * no backreferences. Plain data, no runtime dependencies.
 */

import { IPADDRESS, IPCLAIM, IPPOOL } from "../registry.js";
import { GROUP, IPADDRESS_KIND, IPCLAIM_KIND, IPPOOL_KIND, READY_CONDITION, VERSION } from "./types.js";

/** One CEL validation rule (`x-kubernetes-validations`). Rules that use `oldSelf` only run on update. */
export interface ValidationRule {
  rule: string;
  message: string;
}

/** The subset of `apiextensions.k8s.io/v1` JSONSchemaProps our CRDs use. Every node carries a `type` (structural). */
export interface JSONSchemaProps {
  type: "object" | "array" | "string" | "integer" | "boolean";
  description?: string;
  format?: "int32" | "int64" | "date-time";
  pattern?: string;
  enum?: string[];
  default?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxProperties?: number;
  maxItems?: number;
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  required?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-list-type"?: "atomic" | "map" | "set";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-validations"?: ValidationRule[];
  /** Keeps the node's value as written; only such a node may go without `type` (a structural schema's exception). */
  "x-kubernetes-preserve-unknown-fields"?: boolean;
}

/** A `kubectl get` column (`additionalPrinterColumns`). */
export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "date" | "boolean";
  jsonPath: string;
  description: string;
  /** 0 (default) shows the column always, 1 only with `-o wide`. */
  priority?: number;
}

/** A version served beside the storage version, never stored: the API server converts it through the webhook. */
export interface ServedVersion {
  name: string;
  schema: JSONSchemaProps;
  printerColumns: PrinterColumn[];
  /** Marks it deprecated; the API server sends this text as a warning with every request that uses it. */
  deprecationWarning?: string;
}

/**
 * The conversion webhook of a multi-version CRD: a path of the webhook Service (`service` in `namespace`, the
 * kustomize names that config/default renames), asked with ConversionReview v1.
 */
export interface ConversionWebhook {
  service: string;
  namespace: string;
  path: string;
}

/**
 * Everything needed to render one CRD (ours, or one we ship for another provider's kinds): one storage version, and
 * optionally older versions served beside it with their conversion webhook.
 */
export interface CrdDefinition {
  group: string;
  version: string;
  kind: string;
  /** `Namespaced` when absent. */
  scope?: "Namespaced" | "Cluster";
  listKind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  /** Whether `/status` is a subresource (status writes go through it and ignore spec changes). */
  statusSubresource: boolean;
  printerColumns: PrinterColumn[];
  /**
   * Fields usable in field selectors (`selectableFields`, GA in Kubernetes 1.32). The controller lists a pool's
   * IPAddresses with `spec.pool.name=<pool>` for its freshness barrier; older servers ignore the stanza and the
   * controller falls back to listing the namespace.
   */
  selectableFields?: string[];
  schema: JSONSchemaProps;
  /** Versions served beside `version` (not stored); they need `conversion`. */
  servedVersions?: ServedVersion[];
  conversion?: ConversionWebhook;
}

// ---------------------------------------------------------------------------------------------------------------
// Address patterns (spec §1.4). Built from small pieces so each piece can be read and tested on its own.
// ---------------------------------------------------------------------------------------------------------------

/** One IPv4 octet 0..255 in decimal without leading zeros (as Metal3: `01` is rejected, octal is ambiguous). */
const IPV4_OCTET = "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
/** One IPv6 group: 1 to 4 hex digits, either case, leading zeros allowed (`0005`). */
const HEX_GROUP = "[0-9a-fA-F]{1,4}";

/** Unanchored IPv4 dotted quad. */
export const IPV4_REGEX_SOURCE = `(${IPV4_OCTET}\\.){3}${IPV4_OCTET}`;

/**
 * Unanchored IPv6 text form (RFC 4291 §2.2 forms 1 and 2): eight groups, or `::` standing for one or more zero groups
 * with k groups before and m after, k + m <= 7. No zone (`%eth0`) and no embedded IPv4 (`::ffff:1.2.3.4`). The
 * alternation is enumerated by k because RE2 has no lookahead to count groups.
 */
export const IPV6_REGEX_SOURCE = buildIpv6Source();

function buildIpv6Source(): string {
  const alternatives = [
    `(${HEX_GROUP}:){7}${HEX_GROUP}`, // no compression
    `(${HEX_GROUP}:){1,7}:`, // k >= 1 groups, then "::" at the end
    `:(:${HEX_GROUP}){1,7}`, // "::" at the start, then m >= 1 groups
    "::", // all zeros
  ];
  for (let k = 1; k <= 6; k++) {
    // exactly k groups, "::", then 1..7-k groups
    alternatives.push(`${repeat(`${HEX_GROUP}:`, k, k)}${repeat(`:${HEX_GROUP}`, 1, 7 - k)}`);
  }
  return `(${alternatives.join("|")})`;
}

/** `atom` repeated min..max times, written without redundant quantifiers. */
function repeat(atom: string, min: number, max: number): string {
  if (min === 1 && max === 1) return atom;
  return min === max ? `(${atom}){${min}}` : `(${atom}){${min},${max}}`;
}

/** IPv4 prefix length 0..32, no leading zeros (Metal3's language). */
const IPV4_PREFIX_LENGTH = "(3[0-2]|[12]?[0-9])";
/** IPv6 prefix length 0..128; a two-digit form with a leading zero (`/05`) is accepted because Metal3 accepts it. */
const IPV6_PREFIX_LENGTH = "(12[0-8]|1[01][0-9]|[0-9]?[0-9])";

/** Anchored pattern for one IP address of either family (spec §1.4). */
export const IP_ADDRESS_PATTERN = `^(${IPV4_REGEX_SOURCE}|${IPV6_REGEX_SOURCE})$`;
/** Anchored pattern for a subnet in CIDR notation: IPv4 with `/0..32`, IPv6 with `/0..128`. */
export const SUBNET_PATTERN = `^(${IPV4_REGEX_SOURCE}/${IPV4_PREFIX_LENGTH}|${IPV6_REGEX_SOURCE}/${IPV6_PREFIX_LENGTH})$`;

// ---------------------------------------------------------------------------------------------------------------
// Shared schema pieces. Fresh objects per use (factories), so the YAML renderer never needs anchors.
// ---------------------------------------------------------------------------------------------------------------

function ipAddress(description: string): JSONSchemaProps {
  return { type: "string", description, pattern: IP_ADDRESS_PATTERN };
}

function dnsServers(description: string): JSONSchemaProps {
  return { type: "array", description, items: ipAddress("A DNS server address (IPv4 or IPv6).") };
}

function prefixLength(description: string): JSONSchemaProps {
  return { type: "integer", description, minimum: 0, maximum: 128 };
}

function str(description: string): JSONSchemaProps {
  return { type: "string", description };
}

/**
 * `corev1.ObjectReference`, as Metal3 declares its references. All fields are kept so objects written by Metal3
 * clients round-trip without pruning; only `name` and `namespace` carry meaning here.
 */
function objectReference(description: string, nameRequired: boolean): JSONSchemaProps {
  const ref: JSONSchemaProps = {
    type: "object",
    description,
    properties: {
      apiVersion: str("API version of the referent (unused)."),
      fieldPath: str("Field path inside the referent (unused)."),
      kind: str("Kind of the referent (unused)."),
      name: nameRequired
        ? { type: "string", description: "Name of the referent.", minLength: 1 }
        : str("Name of the referent."),
      namespace: str("Namespace of the referent; empty means the namespace of the referring object."),
      resourceVersion: str("Resource version of the referent (unused)."),
      uid: str("UID of the referent (unused)."),
    },
    "x-kubernetes-map-type": "atomic",
  };
  if (nameRequired) ref.required = ["name"];
  return ref;
}

/** `metav1.Condition` with the validation Kubernetes' own types declare. */
function conditions(description: string): JSONSchemaProps {
  return {
    type: "array",
    description,
    items: {
      type: "object",
      description: "One aspect of the current state of the object (metav1.Condition).",
      properties: {
        lastTransitionTime: {
          type: "string",
          format: "date-time",
          description: "When the condition last changed from one status to another.",
        },
        message: {
          type: "string",
          maxLength: 32768,
          description: "Human-readable details about the transition; may be empty.",
        },
        observedGeneration: {
          type: "integer",
          format: "int64",
          minimum: 0,
          description: "The .metadata.generation the condition was set for.",
        },
        reason: {
          type: "string",
          minLength: 1,
          maxLength: 1024,
          pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
          description: "Programmatic identifier in CamelCase for the last transition.",
        },
        status: { type: "string", enum: ["True", "False", "Unknown"], description: "Status of the condition." },
        type: {
          type: "string",
          maxLength: 316,
          pattern:
            "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
          description: `Type of the condition in CamelCase, such as ${READY_CONDITION}.`,
        },
      },
      required: ["lastTransitionTime", "message", "reason", "status", "type"],
    },
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
  };
}

/** The top-level envelope every kind shares: apiVersion, kind, metadata, then spec and optional status. */
function root(description: string, spec: JSONSchemaProps, status?: JSONSchemaProps): JSONSchemaProps {
  const properties: Record<string, JSONSchemaProps> = {
    apiVersion: str("Versioned schema of this representation of an object."),
    kind: str("REST resource this object represents, in CamelCase."),
    metadata: { type: "object" },
    spec,
  };
  if (status) properties.status = status;
  return { type: "object", description, properties };
}

const IMMUTABLE = "self == oldSelf";

/**
 * A transition rule for an object reference (put on the reference's own node, so it runs only when the old and the
 * new object both have it): `fields` may not change, an absent field counting as `""`. Go clients built on
 * `corev1.ObjectReference` omit empty strings, so a full update from them must not look like a change of a field
 * that was stored as `""`.
 *
 * The fields are compared as one list rather than string by string: the API server estimates a string comparison at
 * the largest string a request can carry (our strings have no maxLength, as in Metal3) and refuses the CRD as too
 * costly, while a list comparison is estimated by its element count. The meaning is the same.
 */
function referenceImmutable(fields: readonly string[], message: string): ValidationRule {
  const values = (obj: string): string => `[${fields.map((f) => `has(${obj}.${f}) ? ${obj}.${f} : ''`).join(", ")}]`;
  return { rule: `${values("self")} == ${values("oldSelf")}`, message };
}

// ---------------------------------------------------------------------------------------------------------------
// IPPool (spec §1.1)
// ---------------------------------------------------------------------------------------------------------------

const poolEntrySchema: JSONSchemaProps = {
  type: "object",
  description:
    "One range of addresses. Consumed in declaration order; its prefix (if non-zero), gateway (if set) and " +
    "dnsServers (if non-empty) override the pool-wide values for addresses taken from it.",
  properties: {
    dnsServers: dnsServers("DNS servers for addresses of this entry; overrides the pool-wide list when non-empty."),
    end: ipAddress("Last address of the range (inclusive)."),
    gateway: ipAddress("Gateway for addresses of this entry; overrides the pool-wide gateway when set."),
    prefix: prefixLength("Prefix length for addresses of this entry; overrides the pool-wide prefix when non-zero."),
    start: ipAddress("First address of the range."),
    subnet: {
      type: "string",
      description:
        "Subnet in CIDR notation bounding the range. Without start, allocation begins at the address written in " +
        "the CIDR plus one (192.168.0.1 for 192.168.0.0/24).",
      pattern: SUBNET_PATTERN,
    },
  },
};

const ipPoolSchema = root(
  "IPPool is a set of address ranges from which IPClaims (and Cluster API IPAddressClaims) get addresses.",
  {
    type: "object",
    description: "IPPoolSpec defines the ranges and the network settings handed out with each address.",
    properties: {
      allocationStrategy: {
        type: "string",
        description:
          'How an address is chosen inside one entry: "sequential" (the default; "" means the same) takes the ' +
          'first free address, "random" a random free one. Immutable once set (changing between "" and ' +
          '"sequential" is allowed).',
        enum: ["sequential", "random", ""],
        default: "sequential",
        "x-kubernetes-validations": [
          {
            rule: "self == oldSelf || (self in ['', 'sequential'] && oldSelf in ['', 'sequential'])",
            message: "allocationStrategy is immutable",
          },
        ],
      },
      clusterName: str("Name of the Cluster (cluster.x-k8s.io) in the same namespace this pool belongs to."),
      dnsServers: dnsServers("Pool-wide DNS servers."),
      gateway: ipAddress("Pool-wide gateway."),
      namePrefix: {
        type: "string",
        description: "Prefix of the names of the IPAddress objects created from this pool. Immutable.",
        minLength: 1,
        "x-kubernetes-validations": [{ rule: IMMUTABLE, message: "namePrefix is immutable" }],
      },
      pools: { type: "array", description: "Address ranges, consumed in declaration order.", items: poolEntrySchema },
      preAllocations: {
        type: "object",
        description: "Claim name to the address reserved for that claim (IPClaims and IPAddressClaims alike).",
        additionalProperties: ipAddress("The address reserved for the claim."),
      },
      prefix: prefixLength("Pool-wide prefix length."),
    },
    required: ["namePrefix"],
  },
  {
    type: "object",
    description: "IPPoolStatus is a view rebuilt from the IPAddress objects; never the source of truth.",
    properties: {
      conditions: conditions("Conditions of the pool, Ready among them."),
      free: {
        type: "integer",
        format: "int64",
        minimum: 0,
        description: "Addresses still available: total minus used, capped at the int64 maximum.",
      },
      indexes: {
        type: "object",
        description: "Claim name to the address allocated to it.",
        additionalProperties: ipAddress("The address allocated to the claim."),
        // One writer (the controller) owns the map as a whole. A granular map made the API server record one managed
        // field per claim: every status write and watch event of a pool of 10,000 claims carried 10,000 more keys in
        // metadata.managedFields, much of the object, parsed by every watcher. Merge patches still merge entries.
        "x-kubernetes-map-type": "atomic",
      },
      lastUpdated: { type: "string", format: "date-time", description: "When indexes last changed." },
      total: {
        type: "integer",
        format: "int64",
        minimum: 0,
        description: "Number of distinct addresses the entries can yield, capped at the int64 maximum.",
      },
      used: {
        type: "integer",
        format: "int64",
        minimum: 0,
        description: "Addresses held by IPAddress objects inside the entries.",
      },
    },
  },
);

/** The IPPool CRD (spec §1.1). */
export const IPPOOL_CRD: CrdDefinition = {
  group: GROUP,
  version: VERSION,
  kind: IPPOOL_KIND,
  listKind: `${IPPOOL_KIND}List`,
  plural: IPPOOL.plural,
  singular: "ippool",
  shortNames: ["ipp", "ippool", "m3ipp", "m3ippool", "m3ippools", "metal3ipp", "metal3ippool", "metal3ippools"],
  categories: ["cluster-api"],
  statusSubresource: true,
  printerColumns: [
    { name: "Cluster", type: "string", jsonPath: ".spec.clusterName", description: "Cluster the pool belongs to" },
    { name: "Strategy", type: "string", jsonPath: ".spec.allocationStrategy", description: "Allocation strategy" },
    { name: "Total", type: "integer", jsonPath: ".status.total", description: "Addresses the pool can hand out" },
    { name: "Used", type: "integer", jsonPath: ".status.used", description: "Addresses in use" },
    { name: "Free", type: "integer", jsonPath: ".status.free", description: "Addresses still available" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", description: "Time since creation" },
  ],
  schema: ipPoolSchema,
};

// ---------------------------------------------------------------------------------------------------------------
// IPClaim (spec §1.2)
// ---------------------------------------------------------------------------------------------------------------

const ipClaimSchema = root(
  "IPClaim asks an IPPool for one address. The annotation ipAddress asks for a specific one.",
  {
    type: "object",
    description: "IPClaimSpec names the pool to allocate from.",
    properties: {
      pool: {
        ...objectReference("The IPPool to allocate from; namespace empty or the claim's own. Immutable.", true),
        "x-kubernetes-validations": [referenceImmutable(["name", "namespace", "kind"], "pool is immutable")],
      },
    },
    required: ["pool"],
  },
  {
    type: "object",
    description: "IPClaimStatus reports the allocation.",
    properties: {
      address: objectReference("The IPAddress allocated for this claim.", false),
      conditions: conditions("Conditions of the claim: Ready says whether an address is allocated, and why not."),
      errorMessage: str("Why allocation fails, while it does."),
    },
  },
);

/** The IPClaim CRD (spec §1.2). */
export const IPCLAIM_CRD: CrdDefinition = {
  group: GROUP,
  version: VERSION,
  kind: IPCLAIM_KIND,
  listKind: `${IPCLAIM_KIND}List`,
  plural: IPCLAIM.plural,
  singular: "ipclaim",
  shortNames: ["ipc", "ipclaim", "m3ipc", "m3ipclaim", "m3ipclaims", "metal3ipc", "metal3ipclaim", "metal3ipclaims"],
  categories: ["cluster-api"],
  statusSubresource: true,
  selectableFields: [".spec.pool.name"],
  printerColumns: [
    { name: "Pool", type: "string", jsonPath: ".spec.pool.name", description: "IPPool the claim allocates from" },
    { name: "Address", type: "string", jsonPath: ".status.address.name", description: "IPAddress allocated" },
    {
      name: "Ready",
      type: "string",
      jsonPath: `.status.conditions[?(@.type=="${READY_CONDITION}")].status`,
      description: "Whether an address is allocated",
    },
    {
      name: "Error",
      type: "string",
      jsonPath: ".status.errorMessage",
      description: "Why allocation fails",
      priority: 1,
    },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", description: "Time since creation" },
  ],
  schema: ipClaimSchema,
};

// ---------------------------------------------------------------------------------------------------------------
// IPAddress (spec §1.3)
// ---------------------------------------------------------------------------------------------------------------

const ipAddressSchema = root("IPAddress is one address allocated from (or reserved in) an IPPool.", {
  type: "object",
  description:
    "IPAddressSpec holds the address and the network settings that go with it. address, pool (name, namespace, " +
    "kind) and claim (name, namespace) are immutable, as in Metal3; prefix, gateway and dnsServers may change.",
  properties: {
    address: {
      ...ipAddress("The address. Immutable."),
      "x-kubernetes-validations": [{ rule: IMMUTABLE, message: "address is immutable" }],
    },
    claim: {
      ...objectReference("The IPClaim the address was allocated for. name and namespace are immutable.", true),
      "x-kubernetes-validations": [referenceImmutable(["name", "namespace"], "claim is immutable")],
    },
    dnsServers: dnsServers("DNS servers."),
    gateway: ipAddress("Gateway."),
    pool: {
      ...objectReference("The IPPool the address belongs to. name, namespace and kind are immutable.", true),
      "x-kubernetes-validations": [referenceImmutable(["name", "namespace", "kind"], "pool is immutable")],
    },
    // No rule here nor on gateway and dnsServers: they may change (Metal3), and a Go client's full update that
    // omits a zero prefix or an empty list must never be refused.
    prefix: prefixLength("Prefix length."),
  },
  required: ["address", "claim", "pool"],
});

/** The IPAddress CRD (spec §1.3). Category `metal3` as in Metal3; no status, so no status subresource. */
export const IPADDRESS_CRD: CrdDefinition = {
  group: GROUP,
  version: VERSION,
  kind: IPADDRESS_KIND,
  listKind: `${IPADDRESS_KIND}List`,
  plural: IPADDRESS.plural,
  singular: "ipaddress",
  shortNames: [
    "ipa",
    "ipaddress",
    "m3ipa",
    "m3ipaddress",
    "m3ipaddresses",
    "metal3ipa",
    "metal3ipaddress",
    "metal3ipaddresses",
  ],
  categories: ["metal3"],
  statusSubresource: false,
  selectableFields: [".spec.pool.name", ".spec.claim.name"],
  printerColumns: [
    { name: "Address", type: "string", jsonPath: ".spec.address", description: "The address" },
    { name: "Pool", type: "string", jsonPath: ".spec.pool.name", description: "IPPool the address belongs to" },
    { name: "Claim", type: "string", jsonPath: ".spec.claim.name", description: "IPClaim the address is for" },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", description: "Time since creation" },
  ],
  schema: ipAddressSchema,
};

/** All CRDs of the group, in the order they are installed and listed. */
export const CRDS: readonly CrdDefinition[] = [IPPOOL_CRD, IPCLAIM_CRD, IPADDRESS_CRD];
