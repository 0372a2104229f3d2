/**
 * CustomResourceDefinitions for the Cluster API in-cluster IPAM provider's pool kinds, `InClusterIPPool` (namespaced)
 * and `GlobalInClusterIPPool` (cluster-scoped), `ipam.cluster.x-k8s.io/v1alpha2` (docs/incluster.md).
 * `hack/generate-crds.ts` renders them into `config/crd/incluster/`, an OPTIONAL kustomize component
 * (`config/components/incluster`), never part of `config/crd`: clusters that run that provider keep its CRDs.
 *
 * Compatibility rule: an object the provider's v1alpha2 CRDs accept is accepted here with the same meaning, and the
 * reverse, so either set of CRDs can serve the same objects. The schemas therefore mirror the provider's field for
 * field, without address patterns (the admission rules in src/ipam/incluster-validation.ts check addresses, as the
 * provider's webhook does). No schema defaults either, as in the provider's: an absent `allocateReservedIPAddresses`
 * means false (a Go bool's zero value) without being written into stored objects, so objects read back are what was
 * applied, whichever CRDs serve them.
 * The provider's deprecated v1alpha1 is served too (not stored; `deprecated: true` with a warning): the CRDs name
 * our webhook Service's {@link CONVERSION_WEBHOOK_PATH} as their conversion webhook (src/webhooks/conversion.ts),
 * whose CA bundle comes from cert-manager (config/default) or the controller (self-managed mode, src/certs).
 * What is not served: the provider's prefix pools. Plain data, no runtime dependencies.
 */

import { GLOBAL_INCLUSTER_IPPOOL, INCLUSTER_IPPOOL } from "../registry.js";
import type {
  ConversionWebhook,
  CrdDefinition,
  JSONSchemaProps,
  PrinterColumn,
  ServedVersion,
} from "../v1alpha1/schema.js";
import {
  GLOBAL_INCLUSTER_IPPOOL_KIND,
  INCLUSTER_DEPRECATED_VERSION,
  INCLUSTER_GROUP,
  INCLUSTER_IPPOOL_KIND,
  INCLUSTER_VERSION,
} from "./types.js";

/** Path of the conversion webhook on the webhook server (the kubebuilder convention, the provider's too). */
export const CONVERSION_WEBHOOK_PATH = "/convert";

/** The conversion webhook both CRDs name: config/webhook's Service, which config/default renames and re-namespaces. */
export const INCLUSTER_CONVERSION: ConversionWebhook = {
  service: "webhook-service",
  namespace: "system",
  path: CONVERSION_WEBHOOK_PATH,
};

function str(description: string): JSONSchemaProps {
  return { type: "string", description };
}

function count(description: string): JSONSchemaProps {
  return { type: "integer", description };
}

function addressList(description: string): JSONSchemaProps {
  return { type: "array", description, items: { type: "string" } };
}

function spec(): JSONSchemaProps {
  return {
    type: "object",
    description: "The addresses of the pool and the network settings handed out with them.",
    properties: {
      addressReuseGracePeriodSeconds: {
        type: "integer",
        format: "int32",
        minimum: 0,
        description:
          "Seconds a released address stays held before it is handed out again (against ARP caches that still " +
          "point at the previous holder). Absent or 0: reused at once.",
      },
      addresses: addressList(
        "Addresses to hand out, each a single IP, an inclusive range first-last, or a CIDR (all of its addresses); " +
          "one address family; they need not be contiguous.",
      ),
      allocateReservedIPAddresses: {
        type: "boolean",
        description:
          "Also hand out (default false) the reserved addresses of the subnet (lowest address of addresses)/prefix: its first address " +
          "(IPv4 network, IPv6 subnet-router anycast) and, on IPv4, its last (broadcast).",
      },
      excludedAddresses: addressList("Addresses never handed out, in the forms addresses takes."),
      gateway: str("Gateway handed out with every address; never handed out itself."),
      prefix: {
        type: "integer",
        minimum: 0,
        maximum: 128,
        description: "Prefix length handed out with every address; with the lowest address it defines the subnet.",
      },
    },
    required: ["addresses", "prefix"],
  };
}

function status(): JSONSchemaProps {
  return {
    type: "object",
    description: "What the pool holds, as counted from the IPAddresses that refer to it.",
    properties: {
      ipAddresses: {
        type: "object",
        description: "Address counts; counts beyond the int64 range are capped near 2^63.",
        properties: {
          free: count("total - used; negative when addresses outside the pool are in use."),
          outOfRange: count("Addresses in use that the pool no longer hands out."),
          total: count("Addresses the pool hands out."),
          used: count("IPAddresses referring to the pool, out-of-range ones included."),
        },
        required: ["free", "outOfRange", "total", "used"],
      },
    },
  };
}

/** The provider's v1alpha1 spec: every field optional, prefix at most 128 (no lower bound, as in its CRD). */
function v1alpha1Spec(): JSONSchemaProps {
  return {
    type: "object",
    description:
      "v1alpha1 (deprecated) pool: addresses, or a subnet whose addresses from start to end are handed out. " +
      "Converted to v1alpha2: start-end is appended to addresses.",
    properties: {
      addresses: addressList(
        "Addresses to hand out (single IPs, ranges first-last, CIDRs); may be omitted with subnet.",
      ),
      end: str("Last address handed out; default the second-to-last address of subnet."),
      gateway: str("Gateway handed out with every address."),
      prefix: {
        type: "integer",
        maximum: 128,
        description: "Prefix length handed out with every address; default (0) the prefix length of subnet.",
      },
      start: str("First address handed out; default the second address of subnet."),
      subnet: str("CIDR the addresses from start to end are taken from."),
    },
  };
}

function poolSchema(description: string, specSchema: JSONSchemaProps = spec()): JSONSchemaProps {
  return {
    type: "object",
    description,
    properties: {
      apiVersion: str("Versioned schema of this representation of an object."),
      kind: str("REST resource this object represents, in CamelCase."),
      metadata: { type: "object" },
      spec: specSchema,
      status: status(),
    },
  };
}

/** The provider's columns (it declares no Age column, so `kubectl get` shows none either; we match it). */
function printerColumns(): PrinterColumn[] {
  return [
    { name: "Addresses", type: "string", jsonPath: ".spec.addresses", description: "Addresses to hand out" },
    { name: "Total", type: "integer", jsonPath: ".status.ipAddresses.total", description: "Addresses in the pool" },
    { name: "Free", type: "integer", jsonPath: ".status.ipAddresses.free", description: "Addresses not in use" },
    { name: "Used", type: "integer", jsonPath: ".status.ipAddresses.used", description: "Addresses in use" },
  ];
}

/**
 * The provider's v1alpha1 columns, with `start` and `end` read from the fields that hold them (the provider's CRD
 * names `.spec.first` and `.spec.last`, which do not exist, so its columns stay empty).
 */
function v1alpha1Columns(): PrinterColumn[] {
  return [
    { name: "Subnet", type: "string", jsonPath: ".spec.subnet", description: "Subnet to allocate from" },
    { name: "First", type: "string", jsonPath: ".spec.start", description: "First address handed out" },
    { name: "Last", type: "string", jsonPath: ".spec.end", description: "Last address handed out" },
    ...printerColumns(),
  ];
}

/** v1alpha1 of `kind`, served beside v1alpha2. */
function deprecatedVersion(kind: string, description: string): ServedVersion {
  return {
    name: INCLUSTER_DEPRECATED_VERSION,
    schema: poolSchema(description, v1alpha1Spec()),
    printerColumns: v1alpha1Columns(),
    deprecationWarning: `${INCLUSTER_GROUP}/${INCLUSTER_DEPRECATED_VERSION} ${kind} is deprecated; use ${INCLUSTER_GROUP}/${INCLUSTER_VERSION} ${kind}`,
  };
}

/** `InClusterIPPool`: claims of its own namespace allocate from it. */
export const INCLUSTER_IPPOOL_CRD: CrdDefinition = {
  group: INCLUSTER_GROUP,
  version: INCLUSTER_VERSION,
  kind: INCLUSTER_IPPOOL_KIND,
  listKind: `${INCLUSTER_IPPOOL_KIND}List`,
  plural: INCLUSTER_IPPOOL.plural,
  singular: "inclusterippool",
  scope: "Namespaced",
  shortNames: [],
  categories: ["cluster-api"],
  statusSubresource: true,
  printerColumns: printerColumns(),
  schema: poolSchema("InClusterIPPool is a pool of addresses for the IPAddressClaims of its namespace."),
  servedVersions: [
    deprecatedVersion(
      INCLUSTER_IPPOOL_KIND,
      "InClusterIPPool is a pool of addresses for the IPAddressClaims of its namespace.",
    ),
  ],
  conversion: INCLUSTER_CONVERSION,
};

/** `GlobalInClusterIPPool`: cluster-scoped, claims of every namespace allocate from it. */
export const GLOBAL_INCLUSTER_IPPOOL_CRD: CrdDefinition = {
  group: INCLUSTER_GROUP,
  version: INCLUSTER_VERSION,
  kind: GLOBAL_INCLUSTER_IPPOOL_KIND,
  listKind: `${GLOBAL_INCLUSTER_IPPOOL_KIND}List`,
  plural: GLOBAL_INCLUSTER_IPPOOL.plural,
  singular: "globalinclusterippool",
  scope: "Cluster",
  shortNames: [],
  categories: ["cluster-api"],
  statusSubresource: true,
  printerColumns: printerColumns(),
  schema: poolSchema(
    "GlobalInClusterIPPool is a cluster-scoped pool of addresses for IPAddressClaims of any namespace.",
  ),
  servedVersions: [
    deprecatedVersion(
      GLOBAL_INCLUSTER_IPPOOL_KIND,
      "GlobalInClusterIPPool is a cluster-scoped pool of addresses for IPAddressClaims of any namespace.",
    ),
  ],
  conversion: INCLUSTER_CONVERSION,
};

/** Both, in the order they are installed and listed. */
export const INCLUSTER_CRDS: readonly CrdDefinition[] = [INCLUSTER_IPPOOL_CRD, GLOBAL_INCLUSTER_IPPOOL_CRD];
