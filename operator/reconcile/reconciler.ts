/**
 * One reconcile of one Memcached: render → stamp → guard → diff → server-side apply (re-creating
 * what the server will not change in place) → prune → status; when nothing it renders from and
 * nothing it applied has changed since its last complete reconcile, straight to prune → status.
 * Reads come from informer caches of the operator's own objects; an object they do not show is
 * created by an apply that can only create, and only when one is already there is it read (create.ts).
 *
 * Over 600 lines: the steps of one reconcile (render, damage guards, apply, re-creation, prune,
 * reload, status) share one instance's state here; moving each step to a file of its own, as
 * pause.ts, drift.ts, budget.ts and resize.ts already are, is work not yet done.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND, type Memcached, type MemcachedStatus } from '../api/memcached.ts'
import { apiErrorIn, isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import type { Chart } from '../render/chart.ts'
import { renderInstance, type RenderResult } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import type { PlatformOverlay } from '../render/overlays.ts'
import { kindKey } from '../render/kinds.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { SecretsNotFound } from '../render/secrets.ts'
import { labelValue } from '../render/names.ts'
import { hashDesired, type AppliedMemory } from './applied.ts'
import { CONDITION_TYPES, findCondition, REASONS, type ConditionInput } from './conditions.ts'
import { diffObject, FIELD_MANAGER } from './diff.ts'
import type { EventRecorder } from './recorder.ts'
import { createOrGet } from './create.ts'
import { describeObject, objectKey, ownershipConflicts, stampOwner, type OwnershipConflict } from './owner.ts'
import { stampShard } from './shard.ts'
import { describeNotServed, optionalKindsCondition, splitNotServed } from './optional.ts'
import { cachedSecrets, secretsForbidden, splitSecretKey, whySecretMissing, type SecretReferences, type SecretSummary } from './secrets.ts'
import { immutableRefusal, keptImmutable, whyNotRecreate, type ImmutableChange } from './recreate.ts'
import { RecreationQueued, planRecreations, queuedMessage, type RecreationPacer } from './pacing.ts'
import { failedCreateCause, INVOLVED_UID_INDEX, type FailedCreateEvent } from './workload-events.ts'
import { TransientFailures } from './transient.ts'
import type { Reloader } from './reload.ts'
import type { Resizer } from './resize.ts'
import type { ResolvedChart } from './revision.ts'
import { BudgetWait, controlledObjects, deleteCharge, massPruneRefusal, planDamage, DEFAULT_MAX_PRUNE_FRACTION, type DamageBudget } from './budget.ts'
import { isPaused, pausedStatus, PAUSED_MESSAGE, resumedCondition } from './pause.ts'
import { applyDriftSpec, driftSpecOf, reportDrift, type Drift } from './drift.ts'
import { computeStatus, DEGRADED_REASON, isWorkload, outcomeOfRenderError, statusEqual, WORKLOAD_KINDS, type PodLike, type ReconcileOutcome, type WorkloadLike } from './status.ts'

/** A Memcached as the informer caches it. */
export type MemcachedObject = Memcached & KubeObject

/** What the reconciler reads of a cache (an informer, or several for several namespaces). */
/** What a Secret cache kept per namespace (reconcile/secret-informers.ts) adds: its namespace's informer made and synced, and why it cannot be. */
export interface SecretAccess {
  /** False while the namespace's Secrets are not cached yet (no informer, or one not synced nor refused). */
  ready?(namespace: string): boolean
  prepare?(namespace: string): Promise<void>
  forbidden?(namespace: string): string | undefined
}

export interface Cache<T extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined
  byIndex(index: string, value: string): T[]
  /** False until the cache holds what the server had when it started (absent: always synced). */
  hasSynced?(): boolean
}

/** Index of child informers: the uid of an object's controller. */
export const CONTROLLER_INDEX = 'controller'
/** Index of the pod informer: `<namespace>/<instance label>`. */
export const INSTANCE_INDEX = 'instance'
/** The label pods carry that names their instance (its value shortened past 63 characters). */
export const INSTANCE_LABEL = 'app.kubernetes.io/instance'

/** Counters the reconciler reports (metrics.ts implements them with prom-client). */
export interface ReconcileMetrics {
  applied(kind: string): void
  /** An apply the server answered with the object unchanged (counted apart from `applied`). */
  unchanged?(kind: string): void
  skipped(kind: string): void
  pruned(kind: string): void
  failed(reason: string): void
  /** A reconcile made to wait by the damage budget (budget.ts), by what was spent: `delete` or `restart`. */
  budgetExhausted?(kind: string): void
  /** An object found changed by another manager and left as it is (drift mode `warn`, drift.ts), by kind. */
  drifted?(kind: string): void
}

/** What a reconcile needs. */
export interface ReconcilerDeps {
  client: KubeClient
  /** The chart now (it may be reloaded when its files change): the operator's own, whose kinds it watches. */
  chart: () => Chart
  /**
   * The chart a CR is rendered with and its revision's name (revision.ts); absent: the operator's
   * own chart for every CR, and no status.chartRevision. @throws RenderError when there is none
   */
  chartFor?: (cr: MemcachedObject) => ResolvedChart
  memcacheds: Cache<MemcachedObject>
  /** One cache per kind the chart declares, keyed `apiVersion/kind`, each indexed by {@link CONTROLLER_INDEX}. */
  children: ReadonlyMap<string, Cache>
  /**
   * The label keys of the shard's Memcached selector (`--selector`): each rendered object carries
   * its CR's values of them (shard.ts), so that the child and pod caches select the shard's objects
   * with the same selector. Empty or absent: no shard.
   */
  shardKeys?: readonly string[]
  /** Optional kinds the cluster does not serve (keyed `apiVersion/kind`, with why): their objects are left out. */
  unserved?: ReadonlyMap<string, string>
  /** Pods, indexed by {@link INSTANCE_INDEX} (`<namespace>/<instance label>`). */
  pods: Cache
  /** StatefulSets' FailedCreate Events, indexed by {@link INVOLVED_UID_INDEX} (workload-events.ts). */
  workloadEvents?: Cache<FailedCreateEvent>
  memory: AppliedMemory
  /** Secrets labelled cache.example.com/memcached-input=true, as {@link SecretSummary}s: what `secretChecksum()` reads (none when absent). */
  secrets?: Cache<SecretSummary> & SecretAccess
  /** Told which Secrets each CR's render referred to, so that a Secret's change re-renders them. */
  references?: SecretReferences
  events: EventRecorder
  metrics: ReconcileMetrics
  /** The platform rendered for (controller/platform.ts): the chart's platforms/<name>.yaml applies. */
  platform?: () => string | undefined
  /** The platform's overlays (`run --overlays`, render/overlays.ts), applied before each CR's own. */
  platformOverlays?: readonly PlatformOverlay[]
  /** Loads renewed Secrets into running pods where the workload declares it (reload.ts). */
  reloader?: Reloader
  /** Grows memcached's memory in place where the cluster can resize pods (resize.ts). */
  resizer?: Resizer
  /** The fleet-wide budget of workload re-creations (pacing.ts); none: every re-creation goes at once. */
  pacer?: RecreationPacer
  /** The fleet-wide budget of deletes and pod restarts (budget.ts); none: no limit. */
  budget?: DamageBudget
  /** A render may prune at most this fraction of a CR's live objects (budget.ts massPruneRefusal); default 0.5, 1: no limit. */
  maxPruneFraction?: number
  now?: () => Date
  /** See {@link TransientFailures}; default SUSTAINED_FAILURE_MS. */
  sustainedFailureMs?: number
}

/** What one reconcile applied, for its events and its Progressing condition. */
interface Applied {
  created: string[]
  updated: string[]
  /** Deleted and re-created: the object and field (events), the server's reason (Progressing). */
  recreated: { what: string; change: ImmutableChange }[]
}

/** An object deleted to be re-created: the render it was re-created for, and the uid deleted. */
interface Recreation {
  desiredHash: string
  deletedUid: string
}

/**
 * What a CR's last complete reconcile rendered from and left in place: while its inputs are the
 * same and every object is still the very version the server returned for our apply, rendering
 * again would give the same objects and nothing would be sent.
 */
interface Settled {
  /** The chart rendered (it may be reloaded). */
  chart: Chart
  /** JSON of the render's inputs from the CR (name, namespace, spec) and the optional kinds left out. */
  inputs: string
  /** The Secrets the render read (`namespace/name`) and the checksum it read of each, as it read them. */
  secrets: [string, string | undefined][]
  /** Each object applied: its identity (the workload's with what the status reads), uid and the hash of what was applied. */
  objects: { identity: RenderedObject; uid: string; desiredHash: string }[]
  optional: ConditionInput | undefined
  notServed: string | undefined
}

/** A failed outcome. */
type Failure = Exclude<ReconcileOutcome, { kind: 'ok' }>

/** What the worker does after a reconcile. */
export interface ReconcileResult {
  /** Reconcile again after this long (e.g. an ownership conflict, which no watched event would end). */
  requeueAfterMs?: number
}

/**
 * A failed reconcile, reported on the CR (condition, event) unless it was transient (then only
 * logged and counted, transient.ts); the worker retries it with backoff, not before a server's
 * Retry-After found anywhere in its cause chain.
 */
export class ReconcileError extends Error {
  override readonly cause: unknown
  /** A server's Retry-After, in milliseconds. */
  readonly retryAfterMs: number | undefined
  constructor(message: string, cause: unknown) {
    super(message)
    this.name = 'ReconcileError'
    this.cause = cause
    const retryAfterSeconds = apiErrorIn(cause)?.retryAfterSeconds
    this.retryAfterMs = retryAfterSeconds !== undefined ? retryAfterSeconds * 1000 : undefined
  }
}

const OWNERSHIP_RETRY_MS = 60_000
/** How soon a reconcile waiting for the caches of a kind just watched (discovery found it) looks again. */
const CACHE_SYNC_RETRY_MS = 1_000
/**
 * How long reconciles wait for them at most: a kind whose list keeps failing (a declared kind the
 * cluster does not serve, a permission missing) is then applied without them, and its failure is
 * reported as any failed apply is.
 */
const CACHE_SYNC_WAIT_MS = 30_000
const SECRET_RETRY_MS = 60_000
/** How soon a CR waiting for a re-creation slot asks again, if the budget has not queued it before (it does when a slot frees). */
const RECREATION_QUEUED_RETRY_MS = 30_000

/** An object a create found already there and not this CR's: the reconcile stops and reports it. */
class FoundForeign extends Error {
  readonly conflict: OwnershipConflict
  constructor(conflict: OwnershipConflict) {
    super(conflict.message)
    this.conflict = conflict
  }
}

/** `apiVersion/kind`, the key of {@link ReconcilerDeps.children}. */
export { kindKey }

/** Reconciles Memcached resources. */
export class Reconciler {
  #d: ReconcilerDeps
  #now: () => Date
  /**
   * By CR uid: the status last written and the resourceVersion of the CR it was computed from.
   * Until the CR cache moves past that version it has not seen the write, and its stale status
   * would make the next reconcile write again (with lastTransitionTimes moved to now).
   */
  #written = new Map<string, { baseVersion: string | undefined; status: MemcachedStatus }>()
  /**
   * By CR uid, then {@link objectKey}: the last re-creation of each object, so that the same render
   * refused again is reported instead of deleted again (a loop), and so that a deleted object
   * still held by a finalizer is waited for instead of applied to.
   */
  #recreations = new Map<string, Map<string, Recreation>>()
  /** By CR uid: what its last complete reconcile rendered and applied ({@link Settled}). */
  #settled = new Map<string, Settled>()
  /** By kind key: when a reconcile first found its caches not synced (see {@link CACHE_SYNC_WAIT_MS}). */
  #unsyncedSince = new Map<string, number>()
  /** Runs of failures only retried, not reported (transient.ts). */
  #transient: TransientFailures
  /** By CR uid: the chart revision its reconcile in progress renders with. */
  #revisions = new Map<string, string>()

  constructor(deps: ReconcilerDeps) {
    this.#d = deps
    this.#now = deps.now ?? (() => new Date())
    this.#transient = new TransientFailures(() => this.#now().getTime(), deps.sustainedFailureMs)
  }

  /** Reconciles the CR `namespace/name`. @throws ReconcileError after reporting it (or, when transient, logging and counting it), for a retry with backoff */
  async reconcile(namespace: string, name: string, log: Logger): Promise<ReconcileResult> {
    const result = await this.#reconcile(namespace, name, log)
    this.#transient.clear(this.#d.memcacheds.get(namespace, name)?.metadata.uid)
    return result
  }

  async #reconcile(namespace: string, name: string, log: Logger): Promise<ReconcileResult> {
    const cr = this.#withWrittenStatus(this.#d.memcacheds.get(namespace, name))
    if (!cr || cr.metadata.deletionTimestamp) return {}
    if (isPaused(cr)) return this.#paused(cr, log)
    this.#releaseReplaced(cr)
    let chart: Chart
    try {
      chart = this.#chartOf(cr)
    } catch (err) {
      // No revision to render with (revision.ts says why): nothing is applied, the objects keep running.
      if (!(err instanceof RenderError)) throw err
      await this.#fail(cr, outcomeOfRenderError(err), undefined, log)
      return {}
    }
    const inputs = this.#inputsOf(cr)
    const settled = this.#stillSettled(cr, chart, inputs)
    if (settled) return this.#reconcileSettled(cr, chart, settled, log)
    this.#settled.delete(cr.metadata.uid ?? '')
    let desired: RenderedObject[]
    let secrets: [string, string | undefined][]
    try {
      const rendered = await this.#renderPrepared(cr, chart)
      desired = stampShard(stampOwner(rendered.objects, cr), cr, this.#d.shardKeys ?? [])
      secrets = rendered.read
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      const outcome = err instanceof SecretsNotFound ? { kind: 'secret-not-found' as const, message: await this.#whyNotFound(err) } : outcomeOfRenderError(err)
      // Nothing is applied and the previous objects keep running; editing the CR or the chart retries.
      await this.#fail(cr, outcome, undefined, log)
      // A Secret created or labelled brings the CR back through the Secret informer at once; the
      // look a minute later keeps the message true about a Secret it does not watch (unlabelled).
      return outcome.kind === 'secret-not-found' ? { requeueAfterMs: SECRET_RETRY_MS } : {}
    }
    const { apply, left } = splitNotServed(chart.kinds, desired, this.#d.unserved ?? new Map())
    const optional = optionalKindsCondition(chart.kinds, left)
    desired = apply

    const unsynced = this.#unsynced(desired)
    if (unsynced) {
      log.debug({ kind: unsynced }, 'waiting for the caches of a kind to sync')
      return { requeueAfterMs: CACHE_SYNC_RETRY_MS }
    }
    const live = new Map<string, KubeObject | undefined>()
    for (const d of desired) live.set(objectKey(d), this.#cached(d))
    const conflicts = ownershipConflicts(desired, live, cr)
    if (conflicts.length > 0) return this.#conflict(cr, conflicts, desired, log)

    // Drift the CR's spec.drift leaves as it is (drift.ts): the rendered objects take the live values there.
    const drift = driftSpecOf(cr.spec)
    let drifts: Drift[] = []
    if (drift) ({ desired, drifts } = await applyDriftSpec(drift, desired, (d) => live.get(objectKey(d)), (d, current) => this.#d.memory.isUnchangedSinceApply(d, current), (d) => this.#d.client.get({ apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name }).catch(() => undefined)))
    const drifted = await reportDrift(cr, drift, drifts, { events: this.#d.events, metrics: this.#d.metrics, log })

    // Asked before anything is applied, as the re-creation slots below: a change over the fleet's
    // damage budget, or one that drops most of the CR's objects, applies nothing.
    const damage = this.#d.budget || this.#d.maxPruneFraction !== 1 ? planDamage(desired, live, controlledObjects(chart.kinds, (k) => this.#d.children.get(kindKey(k))?.byIndex(CONTROLLER_INDEX, cr.metadata.uid ?? '') ?? []), (d, current) => this.#d.memory.isUnchangedSinceApply(d, current)) : undefined
    const refusal = damage && massPruneRefusal(damage, cr, this.#d.maxPruneFraction ?? DEFAULT_MAX_PRUNE_FRACTION)
    if (refusal !== undefined) {
      await this.#fail(cr, { kind: 'prune-refused', message: refusal }, desired, log)
      return {}
    }
    // Workload re-creations are charged by the pacing below, in its queue's order.
    const charges = damage?.damage.filter((c) => !(c.paced && this.#d.pacer)) ?? []
    const admission = this.#d.budget?.admit(charges)
    if (admission?.admitted === false) return this.#overBudget(cr, new BudgetWait(charges, admission), optional, log)

    // Asked before anything is applied: a CR whose workload waits for its turn applies nothing, so
    // that no Service, PDB or NetworkPolicy moves to the new selector while the old pods serve.
    const plan = this.#d.pacer ? planRecreations(this.#d.pacer, cr, desired, live, (d, current) => this.#mayRecreate(cr, d, current), (d, current) => this.#d.memory.isUnchangedSinceApply(d, current)) : { granted: [] }
    if (plan.budget) return this.#overBudget(cr, new BudgetWait([deleteCharge({ metadata: { uid: plan.budget.request.replaces } }, plan.budget.request.what)], plan.budget.refusal), optional, log)
    if (plan.queued !== undefined) return this.#queued(cr, plan.queued, optional, log)

    let liveWorkload: KubeObject | undefined
    const done: Applied = { created: [], updated: [], recreated: [] }
    const results: (KubeObject | undefined)[] = []
    try {
      for (const d of desired) {
        const current = live.get(objectKey(d))
        // A memory growth the pods take in place keeps the live template's memory (resize.ts).
        const result = await this.#applyOne(cr, isWorkload(d) && this.#d.resizer ? await this.#d.resizer.hold(cr, d, current) : d, current, done, log)
        results.push(result)
        if (isWorkload(d)) liveWorkload = result
      }
    } catch (err) {
      // The server forced a re-creation the plan did not foresee, and there is no slot for it.
      if (err instanceof RecreationQueued) return await this.#queued(cr, err.message, optional, log)
      if (err instanceof BudgetWait) return await this.#overBudget(cr, err, optional, log)
      if (!(err instanceof FoundForeign)) throw err
      return this.#conflict(cr, [err.conflict], desired, log)
    } finally {
      // A slot taken for a re-creation that did not happen (the server changed it in place, or an
      // earlier object failed) goes back at once.
      for (const g of plan.granted) if (!done.recreated.some((r) => r.what === g.what)) this.#d.pacer?.release(g.key)
      await this.#announce(cr, done)
    }
    const switching = await this.#prune(cr, this.#d.chart(), desired, log)
    const notServed = left.length > 0 ? describeNotServed(left) : undefined
    if (optional) await this.#announceOptional(cr, optional, notServed)
    const reload = await this.#reload(cr, desired, liveWorkload, log)
    await this.#writeStatus(cr, desired, liveWorkload, { kind: 'ok', recreated: done.recreated.map((r) => `${r.what}: ${r.change.message}`), ...(switching ? { switching } : {}) }, log, [...(optional ? [optional] : []), ...reload.also, ...(drifted ? [drifted] : [])])
    this.#settle(cr, chart, inputs, secrets, desired, results, optional, notServed)
    return reload.result
  }

  /** The in-place reload of renewed Secrets (reload.ts) and resize of memory (resize.ts): their conditions, and when to look again. */
  async #reload(cr: MemcachedObject, desired: RenderedObject[], applied: KubeObject | undefined, log: Logger): Promise<{ also: ConditionInput[]; result: ReconcileResult }> {
    const workload = this.#ownWorkload(cr, desired.find(isWorkload) as (WorkloadLike & { kind: string }) | undefined, applied)
    const pods = this.#d.pods.byIndex(INSTANCE_INDEX, `${cr.metadata.namespace ?? 'default'}/${labelValue(cr.metadata.name)}`)
    const steps = [await this.#d.reloader?.step(cr, workload, pods, log), await this.#d.resizer?.step(cr, workload, pods, log)].filter((s) => s !== undefined)
    const retries = steps.flatMap((s) => (s.requeueAfterMs !== undefined ? [s.requeueAfterMs] : []))
    return { also: steps.map((s) => s.condition), result: retries.length > 0 ? { requeueAfterMs: Math.min(...retries) } : {} }
  }

  /** The chart `cr` is rendered with; its revision is what an `ok` status reports (status.chartRevision). */
  #chartOf(cr: MemcachedObject): Chart {
    if (!this.#d.chartFor) return this.#d.chart()
    const { chart, revision } = this.#d.chartFor(cr)
    this.#revisions.set(cr.metadata.uid ?? '', revision)
    return chart
  }

  /** Reports objects this CR must not take over (Degraded OwnershipConflict) and looks again later. */
  async #conflict(cr: MemcachedObject, conflicts: readonly OwnershipConflict[], desired: RenderedObject[], log: Logger): Promise<ReconcileResult> {
    await this.#fail(cr, { kind: 'ownership', message: conflicts.map((c) => c.message).join('; '), deployment: conflicts.some((c) => WORKLOAD_KINDS.includes(c.kind)) }, desired, log)
    return { requeueAfterMs: OWNERSHIP_RETRY_MS }
  }

  /** The render's inputs from the CR, and the optional kinds left out (which change what is applied), as one text. */
  #inputsOf(cr: MemcachedObject): string {
    return JSON.stringify([cr.metadata.name, cr.metadata.namespace ?? '', cr.spec ?? {}, [...(this.#d.unserved ?? new Map<string, string>()).keys()].sort(), this.#d.platform?.() ?? '', this.#d.platformOverlays?.length ? (cr.metadata.labels ?? {}) : {}])
  }

  /**
   * Remembers what a complete reconcile rendered and left in place — only when every object it
   * rendered is applied and remembered by the applied memory (nothing is being re-created, no
   * immutable value was kept by the server), so
   * that the next reconcile with the same inputs can tell, without rendering, that nothing changed.
   */
  #settle(cr: MemcachedObject, chart: Chart, inputs: string, secrets: [string, string | undefined][], desired: RenderedObject[], results: (KubeObject | undefined)[], optional: ConditionInput | undefined, notServed: string | undefined): void {
    const crUid = cr.metadata.uid
    if (crUid === undefined) return
    const objects: Settled['objects'] = []
    for (const [i, d] of desired.entries()) {
      const result = results[i]
      const uid = result?.metadata.uid
      const entry = uid === undefined ? undefined : this.#d.memory.get(uid)
      // A value the server kept (keptImmutable) is re-created by the next full reconcile.
      if (result === undefined || uid === undefined || entry === undefined || entry.resourceVersion !== result.metadata.resourceVersion || keptImmutable(d, result)) return
      objects.push({ identity: settledIdentity(d), uid, desiredHash: entry.desiredHash })
    }
    this.#settled.set(crUid, { chart, inputs, secrets, objects, optional, notServed })
  }

  /**
   * The CR's {@link Settled} record when rendering it again would change nothing: the same chart,
   * the same inputs and Secret checksums, and every object it applied still in the cache as our
   * apply left it ({@link AppliedMemory.isStill}: the same version, or only its status or others'
   * fields changed since).
   */
  #stillSettled(cr: MemcachedObject, chart: Chart, inputs: string): Settled | undefined {
    const settled = this.#settled.get(cr.metadata.uid ?? '')
    if (!settled || settled.chart !== chart || settled.inputs !== inputs) return undefined
    for (const [key, checksum] of settled.secrets) {
      const [namespace, name] = splitKey(key)
      if (this.#d.secrets?.get(namespace, name)?.checksum !== checksum) return undefined
    }
    for (const o of settled.objects) {
      const live = this.#cached(o.identity)
      if (live?.metadata.uid !== o.uid || !this.#d.memory.isStill(live, o.desiredHash)) return undefined
    }
    return settled
  }

  /**
   * A reconcile of a CR whose objects are as its last reconcile left them (a child's status
   * changed, a pod became ready, a resync): no render and no apply — what the full path would do
   * with every object unchanged since its apply — then prune and status as always.
   */
  async #reconcileSettled(cr: MemcachedObject, chart: Chart, settled: Settled, log: Logger): Promise<ReconcileResult> {
    const desired = settled.objects.map((o) => o.identity)
    for (const d of desired) this.#d.metrics.skipped(d.kind)
    log.debug({ objects: desired.length }, 'inputs and objects as the last apply left them: not rendered')
    const switching = await this.#prune(cr, this.#d.chart(), desired, log)
    if (settled.optional) await this.#announceOptional(cr, settled.optional, settled.notServed)
    const reload = await this.#reload(cr, desired, undefined, log)
    await this.#writeStatus(cr, desired, undefined, { kind: 'ok', recreated: [], ...(switching ? { switching } : {}) }, log, [...(settled.optional ? [settled.optional] : []), ...reload.also])
    return reload.result
  }

  /**
   * Renders the CR, its Secrets' checksums read from the Secret cache, and records which Secrets
   * it referred to — even when the render fails, so that the Secret's arrival brings it back. No
   * await between the cache reads and the record: a Secret's event handled after this render
   * finds the CR among its referrers.
   */
  #render(cr: MemcachedObject, chart: Chart): RenderResult & { read: [string, string | undefined][] } {
    const namespace = cr.metadata.namespace ?? ''
    const referred = new Map<string, string | undefined>()
    const cache = cachedSecrets(this.#d.secrets ?? { get: () => undefined })
    const checksum = (ns: string, name: string): string | undefined => {
      const sum = cache.checksum(ns, name)
      referred.set(`${ns}/${name}`, sum)
      return sum
    }
    try {
      const platform = this.#d.platform?.()
      return { ...renderInstance(chart, { name: cr.metadata.name, namespace, spec: cr.spec ?? {}, secrets: { checksum, keys: (ns, name) => cache.keys?.(ns, name) }, ...(platform !== undefined ? { platform } : {}), platformOverlays: this.#d.platformOverlays ?? [], labels: cr.metadata.labels ?? {} }), read: [...referred] }
    } finally {
      this.#d.references?.set(`${namespace}/${cr.metadata.name}`, referred.keys())
    }
  }

  /**
   * {@link #render}, again once the Secret cache of the CR's namespace is made and synced when the
   * render read Secrets there before it was (reconcile/secret-informers.ts): an optional Secret not
   * yet cached would leave its checksum out, and a required one would be reported missing.
   */
  async #renderPrepared(cr: MemcachedObject, chart: Chart): Promise<RenderResult & { read: [string, string | undefined][] }> {
    const namespace = cr.metadata.namespace ?? ''
    const secrets = this.#d.secrets
    try {
      const rendered = this.#render(cr, chart)
      if (rendered.read.length === 0 || secrets?.ready?.(namespace) !== false) return rendered
    } catch (err) {
      if (!(err instanceof SecretsNotFound) || secrets?.ready?.(namespace) !== false) throw err
    }
    await secrets.prepare?.(namespace)
    return this.#render(cr, chart)
  }

  /** The SecretNotFound message: for each Secret, whether it does not exist or lacks the label (one GET each). */
  async #whyNotFound(err: SecretsNotFound): Promise<string> {
    const why: string[] = []
    for (const key of err.missing) why.push(secretsForbidden(key, this.#d.secrets?.forbidden?.(splitSecretKey(key).namespace)) ?? (await whySecretMissing(this.#d.client, key)))
    return why.join('; ')
  }

  /** The cached CR, with the status this reconciler wrote if the cache has not seen that write yet. */
  #withWrittenStatus(cr: MemcachedObject | undefined): MemcachedObject | undefined {
    const uid = cr?.metadata.uid
    if (!cr || uid === undefined) return cr
    const written = this.#written.get(uid)
    if (!written) return cr
    if (written.baseVersion !== cr.metadata.resourceVersion) {
      this.#written.delete(uid)
      return cr
    }
    return { ...cr, status: written.status }
  }

  /**
   * The CR cache now holds `cr`: a status written from an older version of it is in the cache (or
   * overtaken), so it is no longer kept — not only at the CR's next reconcile, which may be hours away.
   */
  observed(cr: MemcachedObject): void {
    const uid = cr.metadata.uid
    if (uid !== undefined && this.#written.get(uid)?.baseVersion !== cr.metadata.resourceVersion) this.#written.delete(uid)
  }

  /** Forgets what was written and re-created for a CR (it was deleted). */
  forget(uid: string): void {
    this.#written.delete(uid)
    this.#recreations.delete(uid)
    this.#settled.delete(uid)
    this.#revisions.delete(uid)
    this.#transient.clear(uid)
    this.#d.pacer?.forget(uid)
    this.#d.reloader?.forget(uid)
    this.#d.resizer?.forget(uid)
  }

  /** The live object of a desired one, from its kind's cache. */
  #cached(d: RenderedObject): KubeObject | undefined {
    return this.#d.children.get(kindKey(d))?.get(d.metadata.namespace, d.metadata.name)
  }

  /**
   * A rendered kind whose caches have not synced yet (a kind discovery has just found served), if
   * any, for at most {@link CACHE_SYNC_WAIT_MS}: until they have, every object of that kind would
   * be looked for with a create.
   */
  #unsynced(desired: readonly RenderedObject[]): string | undefined {
    const now = this.#now().getTime()
    for (const d of desired) {
      const key = kindKey(d)
      const synced = this.#d.children.get(key)?.hasSynced?.() !== false
      if (synced) {
        this.#unsyncedSince.delete(key)
        continue
      }
      const since = this.#unsyncedSince.get(key) ?? now
      this.#unsyncedSince.set(key, since)
      if (now - since < CACHE_SYNC_WAIT_MS) return key
    }
    return undefined
  }

  /**
   * Applies one object unless it already is what we render; returns the live object after.
   * One the cache does not show is created ({@link Reconciler.#create}), or, when the server
   * already has it and it is this CR's own (a cache behind the previous leader's or this process's
   * writes), applied as if the cache had shown it. A field the server will not change in place
   * (refused, or silently kept) is changed by deleting and re-creating the object
   * ({@link Reconciler.#recreate}).
   */
  async #applyOne(cr: MemcachedObject, d: RenderedObject, cached: KubeObject | undefined, done: Applied, log: Logger): Promise<KubeObject | undefined> {
    const { memory, metrics } = this.#d
    let current = cached
    if (!current) {
      const found = await this.#create(cr, d, done, log)
      if (found.created) return found.object
      current = found.object
    }
    // Deleted to be re-created and still held by a finalizer: its deletion event brings us back.
    const deleted = this.#recreations.get(cr.metadata.uid ?? '')?.get(objectKey(d))?.deletedUid
    if (deleted !== undefined && current.metadata.uid === deleted) return undefined
    const kept = keptImmutable(d, current)
    if (kept) return this.#recreate(cr, d, current, kept, done, log)
    if (memory.isUnchangedSinceApply(d, current)) {
      metrics.skipped(d.kind)
      return current
    }
    const diff = diffObject(d, current)
    if (diff.equal) {
      memory.rememberFound(current, d)
      metrics.skipped(d.kind)
      return current
    }
    const fields = diff.fields
    let applied: KubeObject
    try {
      applied = await this.#d.client.apply(d, { fieldManager: FIELD_MANAGER, force: true })
    } catch (err) {
      const refused = immutableRefusal(err, d.kind)
      if (refused) return this.#recreate(cr, d, current, refused, done, log)
      // A failed apply may have been applied all the same (a timeout, an answer lost): what the
      // memory holds of the object is no longer known to be our last write.
      if (current.metadata.uid !== undefined) memory.forget(current.metadata.uid)
      return this.#applyFailed(cr, d, err, log)
    }
    memory.remember(applied, d)
    const what = describeObject(d)
    if (unchangedByApply(current, applied)) {
      metrics.unchanged?.(d.kind)
      log.debug({ object: what, fields }, 'apply changed nothing')
      return applied
    }
    metrics.applied(d.kind)
    log.info({ object: what, fields }, 'updated')
    done.updated.push(`${what}${fields.length > 0 ? ` (${fields.slice(0, 3).join(', ')}${fields.length > 3 ? ', …' : ''})` : ''}`)
    return applied
  }

  /**
   * Creates an object the cache does not show (create.ts: an apply that can only create, and when
   * the object exists a GET). The
   * object found there is judged as it is: this CR's own or its adoptable orphan is returned for
   * the caller to diff and apply; anybody else's stops the reconcile as an ownership conflict
   * ({@link FoundForeign}) — nothing was written to it. No clock, no memory of earlier requests:
   * a new leader, a restarted process or a retry after a lost answer all read the same object.
   * @throws FoundForeign, or ReconcileError after reporting a failed create
   */
  async #create(cr: MemcachedObject, d: RenderedObject, done: Applied | undefined, log: Logger): Promise<{ created: boolean; object: KubeObject }> {
    let found: Awaited<ReturnType<typeof createOrGet>>
    try {
      found = await createOrGet(this.#d.client, d)
    } catch (err) {
      return this.#applyFailed(cr, d, err, log)
    }
    const what = describeObject(d)
    if (!found.created) {
      const conflict = ownershipConflicts([d], new Map([[objectKey(d), found.object]]), cr)[0]
      if (conflict) throw new FoundForeign(conflict)
      log.debug({ object: what }, 'exists though the cache does not show it yet: this Memcached\'s own')
      return found
    }
    const object = found.object
    this.#d.memory.remember(object, d)
    this.#d.metrics.applied(d.kind)
    if (done) {
      log.info({ object: what }, 'created')
      done.created.push(what)
    }
    return { created: true, object }
  }

  /** Reports a failed apply (Degraded ApplyFailed) and throws it for a retry with backoff. */
  async #applyFailed(cr: MemcachedObject, d: RenderedObject, err: unknown, log: Logger): Promise<never> {
    const message = `${describeObject(d)}: ${err instanceof Error ? err.message : String(err)}`
    if (this.#reported(cr, err, message, log)) await this.#fail(cr, { kind: 'apply-failed', message }, undefined, log)
    throw new ReconcileError(`apply ${message}`, err)
  }

  /**
   * Whether a failed request is reported on the CR ({@link #fail}); when not (throttling, shedding,
   * or a transient failure that has not lasted, see transient.ts) it is logged and counted here,
   * and the caller's ReconcileError requeues it with backoff.
   */
  #reported(cr: MemcachedObject, err: unknown, message: string, log: Logger): boolean {
    const judged = this.#transient.judge(cr.metadata.uid, err)
    if (judged.report) return true
    if (cr.metadata.uid) this.#settled.delete(cr.metadata.uid)
    this.#d.metrics.failed(judged.reason)
    log.warn({ reason: judged.reason, err: message, failingForMs: judged.failingForMs }, 'reconcile failed transiently, retrying without reporting it on the resource')
    return false
  }

  /**
   * Deletes `current` (uid precondition: never an object that replaced it meanwhile) and creates
   * `d` again with the apply that can only create (create.ts): an object somebody else put under
   * the name meanwhile is refused, reported as an ownership conflict, and a workload's pacing slot
   * (pacing.ts) goes back at once. A workload waits for a slot first. Background propagation, as Flux's `ssa` manager and `kubectl
   * delete` use: the object goes at once and the new one is created right away, while the garbage
   * collector removes the old one's dependents (a Deployment's ReplicaSets and pods) alongside —
   * Foreground would keep the old object until every old pod is gone, so the cache would have no
   * pod at all meanwhile, and one pod stuck terminating would hold the new Deployment back.
   * When the object may not be re-created ({@link whyNotRecreate}), the CR is Degraded
   * (ImmutableField) with the server's message instead.
   */
  async #recreate(cr: MemcachedObject, d: RenderedObject, current: KubeObject, change: ImmutableChange, done: Applied, log: Logger): Promise<KubeObject | undefined> {
    const what = describeObject(d)
    const ownerUid = cr.metadata.uid ?? ''
    const byObject = this.#recreations.get(ownerUid) ?? new Map<string, Recreation>()
    const desiredHash = hashDesired(d)
    const why = whyNotRecreate({ desired: d, live: current, ownerUid: cr.metadata.uid, desiredHash, recreatedFor: byObject.get(objectKey(d))?.desiredHash })
    if (why !== undefined) {
      const message = `${what}: ${change.message} (not re-created: ${why})`
      await this.#fail(cr, { kind: 'immutable', message }, undefined, log)
      throw new ReconcileError(`apply ${message}`, change)
    }
    const uid = current.metadata.uid as string
    // A re-creation is a delete: a workload's is charged to the damage budget by the pacing, with
    // its slot; any other's here (both free when the reconcile's plan charged it).
    const charge = deleteCharge(current, what)
    const paced = isWorkload(d) ? this.#d.pacer : undefined
    const admitted = paced ? undefined : this.#d.budget?.admit([charge])
    if (admitted?.admitted === false) throw new BudgetWait([charge], admitted)
    const slot = { key: objectKey(d), owner: ownerUid, crKey: `${cr.metadata.namespace ?? ''}/${cr.metadata.name}`, what, field: change.field, replaces: uid, ref: d }
    const grant = paced?.request(slot)
    if (grant?.granted === false && grant.budget) throw new BudgetWait([charge], grant.budget)
    if (grant?.granted === false) throw new RecreationQueued(queuedMessage(slot, grant))
    byObject.set(objectKey(d), { desiredHash, deletedUid: uid })
    this.#recreations.set(ownerUid, byObject)
    let left: KubeObject | undefined
    try {
      left = await this.#d.client.delete(
        { apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name },
        { propagationPolicy: 'Background', preconditions: { uid } },
      )
    } catch (err) {
      if (!isNotFound(err)) {
        this.#d.pacer?.release(slot.key)
        return this.#applyFailed(cr, d, new Error(`delete to re-create (${change.field}): ${err instanceof Error ? err.message : String(err)}`, { cause: err }), log)
      }
    }
    this.#d.memory.forget(uid)
    log.info({ object: what, field: change.field }, 'deleted to re-create')
    done.recreated.push({ what, change })
    // A finalizer holds it: it is re-created once it is gone (#applyOne waits for that uid).
    if (left?.kind === d.kind && left.metadata.uid === uid && left.metadata.deletionTimestamp) return undefined
    // Created again by an apply that can only create: somebody else's object that took the name
    // meanwhile is refused, and this CR's slot goes back at once (no replacement of ours will become ready to free it).
    let found: { created: boolean; object: KubeObject }
    try {
      found = await this.#create(cr, d, undefined, log)
    } catch (err) {
      if (err instanceof FoundForeign) this.#d.pacer?.release(slot.key)
      throw err
    }
    if (!found.created && found.object.metadata.uid === uid) return undefined
    log.info({ object: what }, 're-created')
    return found.object
  }

  /** Whether `current` may be deleted and re-created for `d` now ({@link whyNotRecreate}; not one already deleted and awaited). */
  #mayRecreate(cr: MemcachedObject, d: RenderedObject, current: KubeObject): boolean {
    const last = this.#recreations.get(cr.metadata.uid ?? '')?.get(objectKey(d))
    if (last?.deletedUid === current.metadata.uid) return false
    return whyNotRecreate({ desired: d, live: current, ownerUid: cr.metadata.uid, desiredHash: hashDesired(d), recreatedFor: last?.desiredHash }) === undefined
  }

  /**
   * A CR whose workload re-creation waits for a slot (pacing.ts): nothing of it was applied; its
   * status says so (Progressing RecreationQueued), from the live workload, and it looks again when
   * a slot frees (the budget queues it) or after {@link RECREATION_QUEUED_RETRY_MS}.
   */
  async #queued(cr: MemcachedObject, message: string, optional: ConditionInput | undefined, log: Logger): Promise<ReconcileResult> {
    log.info({ waiting: message }, 're-creation queued')
    const before = findCondition(cr.status?.conditions, CONDITION_TYPES.Progressing)
    if (before?.reason !== REASONS.RecreationQueued) await this.#d.events.record(cr, 'Normal', REASONS.RecreationQueued, message, 'Apply')
    await this.#writeStatus(cr, undefined, undefined, { kind: 'ok', queued: message }, log, optional ? [optional] : [])
    return { requeueAfterMs: RECREATION_QUEUED_RETRY_MS }
  }

  /**
   * A CR whose change would go over the fleet's damage budget (budget.ts): nothing of it was
   * applied; its status says so (Progressing BudgetExhausted) from the live objects, a Warning
   * event marks its arrival, and it asks again when the window has room.
   */
  async #overBudget(cr: MemcachedObject, wait: BudgetWait, optional: ConditionInput | undefined, log: Logger): Promise<ReconcileResult> {
    log.warn({ budget: wait.kind, waiting: wait.message, retryAfterMs: wait.retryAfterMs }, 'change waits for the damage budget')
    this.#d.metrics.budgetExhausted?.(wait.kind)
    const before = findCondition(cr.status?.conditions, CONDITION_TYPES.Progressing)
    if (before?.reason !== REASONS.BudgetExhausted) await this.#d.events.record(cr, 'Warning', REASONS.BudgetExhausted, wait.message, 'Apply')
    await this.#writeStatus(cr, undefined, undefined, { kind: 'ok', budget: wait.message }, log, optional ? [optional] : [])
    return { requeueAfterMs: wait.retryAfterMs }
  }

  /**
   * A paused CR (pause.ts): nothing is applied, re-created or pruned; its status says so (Paused
   * True, Ready False Paused: written when it pauses, and when its generation moves meanwhile),
   * with a Normal event when it pauses.
   */
  async #paused(cr: MemcachedObject, log: Logger): Promise<ReconcileResult> {
    if (cr.metadata.uid) this.#settled.delete(cr.metadata.uid)
    // Its place in the re-creation queue and its slots go to the rest of the fleet.
    this.#d.pacer?.forget(cr.metadata.uid ?? '')
    const { status, announce } = pausedStatus(cr, this.#now())
    if (statusEqual(status, cr.status)) return {}
    log.info('paused: nothing is applied')
    if (announce) await this.#d.events.record(cr, 'Normal', REASONS.Paused, PAUSED_MESSAGE, 'Reconcile')
    await this.#putStatus(cr, status, log)
    return {}
  }

  /** Gives back the slots of this CR's re-creations whose replacement has every replica ready (read from the cache). */
  #releaseReplaced(cr: MemcachedObject): void {
    const pacer = this.#d.pacer
    if (!pacer || cr.metadata.uid === undefined) return
    for (const slot of pacer.held(cr.metadata.uid)) {
      const live = this.#cached(slot.ref)
      if (live === undefined || live.metadata.uid === slot.replaces || this.#notReady(slot.ref) !== undefined) continue
      pacer.release(slot.key)
    }
  }

  /** One event per kind of change and reconcile (not one per object): `Created a, b`, `Updated c (.spec.replicas)`. */
  async #announce(cr: MemcachedObject, done: Applied): Promise<void> {
    if (done.created.length > 0) await this.#d.events.record(cr, 'Normal', 'Created', `Created ${done.created.join(', ')}`, 'Apply')
    if (done.updated.length > 0) await this.#d.events.record(cr, 'Normal', 'Updated', `Updated ${done.updated.join(', ')}`, 'Apply')
    if (done.recreated.length > 0) {
      const list = done.recreated.map((r) => `${r.what} (${r.change.field} cannot change in place)`)
      await this.#d.events.record(cr, 'Normal', 'Recreated', `Deleted and re-created ${list.join(', ')}`, 'Apply')
    }
  }

  /**
   * A Warning event when objects of an optional kind start being left out (or what is left out
   * changes), a Normal one when they are applied again: on the condition's change only, so a
   * resync writes nothing.
   */
  async #announceOptional(cr: MemcachedObject, condition: ConditionInput, notServed: string | undefined): Promise<void> {
    const before = findCondition(cr.status?.conditions, CONDITION_TYPES.OptionalKindsServed)
    if (before?.status === condition.status && before.message === condition.message) return
    if (notServed !== undefined) await this.#d.events.record(cr, 'Warning', REASONS.KindNotServed, `Not applied, the cluster does not serve their kind: ${notServed}`, 'Apply')
    else if (before?.status === 'False') await this.#d.events.record(cr, 'Normal', REASONS.AllServed, 'Every optional kind the chart rendered is served and applied', 'Apply')
  }

  /**
   * Deletes what this CR controls and no longer renders (found by label and controller uid, in the caches of the chart's kinds) —
   * except a workload (Deployment, StatefulSet) while a rendered workload is not ready yet: when
   * the kind changes, the old pods keep serving until the new workload has every replica ready
   * (read from the cache; its status update brings the next reconcile). Both select the same pods
   * by label, but neither controller takes the other's: they adopt only pods without a controller
   * (kubernetes pkg/controller/controller_ref_manager.go ClaimObject), and the Service's endpoints
   * list the ready pods of both meanwhile. Returns what is awaited, for the Progressing condition.
   */
  async #prune(cr: MemcachedObject, chart: Chart, desired: RenderedObject[], log: Logger): Promise<string | undefined> {
    const keep = new Set(desired.map((d) => objectKey(d)))
    const pruned: string[] = []
    const uid = cr.metadata.uid
    if (!uid) return undefined
    const notReady = desired.filter(isWorkload).map((d) => this.#notReady(d)).find((why) => why !== undefined)
    const kept: string[] = []
    try {
      for (const kind of chart.kinds) {
        const informer = this.#d.children.get(kindKey(kind))
        for (const obj of informer?.byIndex(CONTROLLER_INDEX, uid) ?? []) {
          const identity = { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: obj.metadata.name ?? '', namespace: obj.metadata.namespace ?? '' } }
          if (keep.has(objectKey(identity)) || obj.metadata.deletionTimestamp) continue
          const what = describeObject(identity)
          if (notReady !== undefined && isWorkload(identity)) {
            kept.push(what)
            continue
          }
          // Free when the reconcile's plan admitted it; a prune it did not foresee waits for room.
          if (this.#d.budget?.admit([deleteCharge(obj, what)]).admitted === false) {
            log.info({ object: what }, 'prune waits for the damage budget')
            continue
          }
          try {
            await this.#d.client.delete(
              { apiVersion: kind.apiVersion, kind: kind.kind, namespace: identity.metadata.namespace, name: identity.metadata.name },
              { propagationPolicy: 'Background', ...(obj.metadata.uid ? { preconditions: { uid: obj.metadata.uid } } : {}) },
            )
          } catch (err) {
            if (isNotFound(err)) continue
            const message = `${what}: ${err instanceof Error ? err.message : String(err)}`
            if (this.#reported(cr, err, message, log)) await this.#fail(cr, { kind: 'prune-failed', message }, desired, log)
            throw new ReconcileError(`prune ${message}`, err)
          }
          if (obj.metadata.uid) this.#d.memory.forget(obj.metadata.uid)
          this.#d.metrics.pruned(kind.kind)
          log.info({ object: what }, 'pruned')
          pruned.push(what)
        }
      }
    } finally {
      if (pruned.length > 0) await this.#d.events.record(cr, 'Normal', 'Pruned', `Deleted ${pruned.join(', ')}, no longer rendered`, 'Prune')
    }
    if (kept.length === 0) return undefined
    log.info({ kept, waitingFor: notReady }, 'prune of the old workload waits')
    return `${notReady}; ${kept.join(', ')} keeps serving until then and is pruned after`
  }

  /** Why a rendered workload is not ready to take over from an old one (per the cache), or undefined when it is. */
  #notReady(d: RenderedObject): string | undefined {
    const what = describeObject(d)
    const live = this.#cached(d) as (WorkloadLike & KubeObject) | undefined
    if (!live) return `waiting for ${what} to be created`
    const want = typeof live.spec?.replicas === 'number' ? live.spec.replicas : 1
    const st = live.status ?? {}
    if ((st.observedGeneration ?? 0) < (live.metadata.generation ?? 0)) return `waiting for the ${d.kind} controller to observe ${what}`
    const ready = st.readyReplicas ?? 0
    const updated = st.updatedReplicas ?? 0
    if (ready < want || updated < want) return `waiting for ${what} to have all replicas ready (${ready}/${want} ready)`
    return undefined
  }

  /** Reports a failure: condition (Degraded), Warning event, log line and metric. */
  async #fail(cr: MemcachedObject, outcome: Failure, desired: RenderedObject[] | undefined, log: Logger): Promise<void> {
    const reason = DEGRADED_REASON[outcome.kind]
    if (cr.metadata.uid) this.#settled.delete(cr.metadata.uid)
    this.#d.metrics.failed(reason)
    log.warn({ reason, err: outcome.message }, 'reconcile failed')
    // An event marks the failure's arrival; while the CR already says exactly this (a resync of a
    // CR that stays broken), the condition tells it and a repeated event would be a write per resync.
    const degraded = findCondition(cr.status?.conditions, 'Degraded')
    if (degraded?.status !== 'True' || degraded.reason !== reason || degraded.message !== outcome.message) {
      await this.#d.events.record(cr, 'Warning', reason, outcome.message, outcome.kind === 'apply-failed' || outcome.kind === 'immutable' ? 'Apply' : outcome.kind === 'prune-failed' || outcome.kind === 'prune-refused' ? 'Prune' : 'Render')
    }
    await this.#writeStatus(cr, desired, undefined, outcome, log)
  }

  /**
   * The workload (Deployment or StatefulSet) whose pods and readiness the status reports: the one
   * just applied, else the cached one of the rendered kind and name — only if this CR controls it
   * (an object in conflict is not ours to report). Without a render (invalid spec, template
   * error), the one it controls, if any.
   */
  #ownWorkload(cr: MemcachedObject, desired: (WorkloadLike & { kind: string }) | undefined, applied: KubeObject | undefined): KubeObject | undefined {
    if (!desired) {
      for (const kind of WORKLOAD_KINDS) {
        const hit = this.#d.children.get(`apps/v1/${kind}`)?.byIndex(CONTROLLER_INDEX, cr.metadata.uid ?? '')[0]
        if (hit) return hit
      }
      return undefined
    }
    const live = applied ?? this.#d.children.get(`apps/v1/${desired.kind}`)?.get(cr.metadata.namespace, desired.metadata.name)
    return live?.metadata.ownerReferences?.some((r) => r.controller && r.uid === cr.metadata.uid) ? live : undefined
  }

  /** Writes `/status` (server-side apply) only when it changed. */
  async #writeStatus(cr: MemcachedObject, desired: RenderedObject[] | undefined, applied: KubeObject | undefined, outcome: ReconcileOutcome, log: Logger, also: readonly ConditionInput[] = []): Promise<void> {
    const namespace = cr.metadata.namespace ?? 'default'
    const desiredWorkload = desired?.find(isWorkload) as (WorkloadLike & { kind: string }) | undefined
    const liveWorkload = this.#ownWorkload(cr, desiredWorkload, applied) as WorkloadLike | undefined
    const pods = this.#d.pods.byIndex(INSTANCE_INDEX, `${namespace}/${labelValue(cr.metadata.name)}`) as unknown as PodLike[]
    const events = this.#d.workloadEvents
    const workloadFailure = events ? failedCreateCause(liveWorkload, (uid) => events.byIndex(INVOLVED_UID_INDEX, uid)) : undefined
    const resumed = resumedCondition(cr)
    const status = computeStatus({ cr, desiredWorkload, liveWorkload, pods, outcome, also: resumed ? [...also, resumed] : also, ...(workloadFailure !== undefined ? { workloadFailure } : {}), now: this.#now() })
    // The revision the objects run: the one just applied, else (a failure, or a change that waits
    // for the damage budget or a re-creation slot: nothing applied) the one before.
    const moved = outcome.kind === 'ok' && outcome.budget === undefined && outcome.queued === undefined
    const chartRevision = moved ? this.#revisions.get(cr.metadata.uid ?? '') : cr.status?.chartRevision
    if (chartRevision !== undefined) status.chartRevision = chartRevision
    if (statusEqual(status, cr.status)) return
    await this.#putStatus(cr, status, log)
  }

  /** Writes `/status` (server-side apply, forced). */
  async #putStatus(cr: MemcachedObject, status: MemcachedStatus, log: Logger): Promise<void> {
    const namespace = cr.metadata.namespace ?? 'default'
    try {
      await this.#d.client.apply(
        { apiVersion: API_VERSION, kind: KIND, metadata: { name: cr.metadata.name, namespace }, status },
        { fieldManager: FIELD_MANAGER, force: true, subresource: 'status' },
      )
    } catch (err) {
      // The CR may be gone meanwhile; anything else is retried with backoff.
      if (isNotFound(err)) return
      if (cr.metadata.uid) this.#written.delete(cr.metadata.uid)
      this.#d.metrics.failed('StatusWriteFailed')
      log.warn({ err: err instanceof Error ? err.message : String(err) }, 'status write failed')
      throw new ReconcileError(`status: ${err instanceof Error ? err.message : String(err)}`, err)
    }
    if (cr.metadata.uid) this.#written.set(cr.metadata.uid, { baseVersion: cr.metadata.resourceVersion, status })
  }
}

/** `namespace/name` split at its first slash (a namespace has none). */
function splitKey(key: string): [string, string] {
  const i = key.indexOf('/')
  return [key.slice(0, i), key.slice(i + 1)]
}

/**
 * What a settled reconcile keeps of a rendered object: its identity, and of the workload what the
 * status reads of it ({@link WorkloadLike}: replicas, selector, the StatefulSet's Service and
 * ordinals, the containers' ports) — not the whole render.
 */
function settledIdentity(d: RenderedObject): RenderedObject {
  const metadata = { name: d.metadata.name, ...(d.metadata.namespace !== undefined ? { namespace: d.metadata.namespace } : {}) }
  if (!isWorkload(d)) return { apiVersion: d.apiVersion, kind: d.kind, metadata }
  const spec = (d as WorkloadLike).spec ?? {}
  const containers = spec.template?.spec?.containers?.map((c) => (c.ports ? { ports: c.ports } : {}))
  return {
    apiVersion: d.apiVersion,
    kind: d.kind,
    metadata,
    spec: {
      ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}),
      ...(spec.selector !== undefined ? { selector: spec.selector } : {}),
      ...(spec.serviceName !== undefined ? { serviceName: spec.serviceName } : {}),
      ...(spec.ordinals !== undefined ? { ordinals: spec.ordinals } : {}),
      ...(containers ? { template: { spec: { containers } } } : {}),
    },
  }
}

/**
 * Whether the server answered an apply with the object as the cache showed it: the same
 * resourceVersion, which every stored change moves (kube-apiserver skips the write of an update
 * that changes nothing, e.g. when a mutating webhook rewrites the field the apply set back to what
 * was stored). Nothing was updated: no event, no `updated` log line.
 */
export function unchangedByApply(current: KubeObject, applied: KubeObject): boolean {
  const rv = current.metadata.resourceVersion
  return rv !== undefined && rv !== '' && applied.metadata.resourceVersion === rv && applied.metadata.uid === current.metadata.uid
}
