/**
 * The Deployment controller: one ReplicaSet per pod template (`<deployment>-<pod-template-hash>`),
 * rolling from the old ones to the new one, and the Deployment's status.
 *
 * The rollout follows the real RollingUpdate arithmetic without its refinements:
 * - the new ReplicaSet may grow while the total of all ReplicaSets' `spec.replicas` stays within
 *   `replicas + maxSurge`;
 * - old ReplicaSets shrink (oldest first) while the available pods of all ReplicaSets stay at or
 *   above `replicas - maxUnavailable`; an old ReplicaSet's unavailable pods may go first;
 * - `Recreate` scales the old ReplicaSets to 0, waits for their pods to go, then scales up the new one.
 * `paused` stops rollouts (a lone active ReplicaSet still follows the scale) and shows
 * Progressing=Unknown DeploymentPaused, then DeploymentResumed.
 * Revisions as sync.go and deployment_util.go keep them: a new ReplicaSet gets the old ones'
 * highest `deployment.kubernetes.io/revision` + 1, an old one whose template comes back is raised to
 * it (its former revisions in `revision-history`), the Deployment carries its new ReplicaSet's
 * revision; `revisionHistoryLimit` bounds the scaled-down old ReplicaSets. Each scaling is a
 * `ScalingReplicaSet` Event on the Deployment.
 * `progressDeadlineSeconds` is kept as progress.go keeps it (progress.ts): a rollout with no
 * progress for that long is Progressing False ProgressDeadlineExceeded.
 * Not simulated: proportional scaling of several ReplicaSets mid-rollout, minReadySeconds
 * (ready counts as available).
 */
import type { Json, JsonObject, KubeObject } from '../types.ts'
import { Client, deployments, isConflict, isNotFound, replicaSets, statusUpdate } from './client.ts'
import type { EventRecorder } from './events.ts'
import { keyOf, type Informer, WorkQueue } from './informer.ts'
import { podTemplateHash } from './names.ts'
import { controllerOf, controllerRef, sameJson, specReplicas } from './replicaset.ts'
import { clone } from '../../kube/json.ts'
import { rfc3339 } from '../../kube/time.ts'
import { timedOutCondition, untilTimeout } from './progress.ts'

const revisionKey = 'deployment.kubernetes.io/revision'
const desiredKey = 'deployment.kubernetes.io/desired-replicas'
const maxKey = 'deployment.kubernetes.io/max-replicas'
const historyKey = 'deployment.kubernetes.io/revision-history'
/** Annotations a Deployment does not pass on to its ReplicaSets (deployment_util.go annotationsToSkip). */
const notCopied = new Set(['kubectl.kubernetes.io/last-applied-configuration', revisionKey, historyKey, desiredKey, maxKey, 'deployment.kubernetes.io/error-selector-overlapping-with', 'deployment.kubernetes.io/selector-updated-at'])
/** deployment_util.go revHistoryLimitInChars: the revision history is cut to this length, oldest first. */
const historyMaxChars = 2000

function obj(v: unknown): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonObject) : {}
}
function num(v: unknown): number {
  return typeof v === 'number' ? v : 0
}

/** Resolves an int-or-percent against a total (percentages round up for surge, down for unavailable). */
function intOrPercent(v: unknown, total: number, roundUp: boolean, dflt: string): number {
  const x = v === undefined || v === null ? dflt : v
  if (typeof x === 'number') return x
  const m = /^(\d+)%$/.exec(String(x))
  if (!m) return Number(x) || 0
  const f = (Number(m[1]) * total) / 100
  return roundUp ? Math.ceil(f) : Math.floor(f)
}

/** maxSurge and maxUnavailable of a RollingUpdate Deployment (never both 0: unavailable becomes 1). */
export function rollingBounds(d: KubeObject): { surge: number; unavailable: number } {
  const replicas = specReplicas(d)
  const ru = obj(obj(obj(d['spec'])['strategy'])['rollingUpdate'])
  const surge = intOrPercent(ru['maxSurge'], replicas, true, '25%')
  let unavailable = intOrPercent(ru['maxUnavailable'], replicas, false, '25%')
  if (surge === 0 && unavailable === 0) unavailable = 1
  return { surge, unavailable: Math.min(unavailable, replicas) }
}

function revisionOf(rs: KubeObject): number {
  return Number(rs.metadata.annotations?.[revisionKey] ?? 0) || 0
}

function statusOf(rs: KubeObject, field: string): number {
  return num(obj(rs['status'])[field])
}

interface Condition {
  type: string
  status: string
  lastUpdateTime: string
  lastTransitionTime: string
  reason: string
  message: string
}

/** deploymentutil.SetDeploymentCondition: same status and reason → unchanged; same status → keep transition time; moved last. */
function setCondition(conds: Condition[], c: Condition): Condition[] {
  const cur = conds.find((x) => x.type === c.type)
  if (cur && cur.status === c.status && cur.reason === c.reason) return conds
  if (cur && cur.status === c.status) c.lastTransitionTime = cur.lastTransitionTime
  return [...conds.filter((x) => x.type !== c.type), c]
}

/** Reconciles each Deployment's ReplicaSets and status (see the module comment). */
export class DeploymentController {
  #client: Client
  #deployments: Informer
  #rs: Informer
  #queue: WorkQueue
  #recorder: EventRecorder
  /**
   * Each Deployment's pod-template-hash at the generation it was computed for: the server raises
   * `metadata.generation` whenever the spec changes, so uid and generation name the template.
   */
  #hashes = new Map<string, { generation: number; hash: string }>()
  /** By Deployment key: the look again at its progress deadline (requeueStuckDeployment). */
  #deadlines = new Map<string, NodeJS.Timeout>()
  #stopped = false

  constructor(client: Client, deploymentInformer: Informer, rsInformer: Informer, recorder: EventRecorder) {
    this.#client = client
    this.#recorder = recorder
    this.#deployments = deploymentInformer
    this.#rs = rsInformer
    this.#queue = new WorkQueue((key) => this.#sync(key))
    deploymentInformer.on((type, d) => {
      if (type !== 'DELETED') this.#queue.add(keyOf(d))
      else this.#hashes.delete(d.metadata.uid ?? '')
    })
    rsInformer.on((_type, rs) => {
      const ref = controllerOf(rs)
      if (ref?.kind === 'Deployment') this.#queue.add(`${rs.metadata.namespace ?? ''}/${ref.name}`)
    })
  }

  /** Queues every Deployment (periodic resync). */
  resync(): void {
    for (const d of this.#deployments.list()) this.#queue.add(keyOf(d))
  }

  /** Starts processing (once the caches have listed). */
  run(): void {
    this.#queue.start()
  }

  /** Stops the work queue. */
  async stop(): Promise<void> {
    this.#stopped = true
    for (const t of this.#deadlines.values()) clearTimeout(t)
    this.#deadlines.clear()
    await this.#queue.shutdown()
  }

  async #sync(key: string): Promise<void> {
    const d = this.#deployments.get(key)
    if (!d || d.metadata.deletionTimestamp) return
    const uid = d.metadata.uid ?? ''
    const owned = this.#rs.dependentsOf(uid).filter((rs) => controllerOf(rs)?.uid === uid && !rs.metadata.deletionTimestamp)
    const template = obj(obj(d['spec'])['template'])
    const hash = this.#templateHash(d, template)
    let newRS = owned.find((rs) => rs.metadata.labels?.['pod-template-hash'] === hash)
    const olds = owned.filter((rs) => rs !== newRS)
    // getNewReplicaSet (sync.go): the new ReplicaSet's revision is the old ones' maximum + 1.
    const newRevision = Math.max(0, ...olds.map(revisionOf)) + 1
    if (newRS) newRS = await this.#syncNewRS(d, newRS, newRevision)
    if (obj(d['spec'])['paused'] === true) {
      // Paused: no new ReplicaSet, no rollout; a lone active ReplicaSet still follows the scale.
      const active = (newRS ? [newRS, ...olds] : olds).filter((rs) => specReplicas(rs) > 0)
      const target = active.length === 1 ? active[0] : active.length === 0 ? newRS : undefined
      if (target) await this.#scale(d, target, specReplicas(d))
      await this.#updateStatus(d, newRS, olds, 'paused')
      return
    }
    let created = false
    if (!newRS) {
      newRS = await this.#createRS(d, template, hash, olds, newRevision)
      created = true
    }
    const changed = created || (await this.#rollout(d, newRS, olds))
    await this.#cleanup(d, olds)
    await this.#updateStatus(d, newRS, olds, created ? 'created' : changed ? 'changed' : 'steady')
  }

  #templateHash(d: KubeObject, template: JsonObject): string {
    const uid = d.metadata.uid ?? ''
    const generation = d.metadata.generation
    const known = this.#hashes.get(uid)
    if (known !== undefined && known.generation === generation) return known.hash
    const hash = podTemplateHash(template)
    if (uid !== '' && typeof generation === 'number') this.#hashes.set(uid, { generation, hash })
    return hash
  }

  /**
   * SetNewReplicaSetAnnotations (deployment_util.go) on an existing new ReplicaSet: the
   * Deployment's annotations copied, the revision raised to `newRevision` when lower — an old
   * ReplicaSet whose template came back keeps its former revisions in
   * `deployment.kubernetes.io/revision-history` — and minReadySeconds followed.
   */
  async #syncNewRS(d: KubeObject, rs: KubeObject, newRevision: number): Promise<KubeObject> {
    const have = rs.metadata.annotations ?? {}
    const patch: Record<string, string> = {}
    for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) if (!notCopied.has(k) && have[k] !== v) patch[k] = v
    const oldRevision = have[revisionKey]
    if (revisionOf(rs) < newRevision) {
      patch[revisionKey] = String(newRevision)
      if (oldRevision !== undefined) {
        const history = have[historyKey] ? [...have[historyKey].split(','), oldRevision] : [oldRevision]
        while (history.length > 1 && history.join(',').length > historyMaxChars) history.shift()
        patch[historyKey] = history.join(',')
      }
    }
    const minReady = num(obj(d['spec'])['minReadySeconds'])
    const minReadyChanged = num(obj(rs['spec'])['minReadySeconds']) !== minReady
    if (Object.keys(patch).length === 0 && !minReadyChanged) return rs
    const body: JsonObject = { metadata: { annotations: patch } }
    if (minReadyChanged) body['spec'] = { minReadySeconds: minReady }
    return await this.#patchRS(rs, body)
  }

  async #createRS(d: KubeObject, template: JsonObject, hash: string, olds: KubeObject[], revision: number): Promise<KubeObject> {
    const tmeta = obj(template['metadata'])
    const labels = { ...(obj(tmeta['labels']) as Record<string, string>), 'pod-template-hash': hash }
    const rsTemplate = { ...clone(template), metadata: { ...clone(tmeta), labels } }
    const selector = clone(obj(obj(d['spec'])['selector']))
    selector['matchLabels'] = { ...obj(selector['matchLabels']), 'pod-template-hash': hash }
    const replicas = specReplicas(d)
    const strategy = String(obj(obj(d['spec'])['strategy'])['type'] ?? 'RollingUpdate')
    const oldTotal = olds.reduce((n, rs) => n + specReplicas(rs), 0)
    let initial = replicas
    if (oldTotal > 0) {
      if (strategy === 'Recreate') initial = 0
      else {
        const { surge } = rollingBounds(d)
        initial = Math.max(0, Math.min(replicas, replicas + surge - oldTotal))
      }
    }
    const annotations: Record<string, string> = {}
    for (const [k, v] of Object.entries(d.metadata.annotations ?? {})) if (!notCopied.has(k)) annotations[k] = v
    annotations[desiredKey] = String(replicas)
    annotations[maxKey] = String(replicas + (strategy === 'Recreate' ? 0 : rollingBounds(d).surge))
    annotations[revisionKey] = String(revision)
    const rs = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: `${d.metadata.name ?? ''}-${hash}`, namespace: d.metadata.namespace, labels, annotations, ownerReferences: [controllerRef(d)] },
      spec: { replicas: initial, minReadySeconds: num(obj(d['spec'])['minReadySeconds']), selector, template: rsTemplate },
    } as unknown as KubeObject
    // AlreadyExists means our cache is behind: the sync fails and is retried once the
    // ReplicaSet's ADDED event has arrived.
    const created = (await this.#client.create(replicaSets, d.metadata.namespace, rs)).object
    if (initial > 0) this.#recorder.event(d, 'Normal', 'ScalingReplicaSet', `Scaled up replica set ${created.metadata.name ?? ''} from 0 to ${initial}`)
    return created
  }

  async #patchRS(rs: KubeObject, patch: JsonObject): Promise<KubeObject> {
    return (await this.#client.mergePatch(replicaSets, rs.metadata.namespace, rs.metadata.name ?? '', patch)).object
  }

  async #scale(d: KubeObject, rs: KubeObject, replicas: number): Promise<void> {
    if (specReplicas(rs) === replicas) return
    const surge = rollingBounds(d).surge
    const from = specReplicas(rs)
    await this.#patchRS(rs, { metadata: { annotations: { [desiredKey]: String(specReplicas(d)), [maxKey]: String(specReplicas(d) + surge) } }, spec: { replicas } })
    // sync.go scaleReplicaSet
    this.#recorder.event(d, 'Normal', 'ScalingReplicaSet', `Scaled ${replicas > from ? 'up' : 'down'} replica set ${rs.metadata.name ?? ''} from ${from} to ${replicas}`)
  }

  /** One step of the rollout; true when it scaled something. */
  async #rollout(d: KubeObject, newRS: KubeObject, olds: KubeObject[]): Promise<boolean> {
    const replicas = specReplicas(d)
    const strategy = String(obj(obj(d['spec'])['strategy'])['type'] ?? 'RollingUpdate')
    const activeOlds = olds.filter((rs) => specReplicas(rs) > 0 || statusOf(rs, 'replicas') > 0)
    if (strategy === 'Recreate') {
      if (activeOlds.some((rs) => specReplicas(rs) > 0)) {
        for (const rs of activeOlds) await this.#scale(d, rs, 0)
        return true
      }
      if (activeOlds.length > 0) return false // wait for the old pods to go
      if (specReplicas(newRS) !== replicas) {
        await this.#scale(d, newRS, replicas)
        return true
      }
      return false
    }
    const { surge, unavailable } = rollingBounds(d)
    const all = [newRS, ...olds]
    const total = all.reduce((n, rs) => n + specReplicas(rs), 0)
    // Scale the new ReplicaSet up (within the surge) or down (to the desired count).
    const cur = specReplicas(newRS)
    let target = cur
    if (cur > replicas) target = replicas
    else if (cur < replicas) target = Math.min(replicas, cur + Math.max(0, replicas + surge - total))
    if (target !== cur) {
      await this.#scale(d, newRS, target)
      return true
    }
    // Scale old ReplicaSets down while enough pods stay available.
    const oldTotal = olds.reduce((n, rs) => n + specReplicas(rs), 0)
    if (oldTotal === 0) return false
    const minAvailable = replicas - unavailable
    const newUnavailable = specReplicas(newRS) - statusOf(newRS, 'availableReplicas')
    let budget = total - minAvailable - newUnavailable
    if (budget <= 0) return false
    let scaled = false
    const byAge = [...olds].sort((a, b) => ((a.metadata.creationTimestamp ?? '') < (b.metadata.creationTimestamp ?? '') ? -1 : 1))
    // First the old pods that are not available anyway (cleanupUnhealthyReplicas).
    for (const rs of byAge) {
      if (budget <= 0) break
      const unhealthy = specReplicas(rs) - statusOf(rs, 'availableReplicas')
      if (unhealthy <= 0) continue
      const down = Math.min(unhealthy, budget)
      await this.#scale(d, rs, specReplicas(rs) - down)
      budget -= down
      scaled = true
    }
    if (scaled) return true
    const available = all.reduce((n, rs) => n + statusOf(rs, 'availableReplicas'), 0)
    let canRemove = available - minAvailable
    for (const rs of byAge) {
      if (canRemove <= 0) break
      const down = Math.min(specReplicas(rs), canRemove)
      if (down <= 0) continue
      await this.#scale(d, rs, specReplicas(rs) - down)
      canRemove -= down
      scaled = true
    }
    return scaled
  }

  /** Deletes the oldest fully scaled-down ReplicaSets beyond revisionHistoryLimit. */
  async #cleanup(d: KubeObject, olds: KubeObject[]): Promise<void> {
    const limitRaw = obj(d['spec'])['revisionHistoryLimit']
    const limit = typeof limitRaw === 'number' ? limitRaw : 10
    const idle = olds.filter((rs) => specReplicas(rs) === 0 && statusOf(rs, 'replicas') === 0).sort((a, b) => revisionOf(a) - revisionOf(b))
    for (const rs of idle.slice(0, Math.max(0, idle.length - limit))) {
      try {
        await this.#client.delete(replicaSets, rs.metadata.namespace, rs.metadata.name ?? '', { uid: rs.metadata.uid ?? '' })
      } catch (err) {
        if (!isNotFound(err) && !isConflict(err)) throw err
      }
    }
  }

  /** Queues the Deployment again in `ms` (and a little), when its progress deadline passes. */
  #lookAgain(key: string, ms: number): void {
    if (this.#stopped) return
    clearTimeout(this.#deadlines.get(key))
    const timer = setTimeout(() => {
      this.#deadlines.delete(key)
      this.#queue.add(key)
    }, ms + 10)
    timer.unref?.()
    this.#deadlines.set(key, timer)
  }

  async #updateStatus(d: KubeObject, newRS: KubeObject | undefined, olds: KubeObject[], step: 'created' | 'changed' | 'steady' | 'paused'): Promise<void> {
    const all = newRS ? [newRS, ...olds] : olds
    const replicas = specReplicas(d)
    const sum = (f: string) => all.reduce((n, rs) => n + statusOf(rs, f), 0)
    const specTotal = all.reduce((n, rs) => n + specReplicas(rs), 0)
    const available = sum('availableReplicas')
    const old = obj(d['status'])
    const status: JsonObject = {}
    // DeploymentStatus: every count is omitempty.
    if (d.metadata.generation) status['observedGeneration'] = d.metadata.generation
    const put = (k: string, v: number) => {
      if (v) status[k] = v
    }
    put('replicas', sum('replicas'))
    put('updatedReplicas', newRS ? statusOf(newRS, 'replicas') : 0)
    put('readyReplicas', sum('readyReplicas'))
    put('availableReplicas', available)
    put('unavailableReplicas', Math.max(0, specTotal - available))
    const time = rfc3339()
    let conds = (Array.isArray(old['conditions']) ? clone(old['conditions']) : []) as unknown as Condition[]
    const cond = (type: string, s: string, reason: string, message: string): Condition => ({ type, status: s, lastUpdateTime: time, lastTransitionTime: time, reason, message })
    const { unavailable } = rollingBounds(d)
    conds = available >= replicas - unavailable
      ? setCondition(conds, cond('Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'))
      : setCondition(conds, cond('Available', 'False', 'MinimumReplicasUnavailable', 'Deployment does not have minimum availability.'))
    const rsName = newRS?.metadata.name ?? ''
    const complete = !!newRS && statusOf(newRS, 'replicas') === replicas && statusOf(newRS, 'availableReplicas') === replicas && sum('replicas') === replicas && specReplicas(newRS) === replicas
    const wasPaused = conds.some((c) => c.type === 'Progressing' && c.reason === 'DeploymentPaused')
    // deployment_util.go DeploymentProgressing: more updated, ready or available pods, or fewer old ones.
    const was = (k: string) => num(old[k])
    const now = (k: string) => num(status[k])
    const progressed = step === 'changed' || now('updatedReplicas') > was('updatedReplicas') || now('replicas') - now('updatedReplicas') < was('replicas') - was('updatedReplicas') || now('readyReplicas') > was('readyReplicas') || now('availableReplicas') > was('availableReplicas')
    if (step === 'paused') {
      conds = setCondition(conds, cond('Progressing', 'Unknown', 'DeploymentPaused', 'Deployment is paused'))
    } else if (wasPaused) {
      conds = setCondition(conds, cond('Progressing', 'Unknown', 'DeploymentResumed', 'Deployment is resumed'))
    } else if (step === 'created') {
      conds = setCondition(conds, cond('Progressing', 'True', 'NewReplicaSetCreated', `Created new replica set "${rsName}"`))
    } else if (complete) {
      conds = setCondition(conds, cond('Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "${rsName}" has successfully progressed.`))
    } else if (!progressed && conds.some((c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded' && c.message.includes(`"${rsName}"`))) {
      // Timed out, and no progress since: it stays so.
    } else if (progressed || !conds.some((c) => c.type === 'Progressing' && c.reason === 'ReplicaSetUpdated' && c.message.includes(`"${rsName}"`))) {
      // Progress was made (or a new rollout began): refresh lastUpdateTime, keep the transition time.
      const cur = conds.find((c) => c.type === 'Progressing')
      const c = cond('Progressing', 'True', 'ReplicaSetUpdated', `ReplicaSet "${rsName}" is progressing.`)
      if (cur && cur.status === 'True') c.lastTransitionTime = cur.lastTransitionTime
      conds = [...conds.filter((x) => x.type !== 'Progressing'), c]
    }
    // DeploymentTimedOut: no progress since the condition's lastUpdateTime plus the deadline.
    const progressing = conds.find((c) => c.type === 'Progressing')
    const left = step === 'paused' || complete ? undefined : untilTimeout(d, progressing, Date.now())
    if (left === 0) conds = setCondition(conds, timedOutCondition(rsName, time))
    else if (left !== undefined) this.#lookAgain(keyOf(d), left)
    // syncRolloutStatus (progress.go getReplicaFailures): the new ReplicaSet's ReplicaFailure, else an old one's, moves to the Deployment.
    const failures = (rs: KubeObject | undefined): Condition[] =>
      (Array.isArray(obj(rs?.['status'])['conditions']) ? (obj(rs?.['status'])['conditions'] as unknown as Condition[]) : []).filter((c) => c.type === 'ReplicaFailure')
    const failure = failures(newRS)[0] ?? olds.flatMap((rs) => failures(rs))[0]
    if (failure) conds = setCondition(conds, { type: 'ReplicaFailure', status: failure.status, lastUpdateTime: failure.lastTransitionTime, lastTransitionTime: failure.lastTransitionTime, reason: failure.reason, message: failure.message })
    else conds = conds.filter((c) => c.type !== 'ReplicaFailure')
    if (conds.length > 0) status['conditions'] = conds as unknown as Json
    if (typeof old['collisionCount'] === 'number') status['collisionCount'] = old['collisionCount']
    // SetDeploymentRevision: the Deployment carries its new ReplicaSet's revision, written with
    // the status (sync.go getNewReplicaSet and syncDeploymentStatus send it through UpdateStatus).
    const revision = newRS ? String(revisionOf(newRS)) : undefined
    const revisionChanged = revision !== undefined && d.metadata.annotations?.[revisionKey] !== revision
    if (!revisionChanged && sameJson(old, status)) return
    const annotations = { ...(d.metadata.annotations ?? {}) }
    if (revision !== undefined) annotations[revisionKey] = revision
    try {
      await this.#client.update(deployments, statusUpdate(d, status, annotations), { subresource: 'status' })
    } catch (err) {
      if (!isNotFound(err)) throw err
    }
  }
}
