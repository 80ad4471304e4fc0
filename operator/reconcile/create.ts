/**
 * Creating an object that the operator's own (label-filtered) cache does not show, without ever
 * writing to somebody else's object of the same name, and without a cache of everybody else's
 * objects.
 *
 * A POST is the only write that cannot land on an existing object: the API server answers 409
 * AlreadyExists and changes nothing (apiserver registry/generic/registry/store.go `Create`). A
 * server-side apply upserts: with `metadata.resourceVersion` unset it updates whatever is there,
 * and with it set it cannot say "create only" either (on an absent object it creates anyway for
 * some kinds and fails with "resourceVersion should not be set on objects to be created" for
 * others, kubernetes/kubernetes#106745). So, as controller-runtime's `CreateOrUpdate` and
 * client-go's `Create` + `IsAlreadyExists` idiom do: POST, and on AlreadyExists GET the object
 * and judge it as it is (its controller reference and labels), never by when it was created.
 *
 * A POST records its fields under an `Update` managedFields entry of our manager, which also holds
 * every field the server defaulted while decoding the request (structured-merge-diff
 * merge/update.go: an update owns what it added). Our later applies own their fields under a
 * separate `Apply` entry, and a field both entries hold is co-owned: removed from the render, the
 * apply would drop our Apply ownership and leave the field there (held by the Update entry).
 * {@link takeOwnership} therefore turns that Update entry into our Apply entry, keeping only the
 * fields the render sets (the defaults become nobody's, as after a server-side apply create),
 * with one JSON patch of `metadata.managedFields` — the way kubectl moves client-side-apply
 * ownership to server-side apply (k8s.io/client-go/util/csaupgrade). A write that changes only
 * managedFields adds no entry for its own manager (merge/update.go drops an empty set).
 */
import { isAlreadyExists, isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { FIELD_MANAGER } from './diff.ts'
import { isMap, jsonEqual, listMapKeys, sameKey, type JsonMap } from './normalize.ts'

/** What {@link createOrGet} found: the object it created, or the one that was already there. */
export interface CreateResult {
  object: KubeObject
  created: boolean
}

/**
 * POSTs `d`; on 409 AlreadyExists, GETs the object that is there (POSTing again once if it went
 * between the two).
 * @throws ApiError of the POST or the GET
 */
export async function createOrGet(client: KubeClient, d: RenderedObject, signal?: AbortSignal): Promise<CreateResult> {
  const ref = { apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name }
  for (let attempt = 0; ; attempt++) {
    try {
      return { object: await client.create(d, { fieldManager: FIELD_MANAGER, ...(signal ? { signal } : {}) }), created: true }
    } catch (err) {
      if (!isAlreadyExists(err)) throw err
    }
    try {
      return { object: await client.get(ref, signal ? { signal } : {}), created: false }
    } catch (err) {
      if (!isNotFound(err) || attempt > 0) throw err
    }
  }
}

interface ManagedFieldsEntry {
  manager?: string
  operation?: string
  apiVersion?: string
  time?: string
  fieldsType?: string
  fieldsV1?: unknown
  subresource?: string
}

/** Index of our manager's `Update` entry on the main resource (what a POST of ours leaves), or -1. */
export function ownUpdateEntry(o: KubeObject): number {
  const entries = o.metadata.managedFields
  if (!Array.isArray(entries)) return -1
  return (entries as ManagedFieldsEntry[]).findIndex((e) => e.manager === FIELD_MANAGER && e.operation === 'Update' && (e.subresource ?? '') === '')
}

/**
 * The JSON patch that turns our `Update` entry of `live` into our `Apply` entry for the fields
 * `desired` sets (or drops it when an Apply entry of ours exists already), guarded by `test`s of
 * that entry as read, so that it never rewrites an entry that changed meanwhile. Undefined when
 * there is no such entry.
 */
export function ownershipPatch(live: KubeObject, desired: RenderedObject): unknown[] | undefined {
  const i = ownUpdateEntry(live)
  if (i < 0) return undefined
  const entries = live.metadata.managedFields as ManagedFieldsEntry[]
  const entry = entries[i]!
  const fields: unknown = typeof entry.fieldsV1 === 'string' ? JSON.parse(entry.fieldsV1) : entry.fieldsV1
  const at = `/metadata/managedFields/${i}`
  const guard = [
    { op: 'test', path: `${at}/manager`, value: FIELD_MANAGER },
    { op: 'test', path: `${at}/operation`, value: 'Update' },
    { op: 'test', path: `${at}/fieldsV1`, value: fields ?? {} },
  ]
  const hasApply = entries.some((e) => e.manager === FIELD_MANAGER && e.operation === 'Apply' && (e.subresource ?? '') === '')
  if (hasApply) return [...guard, { op: 'remove', path: at }]
  const applied = { manager: FIELD_MANAGER, operation: 'Apply', apiVersion: entry.apiVersion ?? desired.apiVersion, ...(entry.time ? { time: entry.time } : {}), fieldsType: 'FieldsV1', fieldsV1: isMap(fields) ? renderedFields(fields, desired, []) : {} }
  return [...guard, { op: 'replace', path: at, value: applied }]
}

/**
 * Moves our `Update` entry's ownership to our `Apply` entry ({@link ownershipPatch}) with one
 * JSON patch; answers the object after, or `live` when there was nothing to move. The patch
 * addresses the entry by its index among all entries, as `live` has them (the cache keeps a stub
 * of every entry while ours is there, controller.ts `childSummary`), so it is sent from the cache
 * at the reconcile after the create rather than from the create's answer: right after a create a
 * workload controller adds its status entry, which sorts before ours (entries are sorted by
 * operation, time, then manager: apimachinery managedfields `sortEncodedManagedFields`). When the
 * entries moved all the same, a guard fails with 422 and nothing changes; the next reconcile
 * tries again.
 * @throws ApiError (422 when a guard failed)
 */
export async function takeOwnership(client: KubeClient, live: KubeObject, desired: RenderedObject, signal?: AbortSignal): Promise<KubeObject> {
  const patch = ownershipPatch(live, desired)
  if (patch === undefined) return live
  const ref = { apiVersion: desired.apiVersion, kind: desired.kind, namespace: desired.metadata.namespace, name: desired.metadata.name }
  return client.patch(ref, patch, { type: 'json', fieldManager: FIELD_MANAGER, ...(signal ? { signal } : {}) })
}

/**
 * The part of a fieldsV1 tree that `desired` sets, in the shape a server-side apply of `desired`
 * gives its entry (structured-merge-diff `typed.ToFieldSet`): `f:` fields it has, `k:` list-map
 * items it has (matched by the list's keys, a defaulted key such as `protocol` included), `v:` set
 * items it has; `.` (the node itself) only for list items, as an apply records it — an update
 * records it for every map it adds, an apply only for the items it names.
 */
export function renderedFields(fields: JsonMap, desired: unknown, path: readonly string[], item = false): JsonMap {
  const out: JsonMap = {}
  for (const [k, child] of Object.entries(fields)) {
    if (k === '.') {
      if (item) out[k] = child
    } else if (k.startsWith('f:')) {
      const name = k.slice(2)
      if (!isMap(desired) || !Object.hasOwn(desired, name)) continue
      out[k] = isMap(child) && Object.keys(child).length > 0 ? renderedFields(child, desired[name], [...path, name]) : child
    } else if (k.startsWith('k:')) {
      let key: unknown
      try {
        key = JSON.parse(k.slice(2))
      } catch {
        continue
      }
      if (!isMap(key) || !Array.isArray(desired)) continue
      const keys = listMapKeys(path) ?? Object.keys(key)
      const found = desired.find((x): x is JsonMap => isMap(x) && sameKey(keys, x, key as JsonMap))
      if (found !== undefined) out[k] = isMap(child) ? renderedFields(child, found, path, true) : child
    } else if (k.startsWith('v:')) {
      let value: unknown
      try {
        value = JSON.parse(k.slice(2))
      } catch {
        continue
      }
      if (Array.isArray(desired) && desired.some((x) => jsonEqual(x, value))) out[k] = child
    }
  }
  return out
}
