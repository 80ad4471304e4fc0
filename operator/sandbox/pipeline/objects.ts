/** Pure rules over objects that the write stages share: equality for the no-op skip, merge patch, paths, the fields an endpoint resets, generation. */
import { deepEqual, isObject } from '../../kube/json.ts'
import type { KubeObject, ResourceType } from '../types.ts'

/** Equality of two objects ignoring metadata.resourceVersion (and managedFields unless asked). */
export function sameObject(a: KubeObject, b: KubeObject, withManagedFields: boolean): boolean {
  const { metadata: ma, ...ra } = a
  const { metadata: mb, ...rb } = b
  if (!deepEqual(ra, rb)) return false
  const { resourceVersion: _ra, managedFields: fa, ...xa } = ma
  const { resourceVersion: _rb, managedFields: fb, ...xb } = mb
  if (!deepEqual(xa, xb)) return false
  // A write that changes nothing but managedFields timestamps is no write: kube-apiserver's
  // registry reverts the timestamps (fieldmanager.IgnoreManagedFieldsTimestampsTransformer, after
  // admission), e.g. when a mutating webhook turned an apply's change back into what was stored.
  const untimed = (f: unknown[] | undefined) => (f ?? []).map((e) => (isObject(e) ? { ...e, time: undefined } : e))
  return !withManagedFields || deepEqual(untimed(fa), untimed(fb))
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

/** Fields the endpoint ignores: `status` on the main resource, everything but status on `/status`. */
export function resetFieldsOf(type: ResourceType, subresource: string | undefined): string[][] {
  if (!type.subresources.status) return []
  if (subresource === 'status') return type.custom ? [['spec'], ['metadata']] : [['spec']]
  return [['status']]
}

/**
 * A Deployment's `/status` write keeps the annotations it sends: the deployment status strategy
 * (pkg/registry/apps/deployment/strategy.go, deploymentStatusStrategy.PrepareForUpdate) resets
 * only spec and labels, which is how the deployment controller writes
 * `deployment.kubernetes.io/revision` (sync.go getNewReplicaSet, UpdateStatus).
 */
export function statusKeepsAnnotations(type: ResourceType, target: KubeObject, sent: KubeObject): void {
  if (type.custom || type.group !== 'apps' || type.resource !== 'deployments') return
  const a = sent.metadata.annotations
  if (a !== undefined && a !== null && typeof a === 'object' && Object.keys(a).length > 0) target.metadata.annotations = { ...a }
  else delete target.metadata.annotations
}

/** Generation rules of the reference (§2). */
export function setGeneration(type: ResourceType, old: KubeObject, next: KubeObject, subresource: string | undefined): void {
  if (type.generation === 'none') {
    delete next.metadata.generation
    return
  }
  let g = old.metadata.generation ?? 1
  if (subresource !== 'status') {
    let changed: boolean
    if (type.generation === 'spec') {
      changed = !deepEqual(old.spec, next.spec)
      if (!changed && type.kind === 'Deployment' && type.group === 'apps') changed = !deepEqual(old.metadata.annotations ?? {}, next.metadata.annotations ?? {})
    } else {
      const { metadata: _a, ...ra } = old
      const { metadata: _b, ...rb } = next
      changed = !deepEqual(ra, rb)
    }
    if (changed) g++
  }
  next.metadata.generation = g
}

/** The value at a dotted path (`spec.replicas`), undefined where the path is missing. */
export function getPath(obj: unknown, path: string): unknown {
  let cur = obj
  for (const part of path.split('.').filter((p) => p !== '')) cur = isObject(cur) ? cur[part] : undefined
  return cur
}

/** Sets the value at a dotted path, creating the objects on the way. */
export function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.').filter((p) => p !== '')
  let cur = obj
  for (const part of parts.slice(0, -1)) {
    if (!isObject(cur[part])) cur[part] = {}
    cur = cur[part] as Record<string, unknown>
  }
  const last = parts[parts.length - 1]
  if (last !== undefined) cur[last] = value
}
