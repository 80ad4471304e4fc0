/**
 * The disruption controller (pkg/controller/disruption/disruption.go): each PodDisruptionBudget's
 * status from the pods its selector matches in its namespace —
 * - `expectedPods`: for `maxUnavailable` and a percentage `minAvailable`, the sum of the scales of
 *   the pods' controllers (a Deployment's `spec.replicas` for the pods of its ReplicaSets, a lone
 *   ReplicaSet's or StatefulSet's own: getExpectedScale); for an integer `minAvailable`, the
 *   number of pods;
 * - `desiredHealthy`: `minAvailable`, or `expectedPods - maxUnavailable`, percentages scaled
 *   against `expectedPods` and rounded up (getExpectedPodCount);
 * - `currentHealthy`: the Ready pods not being deleted nor listed in `disruptedPods`;
 * - `disruptionsAllowed`: `currentHealthy - desiredHealthy`, 0 when negative or when no pod is
 *   expected; the `DisruptionAllowed` condition True `SufficientPods` or False `InsufficientPods`
 *   (pdb/helpers UpdateDisruptionAllowedCondition), and `observedGeneration`.
 * A pod whose controller cannot be found makes the sync fail as upstream's does: status to the
 * fail-safe (`disruptionsAllowed: 0`, condition False `SyncFailed`) and a Warning
 * `CalculateExpectedPodCountFailed` Event; pods without a controller give an `UnmanagedPods`
 * Warning, and a PDB that selects no pod a `NoPods` Event.
 */
import type { Json, JsonObject, KubeObject } from '../types.ts'
import { Client, isNotFound, statusUpdate, type GVR } from './client.ts'
import type { EventRecorder } from './events.ts'
import { keyOf, type Informer, WorkQueue } from './informer.ts'
import { controllerOf, isPodReady, sameJson, specReplicas } from './replicaset.ts'
import { labelSelectorMatcher, SelectorIndex } from './selector.ts'
import { rfc3339 } from '../../kube/time.ts'

/** policy/v1 poddisruptionbudgets */
export const podDisruptionBudgets: GVR = { group: 'policy', version: 'v1', resource: 'poddisruptionbudgets' }

/** How long an eviction's entry in `disruptedPods` counts before the controller drops it (DeletionTimeout). */
const deletionTimeoutMs = 2 * 60_000

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}

/** intstr.GetScaledValueFromIntOrPercent with roundUp. */
function scaled(v: unknown, total: number): number {
  if (typeof v === 'number') return v
  const m = /^(\d+)%$/.exec(String(v))
  if (!m) throw new Error(`invalid value for IntOrString: invalid value ${JSON.stringify(String(v))}`)
  return Math.ceil((Number(m[1]) * total) / 100)
}

class SyncError extends Error {}

/** Keeps every PodDisruptionBudget's status (see the module comment). */
export class DisruptionController {
  #client: Client
  #pdbs: Informer
  #pods: Informer
  #rs: Informer
  #deployments: Informer
  #statefulSets: Informer
  #recorder: EventRecorder
  #queue: WorkQueue
  #selectors = new SelectorIndex()

  constructor(client: Client, informers: { pdbs: Informer; pods: Informer; replicaSets: Informer; deployments: Informer; statefulSets: Informer }, recorder: EventRecorder) {
    this.#client = client
    this.#pdbs = informers.pdbs
    this.#pods = informers.pods
    this.#rs = informers.replicaSets
    this.#deployments = informers.deployments
    this.#statefulSets = informers.statefulSets
    this.#recorder = recorder
    this.#queue = new WorkQueue((key) => this.#sync(key))
    this.#pdbs.on((type, pdb) => {
      const key = keyOf(pdb)
      if (type === 'DELETED') return this.#selectors.delete(key)
      const sel = obj(obj(pdb['spec'])['selector'])
      this.#selectors.set(key, pdb.metadata.namespace ?? '', obj(sel['matchLabels']) as Record<string, string>)
      this.#queue.add(key)
    })
    // A pod's change concerns the budgets of its namespace whose selector matches it (getPdbForPod).
    this.#pods.on((_type, pod) => {
      for (const key of this.#selectors.candidates(pod.metadata.namespace ?? '', pod.metadata.labels)) {
        const pdb = this.#pdbs.get(key)
        if (pdb && labelSelectorMatcher(obj(pdb['spec'])['selector'])(pod.metadata.labels)) this.#queue.add(key)
      }
    })
  }

  /** Queues every PodDisruptionBudget (periodic resync). */
  resync(): void {
    for (const pdb of this.#pdbs.list()) this.#queue.add(keyOf(pdb))
  }

  /** Starts processing (once the caches have listed). */
  run(): void {
    this.#queue.start()
  }

  /** Stops the work queue. */
  async stop(): Promise<void> {
    await this.#queue.shutdown()
  }

  async #sync(key: string): Promise<void> {
    const pdb = this.#pdbs.get(key)
    if (!pdb || pdb.metadata.deletionTimestamp) return
    const spec = obj(pdb['spec'])
    const matches = labelSelectorMatcher(spec['selector'])
    const ns = pdb.metadata.namespace ?? ''
    const pods = this.#pods.withLabels(ns, obj(obj(spec['selector'])['matchLabels']) as Record<string, string>).filter((p) => matches(p.metadata.labels))
    if (pods.length === 0) this.#recorder.event(pdb, 'Normal', 'NoPods', 'No matching pods found')
    let expected: { expectedCount: number; desiredHealthy: number; unmanaged: string[] }
    try {
      expected = this.#expectedPodCount(spec, pods)
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      this.#recorder.event(pdb, 'Warning', 'CalculateExpectedPodCountFailed', `Failed to calculate the number of expected pods: ${message}`)
      await this.#failSafe(pdb, message)
      return
    }
    if (expected.unmanaged.length > 0) {
      this.#recorder.event(pdb, 'Warning', 'UnmanagedPods', `Pods selected by this PodDisruptionBudget (selector: ${selectorText(spec['selector'])}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`)
    }
    // buildDisruptedPodMap: evictions recorded in the status count until their pod goes or the timeout passes.
    const old = obj(pdb['status'])
    const disrupted: Record<string, string> = {}
    const present = new Map(pods.map((p) => [p.metadata.name ?? '', p]))
    for (const [name, at] of Object.entries(obj(old['disruptedPods']))) {
      const p = present.get(name)
      if (!p || p.metadata.deletionTimestamp || typeof at !== 'string') continue
      if (Date.parse(at) + deletionTimeoutMs > Date.now()) disrupted[name] = at
    }
    const currentHealthy = pods.filter((p) => !p.metadata.deletionTimestamp && !((p.metadata.name ?? '') in disrupted) && isPodReady(p)).length
    await this.#update(pdb, currentHealthy, expected.desiredHealthy, expected.expectedCount, disrupted)
  }

  /** getExpectedPodCount */
  #expectedPodCount(spec: JsonObject, pods: KubeObject[]): { expectedCount: number; desiredHealthy: number; unmanaged: string[] } {
    const maxUnavailable = spec['maxUnavailable']
    const minAvailable = spec['minAvailable']
    if (maxUnavailable !== undefined && maxUnavailable !== null) {
      const { expectedCount, unmanaged } = this.#expectedScale(pods)
      return { expectedCount, desiredHealthy: Math.max(0, expectedCount - scaled(maxUnavailable, expectedCount)), unmanaged }
    }
    if (typeof minAvailable === 'number') return { expectedCount: pods.length, desiredHealthy: minAvailable, unmanaged: [] }
    if (typeof minAvailable === 'string') {
      const { expectedCount, unmanaged } = this.#expectedScale(pods)
      return { expectedCount, desiredHealthy: scaled(minAvailable, expectedCount), unmanaged }
    }
    return { expectedCount: 0, desiredHealthy: 0, unmanaged: [] }
  }

  /** getExpectedScale: the sum of the scales of the pods' controllers, each counted once. */
  #expectedScale(pods: KubeObject[]): { expectedCount: number; unmanaged: string[] } {
    const scales = new Map<string, number>()
    const unmanaged: string[] = []
    const seenRefs = new Set<string>()
    for (const pod of pods) {
      const ref = controllerOf(pod)
      if (!ref) {
        unmanaged.push(pod.metadata.name ?? '')
        continue
      }
      if (seenRefs.has(ref.uid)) continue
      seenRefs.add(ref.uid)
      const found = this.#controllerScale(pod.metadata.namespace ?? '', ref.kind, ref.apiVersion, ref.name, ref.uid)
      if (!found) throw new SyncError(`found no controllers for pod ${JSON.stringify(pod.metadata.name ?? '')}`)
      scales.set(found.uid, found.scale)
    }
    let expectedCount = 0
    for (const n of scales.values()) expectedCount += n
    return { expectedCount, unmanaged }
  }

  /** The finders: getPodReplicaSet, getPodDeployment, getPodStatefulSet. */
  #controllerScale(namespace: string, kind: string, apiVersion: string, name: string, uid: string): { uid: string; scale: number } | undefined {
    const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : ''
    if (group !== 'apps' && group !== 'extensions') return undefined
    if (kind === 'ReplicaSet') {
      const rs = this.#rs.get(`${namespace}/${name}`)
      if (!rs || rs.metadata.uid !== uid) return undefined
      const owner = controllerOf(rs)
      if (owner?.kind === 'Deployment') {
        const d = this.#deployments.get(`${namespace}/${owner.name}`)
        return d && d.metadata.uid === owner.uid ? { uid: owner.uid, scale: specReplicas(d) } : undefined
      }
      return { uid, scale: specReplicas(rs) }
    }
    if (kind === 'StatefulSet') {
      const sts = this.#statefulSets.get(`${namespace}/${name}`)
      return sts && sts.metadata.uid === uid ? { uid, scale: specReplicas(sts) } : undefined
    }
    return undefined
  }

  /** updatePdbStatus */
  async #update(pdb: KubeObject, currentHealthy: number, desiredHealthy: number, expectedPods: number, disrupted: Record<string, string>): Promise<void> {
    let disruptionsAllowed = currentHealthy - desiredHealthy
    if (expectedPods <= 0 || disruptionsAllowed <= 0) disruptionsAllowed = 0
    const generation = pdb.metadata.generation ?? 0
    const status: JsonObject = { disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods }
    if (generation) status['observedGeneration'] = generation
    if (Object.keys(disrupted).length > 0) status['disruptedPods'] = disrupted
    const allowed = disruptionsAllowed > 0
    status['conditions'] = setCondition(obj(pdb['status'])['conditions'], {
      type: 'DisruptionAllowed', status: allowed ? 'True' : 'False', reason: allowed ? 'SufficientPods' : 'InsufficientPods', message: '', observedGeneration: generation,
    })
    await this.#write(pdb, status)
  }

  /** failSafe: a sync that cannot compute the status leaves no disruption allowed. */
  async #failSafe(pdb: KubeObject, message: string): Promise<void> {
    const old = obj(pdb['status'])
    const generation = pdb.metadata.generation ?? 0
    const status: JsonObject = { ...old, disruptionsAllowed: 0 }
    status['conditions'] = setCondition(old['conditions'], { type: 'DisruptionAllowed', status: 'False', reason: 'SyncFailed', message, observedGeneration: generation })
    await this.#write(pdb, status)
  }

  async #write(pdb: KubeObject, status: JsonObject): Promise<void> {
    if (sameJson(obj(pdb['status']), status)) return
    try {
      await this.#client.update(podDisruptionBudgets, statusUpdate(pdb, status), { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err)) throw err
    }
  }
}

interface Condition {
  type: string
  status: string
  reason: string
  message: string
  observedGeneration: number
  lastTransitionTime?: string
}

/** apimeta.SetStatusCondition: lastTransitionTime moves only when the status changes. */
function setCondition(existing: unknown, c: Condition): Json {
  const conds = (Array.isArray(existing) ? existing : []) as unknown as Condition[]
  const cur = conds.find((x) => x.type === c.type)
  const next: Condition = { ...c, lastTransitionTime: cur && cur.status === c.status && cur.lastTransitionTime ? cur.lastTransitionTime : rfc3339() }
  if (!next.observedGeneration) delete (next as Partial<Condition>).observedGeneration
  const out = conds.map((x) => (x.type === c.type ? next : x))
  if (!cur) out.push(next)
  return out as unknown as Json
}

/** A LabelSelector as Go's `%v` of *metav1.LabelSelector prints it in the UnmanagedPods message. */
function selectorText(sel: unknown): string {
  const s = obj(sel)
  const labels = Object.entries(obj(s['matchLabels'])).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}: ${String(v)},`).join('')
  return `&LabelSelector{MatchLabels:map[string]string{${labels}},MatchExpressions:[]LabelSelectorRequirement{},}`
}
