/**
 * The garbage collector of kube-controller-manager, event-driven with a periodic sweep:
 * - a dependent whose owners (matched by uid) are all absent is deleted (Background), or in the
 *   Foreground when an owner is itself waiting for its dependents; an owner in another namespace
 *   counts as absent; an owner missing from the cache is verified with a live GET before anything
 *   is deleted, so a watch that is merely behind never causes a deletion;
 * - a dependent with both live and absent owners loses the references to the absent ones;
 * - an owner being deleted with the `foregroundDeletion` finalizer has its dependents deleted and
 *   keeps the finalizer until no dependent with `blockOwnerDeletion: true` is left;
 * - an owner being deleted with the `orphan` finalizer has its references stripped from its
 *   dependents, then loses the finalizer.
 * The graph is a uid index over metadata-only caches (a few hundred bytes per object), so a
 * sweep over 10,000 objects is a walk over in-memory maps.
 */
import type { KubeObject, OwnerReference } from '../types.ts'
import { Client, isConflict, isNotFound, type GVR } from './client.ts'
import { Informer, WorkQueue } from './informer.ts'

interface Kind {
  gvr: GVR
  namespaced: boolean
}

/** Built-in kinds whose objects can be owners or dependents. */
const builtinKinds: Record<string, Kind> = {
  'v1/Pod': { gvr: { group: '', version: 'v1', resource: 'pods' }, namespaced: true },
  'v1/Service': { gvr: { group: '', version: 'v1', resource: 'services' }, namespaced: true },
  'v1/ConfigMap': { gvr: { group: '', version: 'v1', resource: 'configmaps' }, namespaced: true },
  'v1/Secret': { gvr: { group: '', version: 'v1', resource: 'secrets' }, namespaced: true },
  'v1/ServiceAccount': { gvr: { group: '', version: 'v1', resource: 'serviceaccounts' }, namespaced: true },
  'v1/Namespace': { gvr: { group: '', version: 'v1', resource: 'namespaces' }, namespaced: false },
  'apps/Deployment': { gvr: { group: 'apps', version: 'v1', resource: 'deployments' }, namespaced: true },
  'apps/ReplicaSet': { gvr: { group: 'apps', version: 'v1', resource: 'replicasets' }, namespaced: true },
  'apps/StatefulSet': { gvr: { group: 'apps', version: 'v1', resource: 'statefulsets' }, namespaced: true },
  'apps/ControllerRevision': { gvr: { group: 'apps', version: 'v1', resource: 'controllerrevisions' }, namespaced: true },
  'policy/PodDisruptionBudget': { gvr: { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets' }, namespaced: true },
  'discovery.k8s.io/EndpointSlice': { gvr: { group: 'discovery.k8s.io', version: 'v1', resource: 'endpointslices' }, namespaced: true },
  'coordination.k8s.io/Lease': { gvr: { group: 'coordination.k8s.io', version: 'v1', resource: 'leases' }, namespaced: true },
  'apiextensions.k8s.io/CustomResourceDefinition': { gvr: { group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions' }, namespaced: false },
}

/** The built-in resources the collector watches (objects of other kinds can still be owners). */
export const watchedBuiltins = ['v1/Pod', 'v1/Service', 'v1/ConfigMap', 'v1/Secret', 'v1/ServiceAccount', 'apps/Deployment', 'apps/ReplicaSet', 'apps/StatefulSet', 'apps/ControllerRevision', 'policy/PodDisruptionBudget', 'discovery.k8s.io/EndpointSlice']

function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/')
  return i < 0 ? 'v1' : apiVersion.slice(0, i)
}

function gvrKey(g: GVR): string {
  return `${g.group}/${g.version}/${g.resource}`
}

/** Keeps only what the collector needs of an object. */
export function metadataOnly(o: KubeObject): KubeObject {
  const m = o.metadata
  const meta: KubeObject['metadata'] = { name: m.name, uid: m.uid, resourceVersion: m.resourceVersion }
  if (m.namespace) meta.namespace = m.namespace
  if (m.ownerReferences) meta.ownerReferences = m.ownerReferences
  if (m.finalizers) meta.finalizers = m.finalizers
  if (m.deletionTimestamp) meta.deletionTimestamp = m.deletionTimestamp
  if (m.creationTimestamp) meta.creationTimestamp = m.creationTimestamp
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: meta }
}

interface Node {
  kind: Kind
  obj: KubeObject
}

/** The dependency graph and the collector's work queue (see the module comment). */
export class GarbageCollector {
  #client: Client
  /** group/Kind → how to reach it */
  #kinds = new Map<string, Kind>(Object.entries(builtinKinds))
  #informers = new Map<string, { informer: Informer; own: boolean }>()
  #nodes = new Map<string, Node>()
  /** owner uid → dependent uids */
  #dependents = new Map<string, Set<string>>()
  #queue: WorkQueue
  #crdTypes = new Map<string, string>() // CRD name → gvrKey it added
  /** `namespace/uid` of owners verified absent; forgotten at each sweep once nothing refers to them */
  #absent = new Set<string>()

  /**
   * @param shared informers other controllers already run (their caches are reused, not duplicated)
   */
  constructor(client: Client, shared: Informer[]) {
    this.#client = client
    this.#queue = new WorkQueue((item) => this.#process(item), 2)
    for (const inf of shared) this.#adopt(inf, false)
    for (const k of watchedBuiltins) {
      const kind = this.#kinds.get(k) as Kind
      if (!this.#informers.has(gvrKey(kind.gvr))) this.#adopt(new Informer(client, kind.gvr, metadataOnly), true)
    }
  }

  /** Starts the collector's own informers; resolves once they have listed. */
  async start(): Promise<void> {
    await Promise.all([...this.#informers.values()].filter((i) => i.own).map((i) => i.informer.start()))
  }

  /** Starts processing (once every cache it relies on has listed). */
  run(): void {
    this.#queue.start()
  }

  /** Tells the collector about an established CRD's served resource (watched from now on). */
  async addCustomResource(crdName: string, gvr: GVR, kind: string, namespaced: boolean): Promise<void> {
    this.#kinds.set(`${gvr.group}/${kind}`, { gvr, namespaced })
    const key = gvrKey(gvr)
    if (this.#crdTypes.get(crdName) === key) return
    this.removeCustomResource(crdName)
    this.#crdTypes.set(crdName, key)
    const inf = new Informer(this.#client, gvr, metadataOnly)
    this.#adopt(inf, true)
    await inf.start()
  }

  /** Forgets a CRD's resource (its objects are gone with it). */
  removeCustomResource(crdName: string): void {
    const key = this.#crdTypes.get(crdName)
    if (!key) return
    this.#crdTypes.delete(crdName)
    const entry = this.#informers.get(key)
    if (!entry) return
    entry.informer.stop()
    this.#informers.delete(key)
    for (const o of [...entry.informer.list()]) this.#onEvent('DELETED', o, { gvr: entry.informer.gvr, namespaced: true })
  }

  /** Queues every object that might need work: dependents with an uncached owner, owners being deleted. */
  sweep(): void {
    for (const key of this.#absent) if (!this.#dependents.get(key.slice(key.indexOf('/') + 1))?.size) this.#absent.delete(key)
    for (const [uid, node] of this.#nodes) {
      const m = node.obj.metadata
      if (m.deletionTimestamp && m.finalizers?.some((f) => f === 'orphan' || f === 'foregroundDeletion')) this.#queue.add(`owner:${uid}`)
      if (this.#suspicious(node.obj)) this.#queue.add(`dependent:${uid}`)
    }
  }

  /** Stops every informer it started and the work queue. */
  async stop(): Promise<void> {
    for (const { informer, own } of this.#informers.values()) if (own) informer.stop()
    await this.#queue.shutdown()
  }

  #adopt(inf: Informer, own: boolean): void {
    this.#informers.set(gvrKey(inf.gvr), { informer: inf, own })
    const kind = [...this.#kinds.values()].find((k) => gvrKey(k.gvr) === gvrKey(inf.gvr)) ?? { gvr: inf.gvr, namespaced: true }
    inf.on((type, o) => this.#onEvent(type, o, kind))
  }

  /** Whether some owner of `o` is not in the cache, waits in the foreground, or lives in another namespace. */
  #suspicious(o: KubeObject): boolean {
    return (o.metadata.ownerReferences ?? []).some((r) => {
      const owner = this.#nodes.get(r.uid)?.obj
      if (!owner) return true
      return this.#isWaiting(r.uid) || (!!owner.metadata.namespace && owner.metadata.namespace !== o.metadata.namespace)
    })
  }

  #isWaiting(uid: string): boolean {
    const m = this.#nodes.get(uid)?.obj.metadata
    return !!m?.deletionTimestamp && !!m.finalizers?.includes('foregroundDeletion')
  }

  #onEvent(type: string, o: KubeObject, kind: Kind): void {
    const uid = o.metadata.uid
    if (!uid) return
    const old = this.#nodes.get(uid)
    for (const r of old?.obj.metadata.ownerReferences ?? []) this.#dependents.get(r.uid)?.delete(uid)
    if (type === 'DELETED') {
      this.#nodes.delete(uid)
      for (const dep of this.#dependents.get(uid) ?? []) this.#queue.add(`dependent:${dep}`)
      // An owner waiting in the foreground may now be unblocked.
      for (const r of o.metadata.ownerReferences ?? []) if (this.#isWaiting(r.uid)) this.#queue.add(`owner:${r.uid}`)
      return
    }
    this.#nodes.set(uid, { kind, obj: o })
    for (const r of o.metadata.ownerReferences ?? []) {
      let set = this.#dependents.get(r.uid)
      if (!set) this.#dependents.set(r.uid, (set = new Set()))
      set.add(uid)
    }
    if (this.#suspicious(o)) this.#queue.add(`dependent:${uid}`)
    const m = o.metadata
    if (m.deletionTimestamp && m.finalizers?.some((f) => f === 'orphan' || f === 'foregroundDeletion')) this.#queue.add(`owner:${uid}`)
    // A dependent that is now being deleted may unblock its foreground owner.
    if (m.deletionTimestamp) for (const r of m.ownerReferences ?? []) if (this.#isWaiting(r.uid)) this.#queue.add(`owner:${r.uid}`)
  }

  async #process(item: string): Promise<void> {
    const i = item.indexOf(':')
    const what = item.slice(0, i)
    const uid = item.slice(i + 1)
    if (what === 'owner') await this.#processOwner(uid)
    else await this.#processDependent(uid)
  }

  /** Whether an owner reference points at a live object: 'solid', 'waiting' (foreground), 'absent', or 'unknown'. */
  async #ownerState(dep: Node, ref: OwnerReference): Promise<'solid' | 'waiting' | 'absent' | 'unknown'> {
    const kind = this.#kinds.get(`${groupOf(ref.apiVersion)}/${ref.kind}`)
    const depNs = dep.obj.metadata.namespace
    if (kind && kind.namespaced && !depNs) return 'absent'
    const cached = this.#nodes.get(ref.uid)
    if (cached) {
      // In the cache under this uid: alive, unless it lives in another namespace.
      if (kind?.namespaced && cached.obj.metadata.namespace !== depNs) return 'absent'
      return this.#isWaiting(ref.uid) ? 'waiting' : 'solid'
    }
    if (!kind) return 'unknown' // cannot be looked up (like a REST mapping failure): leave it alone
    // A uid, once verified absent, never comes back: the thousands of dependents of one deleted
    // owner cost one GET (the real collector keeps a verified "virtual" node the same way).
    const absentKey = `${kind.namespaced ? depNs ?? '' : ''}/${ref.uid}`
    if (this.#absent.has(absentKey)) return 'absent'
    try {
      const live = await this.#client.get(kind.gvr, kind.namespaced ? depNs : undefined, ref.name)
      if (live.metadata.uid !== ref.uid) {
        this.#absent.add(absentKey)
        return 'absent'
      }
      const m = live.metadata
      return m.deletionTimestamp && m.finalizers?.includes('foregroundDeletion') ? 'waiting' : 'solid'
    } catch (err) {
      if (!isNotFound(err)) throw err
      this.#absent.add(absentKey)
      return 'absent'
    }
  }

  async #processDependent(uid: string): Promise<void> {
    const node = this.#nodes.get(uid)
    if (!node) return
    const m = node.obj.metadata
    const refs = m.ownerReferences ?? []
    if (refs.length === 0 || m.deletionTimestamp) return
    const states = await Promise.all(refs.map((r) => this.#ownerState(node, r)))
    if (states.includes('unknown')) return
    const solid = states.filter((s) => s === 'solid').length
    if (solid === 0) {
      const waiting = states.includes('waiting')
      const hasDependents = (this.#dependents.get(uid)?.size ?? 0) > 0
      try {
        await this.#client.delete(node.kind.gvr, m.namespace, m.name ?? '', { propagationPolicy: waiting && hasDependents ? 'Foreground' : 'Background', uid })
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err
      }
      return
    }
    const keep = refs.filter((_r, i) => states[i] === 'solid')
    if (keep.length < refs.length) await this.#setOwnerRefs(node, keep)
  }

  async #setOwnerRefs(node: Node, refs: OwnerReference[]): Promise<void> {
    const m = node.obj.metadata
    try {
      await this.#client.mergePatch(node.kind.gvr, m.namespace, m.name ?? '', { metadata: { resourceVersion: m.resourceVersion, ownerReferences: refs.length > 0 ? refs : null } })
    } catch (err) {
      if (isNotFound(err)) return
      throw err // a conflict is retried once the cache has the newer object
    }
  }

  async #processOwner(uid: string): Promise<void> {
    const node = this.#nodes.get(uid)
    if (!node) return
    const m = node.obj.metadata
    if (!m.deletionTimestamp) return
    const deps = [...(this.#dependents.get(uid) ?? [])].map((d) => this.#nodes.get(d)).filter((d): d is Node => !!d)
    if (m.finalizers?.includes('orphan')) {
      for (const dep of deps) {
        const refs = dep.obj.metadata.ownerReferences ?? []
        await this.#setOwnerRefs(dep, refs.filter((r) => r.uid !== uid))
      }
      await this.#removeFinalizer(node, 'orphan')
      return
    }
    if (m.finalizers?.includes('foregroundDeletion')) {
      for (const dep of deps) if (!dep.obj.metadata.deletionTimestamp) this.#queue.add(`dependent:${dep.obj.metadata.uid ?? ''}`)
      const blocking = deps.filter((d) => d.obj.metadata.ownerReferences?.some((r) => r.uid === uid && r.blockOwnerDeletion === true))
      if (blocking.length === 0) await this.#removeFinalizer(node, 'foregroundDeletion')
    }
  }

  async #removeFinalizer(node: Node, finalizer: string): Promise<void> {
    const m = node.obj.metadata
    const rest = (m.finalizers ?? []).filter((f) => f !== finalizer)
    try {
      // resourceVersion makes it an optimistic update, as the real collector's finalizer patch is.
      await this.#client.mergePatch(node.kind.gvr, m.namespace, m.name ?? '', { metadata: { resourceVersion: m.resourceVersion, finalizers: rest.length > 0 ? rest : null } })
    } catch (err) {
      if (!isNotFound(err)) throw err
    }
  }
}

