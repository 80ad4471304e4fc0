/**
 * The StatefulSet controller, after kube-controller-manager's pkg/controller/statefulset
 * (stateful_set_control.go `updateStatefulSet`, stateful_set_utils.go, stateful_pod_control.go)
 * and pkg/controller/history (ControllerRevisions):
 * - pods `<set>-<ordinal>` for the ordinals `[ordinals.start, ordinals.start + replicas)`, with
 *   `hostname` = the pod's name, `subdomain` = `serviceName`, the labels
 *   `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
 *   `controller-revision-hash` (the revision's name), a controller ownerReference, and one
 *   `persistentVolumeClaim` volume per claim template (`<claim>-<set>-<ordinal>`);
 * - `OrderedReady`: one pod at a time, each created once its predecessors are Running and Ready
 *   (and available for `minReadySeconds`); pods beyond the count go from the highest ordinal
 *   down, one at a time, once the others are healthy. `Parallel`: all at once, no waiting;
 * - `RollingUpdate`: from the highest ordinal down to `partition`, one pod at a time is deleted
 *   (re-created at the update revision by the next sync) once the pods above it are healthy; pods
 *   below the partition are (re-)created at the current revision. `OnDelete`: pods are re-created
 *   at the update revision only when someone deletes them;
 * - ControllerRevisions `<set>-<hash>` holding `{"spec":{"template":{…,"$patch":"replace"}}}`,
 *   numbered, an older one reused (and renumbered) when the template goes back to it, the
 *   oldest unused ones deleted beyond `revisionHistoryLimit`;
 * - status: replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
 *   currentRevision, updateRevision, observedGeneration, collisionCount; a rolling update is
 *   complete (current = update) once every pod is updated and ready;
 * - Events `SuccessfulCreate`/`SuccessfulDelete`/`FailedCreate`/`FailedDelete` with upstream's
 *   messages (stateful_pod_control.go recordPodEvent), a Warning once per distinct message.
 * - orphan pods of the wanted ordinals (left by `--cascade=orphan`) and an orphan revision with
 *   the same data are adopted.
 * Not simulated: PersistentVolumeClaims (not served here, so claims are not created),
 * `maxUnavailable` (the MaxUnavailableStatefulSet gate is off in 1.34: one pod at a time),
 * adoption of orphans beyond the wanted ordinals, release of pods whose labels stop matching,
 * and repairs of a pod's volumes (its identity labels are restored).
 */
import type { Json, JsonObject, KubeObject } from '../types.ts'
import { goJson } from '../../kube/builtin/field.ts'
import { selectorMatches } from '../../kube/builtin/meta.ts'
import { ApiError, Client, isConflict, isNotFound, pods, statefulSets, type GVR } from './client.ts'
import { keyOf, type Informer, WorkQueue } from './informer.ts'
import { safeAlphabet } from './names.ts'
import type { EventRecorder } from './events.ts'
import { controllerOf, controllerRef, isPodReady, sameJson } from './replicaset.ts'

/** apps/v1 controllerrevisions */
export const controllerRevisions: GVR = { group: 'apps', version: 'v1', resource: 'controllerrevisions' }

/** apps.StatefulSetRevisionLabel: the revision a pod was created from. */
export const revisionLabel = 'controller-revision-hash'
/** apps.StatefulSetPodNameLabel */
export const podNameLabel = 'statefulset.kubernetes.io/pod-name'
/** apps.PodIndexLabel */
export const podIndexLabel = 'apps.kubernetes.io/pod-index'
/** history.ControllerRevisionHashLabel */
const hashLabel = 'controller.kubernetes.io/hash'

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}

/** FNV-1 (not 1a), 32 bits, as Go's hash/fnv New32 that history.HashControllerRevision uses. */
function fnv32(text: string): number {
  let h = 0x811c9dc5
  for (const byte of Buffer.from(text, 'utf8')) {
    h = Math.imul(h, 0x01000193) >>> 0
    h ^= byte
  }
  return h >>> 0
}

/**
 * history.HashControllerRevision: FNV-32 of the revision's raw data (Go's JSON of it: keys
 * sorted, as getPatch re-marshals a map), then the collision count in decimal, written through
 * `rand.SafeEncodeString`.
 */
export function revisionHash(data: Json, collisionCount: number): string {
  // getStatefulSetRevisions always passes a collision count, so it is always hashed (`0` too).
  const decimal = String(fnv32(goJson(data) + String(collisionCount)))
  return [...decimal].map((d) => safeAlphabet[d.charCodeAt(0) % safeAlphabet.length]).join('')
}

/**
 * stateful_set_utils.go getPatch: the template alone, marked to replace the whole template when
 * applied, as Go encodes it (a template's metadata carries `creationTimestamp: null`).
 */
export function revisionData(set: KubeObject): JsonObject {
  const template = structuredClone(obj(obj(set['spec'])['template']))
  template['metadata'] = { ...obj(template['metadata']), creationTimestamp: null }
  return { spec: { template: { ...template, $patch: 'replace' } } }
}

/** The pod template a revision holds (history ApplyRevision of the patch above). */
function templateOf(revision: KubeObject): JsonObject {
  const { $patch: _p, ...template } = obj(obj(obj(revision['data'])['spec'])['template'])
  const metadata = { ...obj(template['metadata']) }
  delete metadata['creationTimestamp']
  return { ...template, metadata }
}

function revisionNumber(r: KubeObject): number {
  return typeof r['revision'] === 'number' ? r['revision'] : 0
}

/** The ordinal in a pod's name `<set>-<n>`, or -1 (getParentNameAndOrdinal). */
function ordinalOf(set: KubeObject, pod: KubeObject): number {
  const prefix = `${set.metadata.name ?? ''}-`
  const name = pod.metadata.name ?? ''
  if (!name.startsWith(prefix)) return -1
  const rest = name.slice(prefix.length)
  return /^(0|[1-9]\d*)$/.test(rest) ? Number(rest) : -1
}

const phaseOf = (pod: KubeObject): string => String(obj(pod['status'])['phase'] ?? '')
const isTerminating = (pod: KubeObject): boolean => !!pod.metadata.deletionTimestamp
const isRunningAndReady = (pod: KubeObject): boolean => phaseOf(pod) === 'Running' && isPodReady(pod)
const isHealthy = (pod: KubeObject): boolean => isRunningAndReady(pod) && !isTerminating(pod)

/** Milliseconds until a ready pod has been ready for `minReadySeconds` (0 when available). */
function untilAvailable(pod: KubeObject, minReadySeconds: number, at: number): number {
  if (minReadySeconds <= 0) return 0
  const conds = obj(pod['status'])['conditions']
  const ready = Array.isArray(conds) ? conds.map(obj).find((c) => c['type'] === 'Ready') : undefined
  const since = Date.parse(String(ready?.['lastTransitionTime'] ?? ''))
  if (Number.isNaN(since)) return 0
  return Math.max(0, since + minReadySeconds * 1000 - at)
}

interface Spec {
  replicas: number
  start: number
  parallel: boolean
  rolling: boolean
  partition: number
  minReadySeconds: number
  historyLimit: number
}

function specOf(set: KubeObject): Spec {
  const spec = obj(set['spec'])
  const strategy = obj(spec['updateStrategy'])
  const num = (v: unknown, d: number) => (typeof v === 'number' ? v : d)
  return {
    replicas: num(spec['replicas'], 1),
    start: num(obj(spec['ordinals'])['start'], 0),
    parallel: spec['podManagementPolicy'] === 'Parallel',
    rolling: (strategy['type'] ?? 'RollingUpdate') === 'RollingUpdate',
    partition: num(obj(strategy['rollingUpdate'])['partition'], 0),
    minReadySeconds: num(spec['minReadySeconds'], 0),
    historyLimit: num(spec['revisionHistoryLimit'], 10),
  }
}

/** Keeps each StatefulSet's pods, revisions and status (see the module comment). */
export class StatefulSetController {
  #client: Client
  #sets: Informer
  #revisions: Informer
  #pods: Informer
  #queue: WorkQueue

  #recorder: EventRecorder

  constructor(client: Client, setInformer: Informer, revisionInformer: Informer, podInformer: Informer, recorder: EventRecorder) {
    this.#client = client
    this.#recorder = recorder
    this.#sets = setInformer
    this.#revisions = revisionInformer
    this.#pods = podInformer
    this.#queue = new WorkQueue((key) => this.#sync(key))
    setInformer.on((type, set) => {
      if (type !== 'DELETED') this.#queue.add(keyOf(set))
    })
    const owned = (_type: string, o: KubeObject) => {
      const ref = controllerOf(o)
      if (ref?.kind === 'StatefulSet' && ref.apiVersion.startsWith('apps/')) this.#queue.add(`${o.metadata.namespace ?? ''}/${ref.name}`)
    }
    podInformer.on(owned)
    revisionInformer.on(owned)
  }

  /** Queues every StatefulSet (periodic resync). */
  resync(): void {
    for (const set of this.#sets.list()) this.#queue.add(keyOf(set))
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
    const set = this.#sets.get(key)
    if (!set || set.metadata.deletionTimestamp) return
    const uid = set.metadata.uid ?? ''
    const ownedBy = (o: KubeObject) => controllerOf(o)?.uid === uid
    const revisions = this.#revisions.dependentsOf(uid).filter(ownedBy).sort((a, b) => revisionNumber(a) - revisionNumber(b))
    const collisionCount = typeof obj(set['status'])['collisionCount'] === 'number' ? (obj(set['status'])['collisionCount'] as number) : 0
    const { update, current } = await this.#revisionsOf(set, revisions, collisionCount)
    const spec = specOf(set)
    // Adopted pods arrive as MODIFIED events, which queue the next sync.
    if (await this.#adoptOrphans(set, spec, this.#pods.dependentsOf(uid).filter(ownedBy).length)) return
    const waitMs = await this.#manage(set, spec, current, update)
    const owned = this.#pods.dependentsOf(uid).filter(ownedBy)
    await this.#updateStatus(set, spec, owned, current, update, collisionCount)
    await this.#truncateHistory(set, spec, owned, [...revisions, update], current, update)
    if (waitMs > 0) this.#queue.addAfter(key, waitMs + 10)
  }

  /**
   * stateful_set_control.go getStatefulSetRevisions: the update revision is the newest revision
   * equal to the template (renumbered to the top when an older one), else a new one; the
   * current revision is the one named in status, else the update revision.
   */
  async #revisionsOf(set: KubeObject, revisions: KubeObject[], collisionCount: number): Promise<{ update: KubeObject; current: KubeObject }> {
    const data = revisionData(set)
    const top = revisions.length > 0 ? revisionNumber(revisions[revisions.length - 1] as KubeObject) : 0
    const equal = revisions.filter((r) => sameJson(r['data'], data))
    let update = equal[equal.length - 1]
    if (update && revisionNumber(update) !== top) {
      update = (await this.#client.mergePatch(controllerRevisions, set.metadata.namespace, update.metadata.name ?? '', { revision: top + 1 })).object
    } else if (!update) {
      update = await this.#createRevision(set, data, top + 1, collisionCount)
    }
    const currentName = obj(set['status'])['currentRevision']
    const current = revisions.find((r) => r.metadata.name === currentName) ?? update
    return { update, current }
  }

  /** history.NewControllerRevision and realHistory.CreateControllerRevision. */
  async #createRevision(set: KubeObject, data: JsonObject, revision: number, collisionCount: number): Promise<KubeObject> {
    const hash = revisionHash(data, collisionCount)
    const labels = { ...(obj(obj(obj(obj(set['spec'])['template'])['metadata'])['labels']) as Record<string, string>), [hashLabel]: hash }
    const name = `${(set.metadata.name ?? '').slice(0, 223)}-${hash}`
    const metadata: KubeObject['metadata'] = { name, namespace: set.metadata.namespace, labels, ownerReferences: [controllerRef(set)] }
    if (set.metadata.annotations) metadata.annotations = { ...set.metadata.annotations }
    const cr = { apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata, data, revision } as unknown as KubeObject
    try {
      return (await this.#client.create(controllerRevisions, set.metadata.namespace, cr)).object
    } catch (err) {
      if (!isConflict(err)) throw err
      // The name is taken: the same data is that revision (an orphan is adopted, as
      // adoptOrphanRevisions would have); other data is a hash collision.
      const existing = await this.#client.get(controllerRevisions, set.metadata.namespace, name)
      if (sameJson(existing['data'], data)) return controllerOf(existing) ? existing : await this.#adopt(set, controllerRevisions, existing)
      await this.#client.update(statefulSets, { ...set, status: { ...obj(set['status']), collisionCount: collisionCount + 1 } }, { subresource: 'status' })
      throw err // retried with the new collision count once the StatefulSet's update arrives
    }
  }

  /** Adds the set's controller reference to an orphan (ControllerRefManager.AdoptPod/AdoptControllerRevision), guarded by its uid. */
  async #adopt(set: KubeObject, gvr: GVR, orphan: KubeObject): Promise<KubeObject> {
    const refs = [...(orphan.metadata.ownerReferences ?? []), controllerRef(set)]
    return (await this.#client.mergePatch(gvr, orphan.metadata.namespace, orphan.metadata.name ?? '', { metadata: { uid: orphan.metadata.uid, ownerReferences: refs } })).object
  }

  /**
   * ClaimPods, for the ordinals the set wants: a pod of that name with no controller whose labels
   * match the selector is adopted rather than re-created (orphans left by `--cascade=orphan`).
   */
  async #adoptOrphans(set: KubeObject, spec: Spec, owned: number): Promise<boolean> {
    if (owned >= spec.replicas) return false
    const selector = obj(obj(set['spec'])['selector'])
    let adopted = false
    for (let ord = spec.start; ord < spec.start + spec.replicas; ord++) {
      const pod = this.#pods.get(`${set.metadata.namespace ?? ''}/${set.metadata.name ?? ''}-${ord}`)
      if (!pod || controllerOf(pod) || pod.metadata.deletionTimestamp || !selectorMatches(selector, pod.metadata.labels ?? {})) continue
      try {
        await this.#adopt(set, pods, pod)
        adopted = true
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err
      }
    }
    return adopted
  }

  /**
   * One pass of updateStatefulSet's pod management: create and repair replicas, delete the
   * condemned, then roll one pod; returns how long to wait for a pod to become available.
   */
  async #manage(set: KubeObject, spec: Spec, current: KubeObject, update: KubeObject): Promise<number> {
    const uid = set.metadata.uid ?? ''
    const monotonic = !spec.parallel
    const replicas: (KubeObject | undefined)[] = Array.from({ length: spec.replicas })
    const condemned: KubeObject[] = []
    for (const pod of this.#pods.dependentsOf(uid)) {
      if (controllerOf(pod)?.uid !== uid) continue
      const ord = ordinalOf(set, pod)
      if (ord < 0) continue
      if (ord >= spec.start && ord < spec.start + spec.replicas) replicas[ord - spec.start] = pod
      else condemned.push(pod)
    }
    condemned.sort((a, b) => ordinalOf(set, b) - ordinalOf(set, a))
    const at = Date.now()
    let waitMs = 0
    // isUnavailable: not Running and Ready, terminating, or ready for less than minReadySeconds.
    const unavailable = (p: KubeObject) => {
      if (!isHealthy(p)) return true
      const wait = untilAvailable(p, spec.minReadySeconds, at)
      if (wait > 0) waitMs = waitMs === 0 ? wait : Math.min(waitMs, wait)
      return wait > 0
    }
    // The first unavailable replica, else the lowest-numbered unavailable condemned pod.
    const firstUnavailable = [...replicas, ...[...condemned].reverse()].find((p) => p !== undefined && unavailable(p))

    for (let i = 0; i < replicas.length; i++) {
      const pod = replicas[i]
      const ordinal = spec.start + i
      if (!pod) {
        // newVersionedStatefulSetPod: below the partition, pods are made at the current revision.
        const atCurrent = spec.rolling && ordinal < spec.start + spec.partition
        await this.#createPod(set, ordinal, atCurrent ? current : update)
        if (monotonic) return 0
        continue
      }
      const phase = phaseOf(pod)
      if (phase === 'Failed' || phase === 'Succeeded') {
        // A pod that finished is deleted; the next sync re-creates it.
        if (!isTerminating(pod)) await this.#deletePod(set, pod)
        if (monotonic) return 0
        continue
      }
      if (isTerminating(pod) || !isRunningAndReady(pod)) {
        if (monotonic) return 0
        continue
      }
      if (unavailable(pod) && monotonic) return waitMs
      // identityMatches / UpdateStatefulPod: a pod that lost its identity labels gets them back.
      const name = `${set.metadata.name ?? ''}-${ordinal}`
      if (pod.metadata.labels?.[podNameLabel] !== name) {
        try {
          await this.#client.mergePatch(pods, pod.metadata.namespace, name, { metadata: { uid: pod.metadata.uid, labels: { [podNameLabel]: name, [podIndexLabel]: String(ordinal) } } })
        } catch (err) {
          if (!isNotFound(err) && !isConflict(err)) throw err
        }
      }
    }

    for (const pod of condemned) {
      if (isTerminating(pod)) {
        if (monotonic) return waitMs
        continue
      }
      if (monotonic && pod !== firstUnavailable && (!isRunningAndReady(pod) || unavailable(pod))) return waitMs
      await this.#deletePod(set, pod)
      if (monotonic) return waitMs
    }

    if (!spec.rolling) return waitMs
    for (let i = replicas.length - 1; i >= Math.max(0, spec.partition); i--) {
      const pod = replicas[i]
      if (!pod) return waitMs
      if (pod.metadata.labels?.[revisionLabel] !== update.metadata.name && !isTerminating(pod)) {
        await this.#deletePod(set, pod)
        return waitMs
      }
      if (unavailable(pod)) return waitMs
    }
    return waitMs
  }

  /** stateful_set_utils.go newStatefulSetPod (GetPodFromTemplate, initIdentity, updateStorage) and setPodRevision. */
  async #createPod(set: KubeObject, ordinal: number, revision: KubeObject): Promise<void> {
    const template = templateOf(revision)
    const tmeta = obj(template['metadata'])
    const setName = set.metadata.name ?? ''
    const name = `${setName}-${ordinal}`
    const labels: Record<string, string> = { ...(obj(tmeta['labels']) as Record<string, string>), [podNameLabel]: name, [podIndexLabel]: String(ordinal), [revisionLabel]: revision.metadata.name ?? '' }
    const metadata: KubeObject['metadata'] = { name, namespace: set.metadata.namespace, labels, ownerReferences: [controllerRef(set)] }
    if (tmeta['annotations']) metadata.annotations = structuredClone(tmeta['annotations']) as Record<string, string>
    if (Array.isArray(tmeta['finalizers'])) metadata.finalizers = structuredClone(tmeta['finalizers']) as string[]
    const podSpec = structuredClone(obj(template['spec']))
    podSpec['hostname'] = name
    podSpec['subdomain'] = String(obj(set['spec'])['serviceName'] ?? '')
    const claims = obj(set['spec'])['volumeClaimTemplates']
    if (Array.isArray(claims) && claims.length > 0) {
      const volumes = (Array.isArray(podSpec['volumes']) ? podSpec['volumes'] : []).map(obj)
      for (const claim of claims.map(obj)) {
        const claimName = String(obj(claim['metadata'])['name'] ?? '')
        const volume: JsonObject = { name: claimName, persistentVolumeClaim: { claimName: `${claimName}-${setName}-${ordinal}` } }
        const i = volumes.findIndex((v) => v['name'] === claimName)
        if (i >= 0) volumes[i] = volume
        else volumes.push(volume)
      }
      podSpec['volumes'] = volumes
    }
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata, spec: podSpec } as unknown as KubeObject
    try {
      await this.#client.create(pods, set.metadata.namespace, pod)
    } catch (err) {
      // Already there: the cache is behind (the pod's ADDED event queues another sync).
      if (isConflict(err)) return
      if (err instanceof ApiError && !err.causes.includes('NamespaceTerminating')) await this.#event(set, 'Warning', 'FailedCreate', `create Pod ${name} in StatefulSet ${setName} failed error: ${err.message}`)
      throw err
    }
    await this.#event(set, 'Normal', 'SuccessfulCreate', `create Pod ${name} in StatefulSet ${setName} successful`)
  }

  async #deletePod(set: KubeObject, pod: KubeObject): Promise<void> {
    try {
      await this.#client.delete(pods, pod.metadata.namespace, pod.metadata.name ?? '', { uid: pod.metadata.uid ?? '' })
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return
      if (err instanceof ApiError) await this.#event(set, 'Warning', 'FailedDelete', `delete Pod ${pod.metadata.name ?? ''} in StatefulSet ${set.metadata.name ?? ''} failed error: ${err.message}`)
      throw err
    }
    await this.#event(set, 'Normal', 'SuccessfulDelete', `delete Pod ${pod.metadata.name ?? ''} in StatefulSet ${set.metadata.name ?? ''} successful`)
  }

  /** An Event on the StatefulSet, through the controllers' recorder (counted and folded as client-go's is). */
  async #event(set: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    this.#recorder.event(set, type, reason, message)
  }

  /** stateful_set_control.go computeReplicaStatus, completeRollingUpdate and updateStatefulSetStatus. */
  async #updateStatus(set: KubeObject, spec: Spec, owned: KubeObject[], current: KubeObject, update: KubeObject, collisionCount: number): Promise<void> {
    const at = Date.now()
    let replicas = 0
    let ready = 0
    let available = 0
    let currentReplicas = 0
    let updated = 0
    for (const pod of owned) {
      if (ordinalOf(set, pod) < 0) continue
      if (phaseOf(pod) !== '') replicas++
      if (isRunningAndReady(pod)) {
        ready++
        if (untilAvailable(pod, spec.minReadySeconds, at) === 0) available++
      }
      if (phaseOf(pod) !== '' && !isTerminating(pod)) {
        const rev = pod.metadata.labels?.[revisionLabel]
        if (rev === current.metadata.name) currentReplicas++
        if (rev === update.metadata.name) updated++
      }
    }
    let currentRevision = current.metadata.name ?? ''
    if (spec.rolling && updated === replicas && ready === replicas) {
      currentReplicas = updated
      currentRevision = update.metadata.name ?? ''
    }
    const old = obj(set['status'])
    // StatefulSetStatus: replicas and availableReplicas are always serialised, the rest omitempty.
    const status: JsonObject = { replicas, availableReplicas: available, collisionCount }
    if (set.metadata.generation) status['observedGeneration'] = set.metadata.generation
    if (ready) status['readyReplicas'] = ready
    if (currentReplicas) status['currentReplicas'] = currentReplicas
    if (updated) status['updatedReplicas'] = updated
    if (currentRevision) status['currentRevision'] = currentRevision
    if (update.metadata.name) status['updateRevision'] = update.metadata.name
    if (Array.isArray(old['conditions'])) status['conditions'] = old['conditions']
    if (sameJson(old, status)) return
    try {
      await this.#client.update(statefulSets, { ...set, status }, { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err)) throw err
    }
  }

  /** stateful_set_control.go truncateHistory: revisions no pod uses, beyond revisionHistoryLimit, oldest first. */
  async #truncateHistory(set: KubeObject, spec: Spec, owned: KubeObject[], revisions: KubeObject[], current: KubeObject, update: KubeObject): Promise<void> {
    const live = new Set([current.metadata.name, update.metadata.name, ...owned.map((p) => p.metadata.labels?.[revisionLabel])])
    const seen = new Set<string>()
    const unused = revisions
      .filter((r) => {
        const n = r.metadata.name ?? ''
        if (seen.has(n) || live.has(n)) return false
        seen.add(n)
        return true
      })
      .sort((a, b) => revisionNumber(a) - revisionNumber(b))
    for (const r of unused.slice(0, Math.max(0, unused.length - spec.historyLimit))) {
      try {
        await this.#client.delete(controllerRevisions, set.metadata.namespace, r.metadata.name ?? '', { uid: r.metadata.uid ?? '' })
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err
      }
    }
  }
}
