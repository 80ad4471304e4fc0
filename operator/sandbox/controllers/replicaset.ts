/**
 * The ReplicaSet controller: keeps `spec.replicas` pods owned by each ReplicaSet and reports
 * them in its status. Like the real one it raises "expectations" before creating or deleting
 * pods, so that a sync running before the pod informer has seen its own writes does not create
 * or delete twice. A pod the API server refuses (admission: PodSecurity, ResourceQuota, …) gives
 * a Warning `FailedCreate` Event "Error creating: <message>" and the `ReplicaFailure` condition
 * (reason FailedCreate, the server's message) until a sync succeeds, as
 * pkg/controller/replicaset/replica_set.go and replica_set_utils.go `calculateStatus` do; each pod
 * created or deleted is a Normal `SuccessfulCreate` "Created pod: <name>" / `SuccessfulDelete`
 * "Deleted pod: <name>" Event (pkg/controller/controller_utils.go RealPodControl).
 * Not simulated: adoption of orphan pods matching the selector, and minReadySeconds (a ready
 * pod counts as available at once).
 */
import type { JsonObject, KubeObject, OwnerReference } from '../types.ts'
import { ApiError, Client, isConflict, isNotFound, pods, replicaSets, statusUpdate } from './client.ts'
import type { EventRecorder } from './events.ts'
import { keyOf, type Informer, WorkQueue } from './informer.ts'
import { generateName } from './names.ts'
import { clone } from '../../kube/json.ts'
import { rfc3339 } from '../../kube/time.ts'

/** The controller ownerReference a controller puts on what it creates. */
export function controllerRef(owner: KubeObject): OwnerReference {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name ?? '', uid: owner.metadata.uid ?? '', controller: true, blockOwnerDeletion: true }
}

/** The object's controller ownerReference, if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true)
}

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}

/** Whether a pod's Ready condition is True. */
export function isPodReady(pod: KubeObject): boolean {
  const conds = obj(pod['status'])['conditions']
  return Array.isArray(conds) && conds.some((c) => obj(c)['type'] === 'Ready' && obj(c)['status'] === 'True')
}

function isActive(pod: KubeObject): boolean {
  const phase = obj(pod['status'])['phase']
  return !pod.metadata.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed'
}

/** The desired replica count of a Deployment or ReplicaSet (defaults to 1). */
export function specReplicas(o: KubeObject): number {
  const r = obj(o['spec'])['replicas']
  return typeof r === 'number' ? r : 1
}

interface Expectation {
  adds: number
  deletes: Set<string>
  expires: number
}

/** How long an unmet expectation holds syncs back before the controller stops waiting. */
const expectationTtlMs = 30_000

/** Keeps each ReplicaSet's pod count and status (see the module comment). */
export class ReplicaSetController {
  #client: Client
  #rs: Informer
  #pods: Informer
  #queue: WorkQueue
  #expectations = new Map<string, Expectation>()
  #recorder: EventRecorder

  constructor(client: Client, rsInformer: Informer, podInformer: Informer, recorder: EventRecorder) {
    this.#client = client
    this.#recorder = recorder
    this.#rs = rsInformer
    this.#pods = podInformer
    this.#queue = new WorkQueue((key) => this.#sync(key))
    rsInformer.on((type, rs) => {
      if (type === 'DELETED') this.#expectations.delete(keyOf(rs))
      this.#queue.add(keyOf(rs))
    })
    podInformer.on((type, pod) => this.#onPod(type, pod))
  }

  /** Queues every ReplicaSet (periodic resync). */
  resync(): void {
    for (const rs of this.#rs.list()) this.#queue.add(keyOf(rs))
  }

  /** Starts processing (once the caches have listed). */
  run(): void {
    this.#queue.start()
  }

  /** Stops the work queue. */
  async stop(): Promise<void> {
    await this.#queue.shutdown()
  }

  #onPod(type: string, pod: KubeObject): void {
    const ref = controllerOf(pod)
    if (!ref || ref.kind !== 'ReplicaSet') return
    const key = `${pod.metadata.namespace ?? ''}/${ref.name}`
    const exp = this.#expectations.get(key)
    if (exp) {
      if (type === 'ADDED' && exp.adds > 0) exp.adds--
      if (type === 'DELETED' || pod.metadata.deletionTimestamp) exp.deletes.delete(pod.metadata.name ?? '')
    }
    this.#queue.add(key)
  }

  #satisfied(key: string): boolean {
    const exp = this.#expectations.get(key)
    if (!exp) return true
    if ((exp.adds <= 0 && exp.deletes.size === 0) || Date.now() > exp.expires) {
      this.#expectations.delete(key)
      return true
    }
    return false
  }

  async #sync(key: string): Promise<void> {
    const rs = this.#rs.get(key)
    if (!rs) return
    const uid = rs.metadata.uid
    const owned = this.#pods.dependentsOf(uid ?? '').filter((p) => controllerOf(p)?.uid === uid)
    const active = owned.filter(isActive)
    let manageError: unknown
    if (!rs.metadata.deletionTimestamp && this.#satisfied(key)) {
      try {
        await this.#manage(key, rs, active)
      } catch (err) {
        manageError = err
      }
    }
    await this.#updateStatus(rs, active, manageError)
    // The work queue retries with backoff, as syncHandler's error does.
    if (manageError !== undefined) throw manageError
  }

  async #manage(key: string, rs: KubeObject, active: KubeObject[]): Promise<void> {
    const diff = active.length - specReplicas(rs)
    if (diff < 0) {
      const exp: Expectation = { adds: -diff, deletes: new Set(), expires: Date.now() + expectationTtlMs }
      this.#expectations.set(key, exp)
      const results = await Promise.allSettled(Array.from({ length: -diff }, () => this.#createPod(rs)))
      // A namespace being terminated refuses every create; that is not a failure to report.
      const failed = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected' && !(r.reason instanceof ApiError && r.reason.causes.includes('NamespaceTerminating')))
      // A failed creation will never be observed: lower the expectation so the next sync retries.
      exp.adds -= failed.length
      if (failed.length > 0) throw (failed[0] as PromiseRejectedResult).reason
    } else if (diff > 0) {
      const victims = [...active].sort(deletionOrder).slice(0, diff)
      const exp: Expectation = { adds: 0, deletes: new Set(victims.map((p) => p.metadata.name ?? '')), expires: Date.now() + expectationTtlMs }
      this.#expectations.set(key, exp)
      const results = await Promise.allSettled(victims.map(async (p) => {
        try {
          await this.#client.delete(pods, p.metadata.namespace, p.metadata.name ?? '', { uid: p.metadata.uid ?? '' })
          this.#recorder.event(rs, 'Normal', 'SuccessfulDelete', `Deleted pod: ${p.metadata.name ?? ''}`)
        } catch (err) {
          exp.deletes.delete(p.metadata.name ?? '')
          if (!isNotFound(err) && !isConflict(err)) {
            this.#recorder.event(rs, 'Warning', 'FailedDelete', `Error deleting: ${err instanceof Error ? err.message : String(err)}`)
            throw err
          }
        }
      }))
      const failed = results.find((r) => r.status === 'rejected')
      if (failed) throw (failed as PromiseRejectedResult).reason
    }
  }

  async #createPod(rs: KubeObject): Promise<void> {
    const template = obj(obj(rs['spec'])['template'])
    const tmeta = obj(template['metadata'])
    const prefix = `${rs.metadata.name ?? ''}-`
    const metadata: JsonObject = { generateName: prefix, namespace: rs.metadata.namespace ?? 'default' }
    if (tmeta['labels']) metadata['labels'] = clone(tmeta['labels'])
    if (tmeta['annotations']) metadata['annotations'] = clone(tmeta['annotations'])
    metadata['ownerReferences'] = [controllerRef(rs) as unknown as JsonObject]
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata, spec: clone(obj(template['spec'])) } as unknown as KubeObject
    // The name is generated here (same rule as the apiserver's generateName) so that a rare
    // collision is a plain AlreadyExists to retry.
    for (let attempt = 0; ; attempt++) {
      pod.metadata.name = generateName(prefix)
      try {
        await this.#client.create(pods, rs.metadata.namespace, pod)
        // The server keeps a name that is given (it generates one only from generateName).
        this.#recorder.event(rs, 'Normal', 'SuccessfulCreate', `Created pod: ${pod.metadata.name ?? ''}`)
        return
      } catch (err) {
        if (isConflict(err) && attempt < 3) continue
        if (err instanceof ApiError && !err.causes.includes('NamespaceTerminating')) this.#recorder.event(rs, 'Warning', 'FailedCreate', `Error creating: ${err.message}`)
        throw err
      }
    }
  }

  async #updateStatus(rs: KubeObject, active: KubeObject[], manageError?: unknown): Promise<void> {
    const tlabels = obj(obj(obj(rs['spec'])['template'])['metadata'])['labels'] as Record<string, string> | undefined
    const wanted = Object.entries(tlabels ?? {})
    const fullyLabeled = active.filter((p) => wanted.every(([k, v]) => p.metadata.labels?.[k] === v)).length
    const ready = active.filter(isPodReady).length
    const old = obj(rs['status'])
    // ReplicaSetStatus: replicas is always serialised, the other counts are omitempty.
    const status: JsonObject = { replicas: active.length }
    if (fullyLabeled) status['fullyLabeledReplicas'] = fullyLabeled
    if (ready) status['readyReplicas'] = ready
    if (ready) status['availableReplicas'] = ready
    if (rs.metadata.generation) status['observedGeneration'] = rs.metadata.generation
    // calculateStatus: ReplicaFailure is set once on a failed create or delete, removed after a clean sync.
    let conditions = Array.isArray(old['conditions']) ? (old['conditions'] as JsonObject[]) : []
    const failure = conditions.find((c) => c['type'] === 'ReplicaFailure')
    if (manageError !== undefined && !failure) {
      const diff = active.length - specReplicas(rs)
      const reason = diff < 0 ? 'FailedCreate' : diff > 0 ? 'FailedDelete' : ''
      const message = manageError instanceof Error ? manageError.message : String(manageError)
      conditions = [...conditions, { type: 'ReplicaFailure', status: 'True', lastTransitionTime: rfc3339(), reason, message }]
    } else if (manageError === undefined && failure) conditions = conditions.filter((c) => c !== failure)
    if (conditions.length > 0) status['conditions'] = conditions
    if (sameJson(old, status)) return
    try {
      await this.#client.update(replicaSets, statusUpdate(rs, status), { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err)) throw err
    }
  }
}

/** Which pods to delete first: unscheduled, then not ready, then the newest (controller.ActivePods ranking, simplified). */
function deletionOrder(a: KubeObject, b: KubeObject): number {
  const scheduled = (p: KubeObject) => (obj(p['spec'])['nodeName'] ? 1 : 0)
  if (scheduled(a) !== scheduled(b)) return scheduled(a) - scheduled(b)
  const ready = (p: KubeObject) => (isPodReady(p) ? 1 : 0)
  if (ready(a) !== ready(b)) return ready(a) - ready(b)
  const ta = a.metadata.creationTimestamp ?? ''
  const tb = b.metadata.creationTimestamp ?? ''
  return ta === tb ? 0 : ta > tb ? -1 : 1
}

/** Deep equality of JSON values, key order ignored. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    if (a.length !== bb.length) return false
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], bb[i])) return false
    return true
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  // Members counted rather than listed: the controllers compare statuses at every sync.
  let n = 0
  for (const k in ao) {
    const v = ao[k]
    if (v === undefined) continue
    if (!sameJson(v, bo[k])) return false
    n++
  }
  for (const k in bo) if (bo[k] !== undefined) n--
  return n === 0
}
