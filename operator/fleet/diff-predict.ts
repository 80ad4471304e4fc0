/**
 * What the operator would do with one rendered object, as `diff` predicts it: the same decisions
 * as its reconcile (operator/reconcile/reconciler.ts), from the same rules — an object somebody
 * else controls is left alone (owner.ts `ownershipConflicts`), a field the server will not change
 * in place makes it delete and re-create the object (recreate.ts), an optional kind the cluster
 * does not serve is left out, and this CR's objects it no longer renders are pruned.
 */
import { isDeepStrictEqual } from 'node:util'
import type { KubeObject } from '../controller/client.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { yamlText } from '../render/manifest.ts'
import { objectKey, ownershipConflicts } from '../reconcile/owner.ts'
import { whyNotRecreate, type ImmutableChange } from '../reconcile/recreate.ts'
import { hashDesired } from '../reconcile/applied.ts'
import type { Memcached } from '../api/memcached.ts'

/** What applying the render does to one object. */
export type Action = 'none' | 'update' | 'create' | 'recreate' | 'prune' | 'conflict' | 'omit'

/** One object's line of the summary (`diff -o json`). */
export interface ObjectPrediction {
  apiVersion: string
  kind: string
  namespace: string
  name: string
  action: Action
  /** The pod template changes (or the workload is re-created): its pods are replaced. */
  podsRestart: boolean
  /** Why: the immutable field, the conflict, the kind not served. */
  reason?: string
  /** The live object as read: what a later rollout expects to find still (docs/fleet.md). */
  live?: { uid: string; resourceVersion: string; hash: string }
  /** sha256 of the object rendered (reconcile/applied.ts hashDesired). */
  desiredHash?: string
}

/** Kinds whose `spec.template` is a pod template: a change of it rolls their pods. */
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet'])

/** Whether objects of `kind` run pods from a template (re-creating one replaces its pods). */
export const isWorkload = (kind: string): boolean => WORKLOADS.has(kind)

/** Whether applying `after` over `before` replaces the pods of a workload. */
export function podsRestart(kind: string, before: KubeObject | undefined, after: KubeObject | undefined): boolean {
  if (!WORKLOADS.has(kind) || before === undefined || after === undefined) return false
  const template = (o: KubeObject) => (o as { spec?: { template?: unknown } }).spec?.template
  return !isDeepStrictEqual(template(before), template(after))
}

/**
 * The ownership conflict the operator would report for `d` (OwnershipConflict: the object exists,
 * and neither this CR controls it nor is it this instance's orphan): its message, or undefined.
 */
export function conflictOf(d: RenderedObject, live: KubeObject | undefined, cr: Pick<Memcached, 'metadata'>): string | undefined {
  if (live === undefined) return undefined
  return ownershipConflicts([d], new Map([[objectKey(d), live]]), cr)[0]?.message
}

/**
 * Why the operator would not re-create `live` for an immutable `change` (it reports
 * ImmutableField instead), or undefined when it would.
 */
export function recreateRefused(d: RenderedObject, live: KubeObject, ownerUid: string | undefined): string | undefined {
  return whyNotRecreate({ desired: d, live, ownerUid, desiredHash: '', recreatedFor: undefined })
}

/** The message of a re-creation, in the operator's words (its `Recreated` event). */
export function recreateReason(change: ImmutableChange): string {
  return `deleted and re-created: ${change.message}`
}

/**
 * sha256 of a live object without what the server and the controllers write on their own (its
 * status, resourceVersion, generation, managedFields): it changes when somebody changes the
 * object, not when its pods become ready.
 */
export function liveHash(obj: KubeObject): string {
  const { managedFields: _m, resourceVersion: _r, generation: _g, ...metadata } = obj.metadata as KubeObject['metadata']
  const { status: _s, metadata: _meta, ...rest } = obj as KubeObject & { status?: unknown }
  return hashDesired({ ...rest, metadata })
}

/** What the server keeps for itself; kubectl diff hides managedFields, and the rest is noise of a dry run. */
export function comparable(obj: KubeObject | RenderedObject | undefined): string {
  return obj ? yamlText(withoutServerFields(obj)) : ''
}

/** The object without what {@link comparable} leaves out. */
function withoutServerFields(obj: KubeObject | RenderedObject): Record<string, unknown> {
  const { managedFields: _m, resourceVersion: _r, generation: _g, uid: _u, creationTimestamp: _c, ...metadata } = obj.metadata as KubeObject['metadata']
  const { apiVersion, kind, metadata: _meta, ...rest } = obj
  return { apiVersion, kind, metadata, ...rest }
}

/** Whether {@link comparable} would show no difference between `a` and `b`, without writing either as YAML. */
export function sameComparable(a: KubeObject | undefined, b: KubeObject): boolean {
  return a !== undefined && isDeepStrictEqual(withoutServerFields(a), withoutServerFields(b))
}
