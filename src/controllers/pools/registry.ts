/**
 * The pool kinds one controller serves, looked up by group and kind. Built once by the manager (the wiring) and handed
 * to whatever maps a reference onto a pool, so the claim lifecycles never import a kind themselves.
 */
import type { PoolKind, PoolObject } from "./kind.js";
import { poolKeyOf } from "./indexes.js";
import { keyOfPool } from "./kind.js";

/** A claim's or record's reference to its pool (`TypedLocalObjectReference`, as the Cluster API contract has it). */
export interface PoolReference {
  apiGroup?: string;
  kind?: string;
  name?: string;
}

export class PoolKinds {
  private readonly byGroupKind = new Map<string, PoolKind>();

  constructor(readonly all: readonly PoolKind[]) {
    for (const kind of all) this.byGroupKind.set(`${kind.descriptor.kind}.${kind.descriptor.group}`, kind);
  }

  /** The kind `group`/`kind` names, if we serve it. */
  find(group: string | undefined, kind: string | undefined): PoolKind | undefined {
    return group && kind ? this.byGroupKind.get(`${kind}.${group}`) : undefined;
  }

  /**
   * The key of the pool `ref` names, seen from an object in `namespace`: a namespaced kind is looked up in that
   * namespace, a cluster-scoped one by name alone. Undefined for a kind we do not serve or an empty name.
   */
  keyOfRef(ref: PoolReference | undefined, namespace: string): string | undefined {
    const kind = this.find(ref?.apiGroup, ref?.kind);
    if (!kind || !ref?.name) return undefined;
    const { group, kind: kindName, namespaced } = kind.descriptor;
    return poolKeyOf({ group, kind: kindName, namespace: namespaced ? namespace : "", name: ref.name });
  }

  /**
   * The kind a reference that names no pool of ours exactly still means, or undefined when it means someone else's:
   * group and kind of ours; an empty `apiGroup` with the name of one of our kinds (the core group has no pools); an
   * empty `kind` in a group of ours (the group's first kind). A reference to another group's kind is another
   * provider's and yields undefined, as does one with neither group nor kind.
   */
  intendedKind(ref: PoolReference | undefined): PoolKind | undefined {
    const group = ref?.apiGroup ?? "";
    const kind = ref?.kind ?? "";
    if (group && kind) return this.find(group, kind);
    if (kind) return this.all.find((k) => k.descriptor.kind === kind);
    if (group) return this.all.find((k) => k.descriptor.group === group);
    return undefined;
  }

  /** The key of a pool object of `kind`. */
  keyOf(kind: PoolKind, pool: PoolObject): string {
    return keyOfPool(kind, pool);
  }
}
