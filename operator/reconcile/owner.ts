/**
 * The controller ownerReference that ties every rendered object to its Memcached: Kubernetes
 * garbage-collects the objects when the CR goes, and the operator recognises its own objects by
 * it (by uid, never by name: a CR deleted and re-created under the same name is another owner).
 */
import { API_VERSION, KIND, type Memcached } from '../api/memcached.ts'
import type { OwnerReference } from '../controller/client.ts'
import { RenderError } from '../render/errors.ts'
import type { RenderedObject } from '../render/manifest.ts'

export type { OwnerReference }

/** Any object whose owners can be read (a live object from a cache, typed or not). */
export interface OwnedObject {
  metadata: { ownerReferences?: unknown }
}

/** The identity of an object, enough to address it and to name it in a message. */
export interface ObjectIdentity {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string }
}

/** A live object as the API server returns it (only what these steps read is typed). */
export interface LiveObject {
  apiVersion: string
  kind: string
  metadata: {
    name: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    generation?: number
    deletionTimestamp?: string
    ownerReferences?: OwnerReference[]
    labels?: Record<string, string>
    annotations?: Record<string, string>
    managedFields?: unknown[]
    [field: string]: unknown
  }
  [field: string]: unknown
}

/**
 * The key of an object in maps of desired and live objects: `Kind.group/namespace/name`
 * (`Deployment.apps/default/cache`, `Service/default/cache`). The API group, not the version,
 * identifies a kind: the same object read through another version is the same object.
 */
export function objectKey(obj: ObjectIdentity): string {
  const slash = obj.apiVersion.indexOf('/')
  const group = slash < 0 ? '' : obj.apiVersion.slice(0, slash)
  return `${obj.kind}${group ? `.${group}` : ''}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`
}

/** `Deployment default/cache`: how messages name an object. */
export function describeObject(obj: ObjectIdentity): string {
  return `${obj.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name}`
}

/**
 * The controller reference to `cr`. `blockOwnerDeletion` makes a foreground deletion of the CR
 * wait for its objects.
 * @throws Error when the CR has no uid (it was not read from the API server)
 */
export function controllerRef(cr: Memcached): OwnerReference {
  const uid = cr.metadata.uid
  if (typeof uid !== 'string' || uid === '') throw new Error(`${KIND} ${cr.metadata.namespace ?? ''}/${cr.metadata.name} has no metadata.uid: only an object read from the API server can own others`)
  return { apiVersion: API_VERSION, kind: KIND, name: cr.metadata.name, uid, controller: true, blockOwnerDeletion: true }
}

/**
 * New objects, each with exactly one ownerReference: the controller reference to `cr`. The
 * input is not modified.
 *
 * A template must not write ownerReferences (it would let a chart make an object depend on, or
 * be adopted by, something else): such objects are refused, all of them reported at once, as a
 * `guard` {@link RenderError} — the same kind of failure as an object of a forbidden kind, so the
 * caller applies nothing.
 * @throws RenderError (kind `guard`) naming every object whose template wrote ownerReferences
 */
export function stampOwner(objects: readonly RenderedObject[], cr: Memcached): RenderedObject[] {
  const ref = controllerRef(cr)
  const problems = objects
    .filter((o) => o.metadata.ownerReferences !== undefined && o.metadata.ownerReferences !== null)
    .map((o) => `${o.kind}/${o.metadata.name}: metadata.ownerReferences must not be set by a template (the operator sets the controller reference)`)
  if (problems.length > 0) throw new RenderError('guard', problems)
  return objects.map((o) => ({ ...o, metadata: { ...o.metadata, ownerReferences: [{ ...ref }] } }))
}

/** The controller reference of an object (the one with `controller: true`), if any. */
export function controllerOf(obj: OwnedObject): OwnerReference | undefined {
  const refs = obj.metadata.ownerReferences
  if (!Array.isArray(refs)) return undefined
  return (refs as OwnerReference[]).find((r) => r !== null && typeof r === 'object' && r.controller === true)
}

/** Whether `cr` is the controller of `obj`, compared by uid. */
export function isControlledBy(obj: OwnedObject, cr: Pick<Memcached, 'metadata'>): boolean {
  const ref = controllerOf(obj)
  return ref !== undefined && cr.metadata.uid !== undefined && ref.uid === cr.metadata.uid
}

/** An object that exists and that this CR must not take over. */
export interface OwnershipConflict {
  /** {@link objectKey} of the object. */
  key: string
  kind: string
  namespace: string
  name: string
  /** Its current controller; undefined when it has none. */
  controller: OwnerReference | undefined
  /** `Deployment default/cache exists and is controlled by Memcached other (uid 1234…), not by this Memcached` */
  message: string
}

const MANAGED_BY = 'app.kubernetes.io/managed-by'
const INSTANCE = 'app.kubernetes.io/instance'

/**
 * Whether `live` is an orphan of this instance that the CR adopts, as Kubernetes' own controllers
 * adopt the orphans their selector matches (ControllerRefManager, pkg/controller/controller_ref_manager.go):
 * no controller, not being deleted, and labelled as rendered by this operator for this very
 * instance (`kubectl delete mc X --cascade=orphan` leaves exactly that behind). An object without
 * those labels was made by someone else and is never taken.
 */
export function isAdoptable(desired: { metadata: { labels?: Record<string, string> } }, live: OwnedObject & { metadata: { labels?: unknown; deletionTimestamp?: unknown } }): boolean {
  if (controllerOf(live) !== undefined || live.metadata.deletionTimestamp) return false
  const labels = (live.metadata.labels ?? {}) as Record<string, unknown>
  const instance = desired.metadata.labels?.[INSTANCE]
  return labels[MANAGED_BY] === 'memcached-operator' && instance !== undefined && labels[INSTANCE] === instance
}

/**
 * The desired objects that already exist and are not controlled by `cr`: an object with no
 * controller (created by hand) or with another controller (another CR; also the same CR name with
 * an older uid, whose objects the garbage collector is about to delete). The operator never takes
 * those over; it adopts only its own orphans ({@link isAdoptable}). `live` maps {@link objectKey}
 * to the live object, or to undefined / no entry when it does not exist. In the order of `desired`.
 */
export function ownershipConflicts(desired: readonly (ObjectIdentity & { metadata: { labels?: Record<string, string> } })[], live: ReadonlyMap<string, (OwnedObject & { metadata: { labels?: unknown; deletionTimestamp?: unknown } }) | undefined>, cr: Pick<Memcached, 'metadata'>): OwnershipConflict[] {
  const out: OwnershipConflict[] = []
  for (const d of desired) {
    const key = objectKey(d)
    const l = live.get(key)
    if (l === undefined || isControlledBy(l, cr) || isAdoptable(d, l)) continue
    const controller = controllerOf(l)
    const what = describeObject(d)
    const message = controller
      ? `${what} exists and is controlled by ${controller.kind} ${controller.name} (uid ${controller.uid}), not by this ${KIND}; it is left alone`
      : `${what} exists and has no controller; it was not created by this ${KIND} and is left alone`
    out.push({ key, kind: d.kind, namespace: d.metadata.namespace ?? '', name: d.metadata.name, controller, message })
  }
  return out
}
