/** Pure helpers on object metadata: finalizers, pause, deletion, ordering. */
import { DELETE_FOR_MOVE_ANNOTATION, PAUSED_ANNOTATION, type ObjectMeta } from "../../api/v1alpha1/types.js";

export const hasFinalizer = (meta: ObjectMeta, finalizer: string): boolean =>
  (meta.finalizers ?? []).includes(finalizer);

/** True when the only finalizers left are ours (or none): the object is ours to release. */
export function onlyOurFinalizers(meta: ObjectMeta, ours: readonly string[]): boolean {
  return (meta.finalizers ?? []).every((f) => ours.includes(f));
}

export const isDeleting = (meta: ObjectMeta): boolean => Boolean(meta.deletionTimestamp);

/**
 * Being deleted by `clusterctl move` from the source cluster (spec §7): clusterctl annotates, deletes, then strips
 * every finalizer itself. Nothing is released for such an object: its addresses either moved along (clusterctl
 * deletes their source copies too) or stay reserved with a pool that did not move.
 */
export const isDeletedForMove = (meta: ObjectMeta): boolean =>
  isDeleting(meta) && DELETE_FOR_MOVE_ANNOTATION in (meta.annotations ?? {});

export const hasPausedAnnotation = (meta: ObjectMeta): boolean => PAUSED_ANNOTATION in (meta.annotations ?? {});

/**
 * Name order by UTF-16 code units, not `localeCompare`: the same order for Kubernetes names, and no ICU collator (its
 * data and code add to the process's resident memory).
 */
export function byName(a: { metadata: ObjectMeta }, b: { metadata: ObjectMeta }): number {
  const na = a.metadata.name ?? "";
  const nb = b.metadata.name ?? "";
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/** Claim order of spec §3.4: creation time, then name. Deterministic for any input. */
export function byCreationThenName(a: { metadata: ObjectMeta }, b: { metadata: ObjectMeta }): number {
  const ta = a.metadata.creationTimestamp ?? "";
  const tb = b.metadata.creationTimestamp ?? "";
  if (ta !== tb) return ta < tb ? -1 : 1;
  return byName(a, b);
}
