/**
 * CustomResourceDefinitions of the NetBox pool kinds (api/netbox/types.ts), rendered by `hack/generate-crds.ts` into
 * `config/crd/bases/` with ours. The structural rules a user gets wrong most (one of prefix and range; a way to find
 * each) are CEL rules of the schema, so `kubectl apply` refuses them with the field named; what only NetBox can
 * answer (does the prefix exist, is the token good) is reported on the pool's Ready condition and on its claims.
 * Plain data, no runtime dependencies.
 */
import { GLOBAL_NETBOX_IPPOOL, NETBOX_IPPOOL } from "../registry.js";
import type { CrdDefinition, JSONSchemaProps, PrinterColumn, ValidationRule } from "../v1alpha1/schema.js";
import { GLOBAL_NETBOX_IPPOOL_KIND, MAX_FALLBACKS, NETBOX_GROUP, NETBOX_IPPOOL_KIND, NETBOX_VERSION } from "./types.js";

const str = (description: string, extra: Partial<JSONSchemaProps> = {}): JSONSchemaProps => ({
  type: "string",
  description,
  ...extra,
});
const int = (description: string, extra: Partial<JSONSchemaProps> = {}): JSONSchemaProps => ({
  type: "integer",
  format: "int64",
  description,
  ...extra,
});

/**
 * Why where a pool takes its addresses from may not change: the records it made in NetBox would be left there, held
 * by nobody. A pool is moved by creating another and moving its claims.
 */
const IMMUTABLE_WHY = (field: string): string =>
  `${field} is immutable: the pool's records in NetBox would be left behind; create a new pool instead`;

/** A transition rule: the field keeps its value once set (`kubectl apply` refuses a change with the reason). */
const immutable = (field: string): ValidationRule => ({ rule: "self == oldSelf", message: IMMUTABLE_WHY(field) });

function instance(): JSONSchemaProps {
  return {
    type: "object",
    description: "The NetBox instance: the Secret holding its token and naming it.",
    properties: {
      url: str(
        "Deprecated: the Secret's url key names NetBox. When set it must equal the Secret's url, or no request is " +
          "made. It may change (set to the Secret's url, or removed): the Secret, which may not, decides.",
        { pattern: "^https?://", minLength: 8, maxLength: 2048 },
      ),
      credentialsRef: {
        type: "object",
        description:
          "The Secret in the controller's namespace holding the API token, the NetBox URL it is for (key url) and " +
          "optionally a CA added to the system roots (key ca.crt); a namespaced pool may use it when the Secret's " +
          "netbox.ipam.cluster.x-k8s.io/allowed-namespaces annotation names the pool's namespace or *. Immutable.",
        properties: {
          name: str("Name of the Secret.", { minLength: 1, maxLength: 253 }),
          key: str("Key of the token in the Secret's data; default token.", { maxLength: 253 }),
        },
        required: ["name"],
        "x-kubernetes-validations": [immutable("credentialsRef")],
      },
      caBundle: str("Deprecated: the Secret's ca.crt. Ignored for NetBoxIPPools and beside the Secret's ca.crt."),
    },
    required: ["credentialsRef"],
  };
}

/**
 * `customFields`: NetBox custom field names to a string, number or boolean each. A value of several types can only be
 * an untyped node (`x-kubernetes-preserve-unknown-fields`), and the API server compiles no CEL rule over a map of
 * such values, so the schema bounds the count only; names, value types and lengths are checked by the controller
 * before NetBox is called (src/controllers/netbox/customfields.ts), failing the pool's claims with the field named.
 */
function customFields(): JSONSchemaProps {
  const value = {
    description: "A string (at most 256 characters), a number or a boolean.",
    "x-kubernetes-preserve-unknown-fields": true,
  } as Omit<JSONSchemaProps, "type"> as JSONSchemaProps;
  return {
    type: "object",
    description:
      "NetBox custom fields set on each record the pool creates: name to a string, number or boolean. Each must " +
      "exist in NetBox for IP addresses, with a type that takes the value.",
    maxProperties: 16,
    additionalProperties: value,
  };
}

const ID = int("NetBox id.", { minimum: 1 });
const VRF_ID = int("NetBox VRF id, when the CIDR or bounds are not unique across VRFs.", { minimum: 1 });
const ADDRESS_PREFIX = { minimum: 0, maximum: 128 };
const GATEWAY = { maxLength: 64 };

/** A prefix by id or CIDR (and VRF); `extra` are the rules beside "id or cidr". */
function prefixRef(description: string, extra: ValidationRule[] = []): JSONSchemaProps {
  return {
    type: "object",
    description,
    properties: { id: ID, cidr: str("CIDR of the prefix, e.g. 10.0.0.0/24.", { maxLength: 64 }), vrfId: VRF_ID },
    "x-kubernetes-validations": [
      { rule: "has(self.id) || has(self.cidr)", message: "prefix needs id or cidr" },
      ...extra,
    ],
  };
}

/** An IP range by id or bounds (and VRF); `extra` are the rules beside "id or bounds". */
function rangeRef(description: string, extra: ValidationRule[] = []): JSONSchemaProps {
  return {
    type: "object",
    description,
    properties: {
      id: ID,
      start: str("First address of the range.", { maxLength: 64 }),
      end: str("Last address of the range.", { maxLength: 64 }),
      vrfId: VRF_ID,
    },
    "x-kubernetes-validations": [
      { rule: "has(self.id) || (has(self.start) && has(self.end))", message: "range needs id or start and end" },
      ...extra,
    ],
  };
}

/**
 * Why a fallback may not change or go: the records the pool made there would be left behind, held by nobody.
 * Appending is what fills a pool up again, so it is allowed.
 */
const FALLBACKS_WHY =
  "fallbacks may only be appended to: an entry's prefix or range may not change, and entries may not be removed or " +
  "reordered (the pool's records there would be left behind); create a new pool instead";

/**
 * `fallbacks` keeps its entries' places: for each index the old list has, the new list has an entry there naming the
 * same prefix or range (gateway and addressPrefix may change). Written out per index (the list is bounded), so it
 * needs no CEL library beyond the core.
 */
function appendOnly(): ValidationRule {
  const indexes = Array.from({ length: MAX_FALLBACKS }, (_, i) => i).join(", ");
  const same = (field: string): string =>
    `has(self[i].${field}) == has(oldSelf[i].${field}) && (!has(self[i].${field}) || self[i].${field} == oldSelf[i].${field})`;
  return {
    rule:
      `size(self) >= size(oldSelf) && [${indexes}].all(i, i >= size(oldSelf) || ` +
      `(${same("prefix")} && ${same("range")}))`,
    message: FALLBACKS_WHY,
  };
}

function fallbacks(): JSONSchemaProps {
  return {
    type: "array",
    description:
      "Further NetBox prefixes or ranges, tried in order once the earlier ones are full (at most 8; of the first " +
      "source's family). Entries may be appended; they may not change, be removed or be reordered.",
    maxItems: MAX_FALLBACKS,
    "x-kubernetes-list-type": "atomic",
    items: {
      type: "object",
      description: "Exactly one of prefix and range, with the gateway and prefix length of its IPAddresses.",
      properties: {
        prefix: prefixRef("A NetBox prefix: by id, or by CIDR (and VRF)."),
        range: rangeRef("A NetBox IP range: by id, or by its first and last address (and VRF)."),
        gateway: str("Gateway written on this source's IPAddresses; default: the one NetBox records, if any.", GATEWAY),
        addressPrefix: int("Prefix length written on this source's IPAddresses; default: NetBox's.", ADDRESS_PREFIX),
      },
      "x-kubernetes-validations": [
        { rule: "has(self.prefix) != has(self.range)", message: "each fallback has exactly one of prefix and range" },
      ],
    },
    "x-kubernetes-validations": [appendOnly()],
  };
}

function spec(): JSONSchemaProps {
  return {
    type: "object",
    description: "Which NetBox prefixes or ranges hand out the addresses, and what each IPAddress carries.",
    properties: {
      netbox: instance(),
      prefix: prefixRef("A NetBox prefix: by id, or by CIDR (and VRF). Immutable.", [immutable("prefix")]),
      range: rangeRef("A NetBox IP range: by id, or by its first and last address (and VRF). Immutable.", [
        immutable("range"),
      ]),
      fallbacks: fallbacks(),
      addressPrefix: int(
        "Prefix length written on each IPAddress of the first source; default: NetBox's.",
        ADDRESS_PREFIX,
      ),
      gateway: str(
        "Gateway written on each IPAddress of the first source; default: the IP address NetBox tags gateway in " +
          "its subnet, if any.",
      ),
      tenantId: int("NetBox tenant id set on each record.", { minimum: 1 }),
      tags: { type: "array", description: "Tag slugs set on each record besides ours.", items: { type: "string" } },
      dnsNameTemplate: str("DNS name of each record; {namespace}, {name} and {cluster} are the claim's."),
      customFields: customFields(),
    },
    required: ["netbox"],
    "x-kubernetes-validations": [
      { rule: "has(self.prefix) != has(self.range)", message: "exactly one of prefix and range must be set" },
      { rule: "has(self.prefix) == has(oldSelf.prefix)", message: IMMUTABLE_WHY("the choice of prefix or range") },
      {
        rule: "has(self.fallbacks) || !has(oldSelf.fallbacks) || size(oldSelf.fallbacks) == 0",
        message: FALLBACKS_WHY,
      },
    ],
  };
}

function status(): JSONSchemaProps {
  return {
    type: "object",
    description: "NetBox's view of the pool, and whether NetBox answers.",
    properties: {
      ipAddresses: {
        type: "object",
        description: "NetBox's utilisation of the prefixes and ranges, summed (everyone's addresses, not only ours).",
        properties: { total: int("Addresses."), used: int("In use in NetBox."), free: int("total - used.") },
      },
      netbox: {
        type: "object",
        description: "The first prefix or range the pool resolved to.",
        properties: { kind: str("prefix or ip-range."), id: int("NetBox id."), display: str("How people name it.") },
      },
      sources: {
        type: "array",
        description: "Every prefix or range of the pool, in the order they are tried, with NetBox's utilisation.",
        items: {
          type: "object",
          properties: {
            kind: str("prefix or ip-range."),
            id: int("NetBox id."),
            display: str("How people name it."),
            total: int("Addresses."),
            used: int("In use in NetBox."),
            free: int("total - used."),
          },
        },
      },
      conditions: {
        type: "array",
        description: "Ready: whether NetBox answers and the prefix or range exists.",
        items: {
          type: "object",
          properties: {
            type: str("Condition type."),
            status: str("True, False or Unknown."),
            reason: str("Why, in one word."),
            message: str("Why, for people."),
            lastTransitionTime: str("When status last changed.", { format: "date-time" }),
          },
          required: ["type", "status", "reason", "message", "lastTransitionTime"],
        },
      },
    },
  };
}

function poolSchema(description: string): JSONSchemaProps {
  return {
    type: "object",
    description,
    properties: {
      apiVersion: str("Versioned schema of this representation of an object."),
      kind: str("REST resource this object represents, in CamelCase."),
      metadata: { type: "object" },
      spec: spec(),
      status: status(),
    },
    required: ["spec"],
  };
}

function printerColumns(): PrinterColumn[] {
  return [
    { name: "NetBox", type: "string", jsonPath: ".status.netbox.display", description: "Prefix or range in NetBox" },
    { name: "Total", type: "integer", jsonPath: ".status.ipAddresses.total", description: "Addresses in NetBox" },
    { name: "Used", type: "integer", jsonPath: ".status.ipAddresses.used", description: "In use in NetBox" },
    {
      name: "Ready",
      type: "string",
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      description: "NetBox answers",
    },
    { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp", description: "Time since creation" },
  ];
}

export const NETBOX_IPPOOL_CRD: CrdDefinition = {
  group: NETBOX_GROUP,
  version: NETBOX_VERSION,
  kind: NETBOX_IPPOOL_KIND,
  listKind: `${NETBOX_IPPOOL_KIND}List`,
  plural: NETBOX_IPPOOL.plural,
  singular: "netboxippool",
  scope: "Namespaced",
  shortNames: [],
  categories: ["cluster-api"],
  statusSubresource: true,
  printerColumns: printerColumns(),
  schema: poolSchema("NetBoxIPPool hands out addresses NetBox allocates, to the IPAddressClaims of its namespace."),
};

export const GLOBAL_NETBOX_IPPOOL_CRD: CrdDefinition = {
  group: NETBOX_GROUP,
  version: NETBOX_VERSION,
  kind: GLOBAL_NETBOX_IPPOOL_KIND,
  listKind: `${GLOBAL_NETBOX_IPPOOL_KIND}List`,
  plural: GLOBAL_NETBOX_IPPOOL.plural,
  singular: "globalnetboxippool",
  scope: "Cluster",
  shortNames: [],
  categories: ["cluster-api"],
  statusSubresource: true,
  printerColumns: printerColumns(),
  schema: poolSchema("GlobalNetBoxIPPool hands out addresses NetBox allocates, to IPAddressClaims of any namespace."),
};

export const NETBOX_CRDS: readonly CrdDefinition[] = [NETBOX_IPPOOL_CRD, GLOBAL_NETBOX_IPPOOL_CRD];
