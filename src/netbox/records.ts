/** NetBox's JSON records as the client's types; anything malformed is a ServerError, never a crash later on. */
import { NetBoxError } from "./errors.js";
import type { AllocationRequest, NetBoxAddress } from "./types.js";

type Json = Record<string, unknown>;

function object(value: unknown, what: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new NetBoxError(`NetBox answered ${what} with something that is not an object`, "ServerError");
  return value as Json;
}

function field<T>(record: Json, key: string, type: "number" | "string", what: string): T {
  const value = record[key];
  if (typeof value !== type) throw new NetBoxError(`NetBox's ${what} has no ${type} field ${key}`, "ServerError");
  return value as T;
}

/** The id of a nested object (`"vrf": {"id": 3, ...}`) or undefined for null. */
function nestedId(value: unknown): number | undefined {
  if (typeof value === "object" && value !== null && typeof (value as Json).id === "number")
    return (value as Json).id as number;
  return undefined;
}

export function addressOf(value: unknown): NetBoxAddress {
  const record = object(value, "an IP address");
  const tags = Array.isArray(record.tags) ? record.tags : [];
  const tenantId = nestedId(record.tenant);
  const vrfId = nestedId(record.vrf);
  return {
    id: field<number>(record, "id", "number", "IP address"),
    address: field<string>(record, "address", "string", "IP address"),
    description: typeof record.description === "string" ? record.description : "",
    dnsName: typeof record.dns_name === "string" ? record.dns_name : "",
    tags: tags.map((t) => (typeof t === "object" && t !== null ? (t as Json).slug : undefined)).filter(isString),
    status: statusOf(record.status),
    ...(tenantId !== undefined ? { tenantId } : {}),
    ...(vrfId !== undefined ? { vrfId } : {}),
  };
}

const isString = (v: unknown): v is string => typeof v === "string";

/** NetBox answers a choice field as `{"value": "active", "label": "Active"}`. */
function statusOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "object" && value !== null && typeof (value as Json).value === "string")
    return (value as Json).value as string;
  return "";
}

/** One element of an available-ips POST body. */
export function allocationBody(request: AllocationRequest): Json {
  return {
    description: request.description,
    ...(request.tags && request.tags.length > 0 ? { tags: request.tags.map((slug) => ({ slug })) } : {}),
    ...(request.tenantId !== undefined ? { tenant: request.tenantId } : {}),
    ...(request.dnsName !== undefined ? { dns_name: request.dnsName } : {}),
    ...(request.comments !== undefined ? { comments: request.comments } : {}),
    ...(request.customFields !== undefined ? { custom_fields: request.customFields } : {}),
  };
}

/** A list page: `{count, next, previous, results}`. */
export function pageOf(value: unknown, what: string): { count: number; results: unknown[] } {
  const record = object(value, what);
  if (typeof record.count !== "number" || !Array.isArray(record.results))
    throw new NetBoxError(`NetBox answered ${what} with something that is not a list page`, "ServerError");
  return { count: record.count, results: record.results as unknown[] };
}

export interface PrefixRecord {
  id: number;
  prefix: string;
  vrfId?: number;
  isPool: boolean;
}

export function prefixOf(value: unknown): PrefixRecord {
  const record = object(value, "a prefix");
  const vrfId = nestedId(record.vrf);
  return {
    id: field<number>(record, "id", "number", "prefix"),
    prefix: field<string>(record, "prefix", "string", "prefix"),
    isPool: record.is_pool === true,
    ...(vrfId !== undefined ? { vrfId } : {}),
  };
}

export interface RangeRecord {
  id: number;
  start: string;
  end: string;
  size: number;
  vrfId?: number;
}

export function rangeOf(value: unknown): RangeRecord {
  const record = object(value, "an IP range");
  const vrfId = nestedId(record.vrf);
  return {
    id: field<number>(record, "id", "number", "IP range"),
    start: field<string>(record, "start_address", "string", "IP range"),
    end: field<string>(record, "end_address", "string", "IP range"),
    size: field<number>(record, "size", "number", "IP range"),
    ...(vrfId !== undefined ? { vrfId } : {}),
  };
}
