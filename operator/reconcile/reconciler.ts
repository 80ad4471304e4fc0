/**
 * One reconcile of one Memcached: render → stamp → guard → diff → server-side apply (re-creating
 * what the server will not change in place) → prune → status. Reads come from informer caches (never a GET per reconcile); the only requests are the
 * writes that something actually needs.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND, type Memcached, type MemcachedStatus } from '../api/memcached.ts'
import { ApiError, isNotFound, type KubeClient, type KubeObject } from '../controller/client.ts'
import type { Chart } from '../render/chart.ts'
import { renderInstance } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import { WATCHED_KINDS } from '../render/guard.ts'
import type { RenderedObject } from '../render/manifest.ts'
import { labelValue } from '../render/names.ts'
import { hashDesired, type AppliedMemory } from './applied.ts'
import { findCondition } from './conditions.ts'
import { diffObject, FIELD_MANAGER } from './diff.ts'
import type { EventRecorder } from './recorder.ts'
import { describeObject, objectKey, ownershipConflicts, stampOwner } from './owner.ts'
import { immutableRefusal, keptImmutable, whyNotRecreate, type ImmutableChange } from './recreate.ts'
import { computeStatus, DEGRADED_REASON, outcomeOfRenderError, statusEqual, type DeploymentLike, type PodLike, type ReconcileOutcome } from './status.ts'

/** A Memcached as the informer caches it. */
export type MemcachedObject = Memcached & KubeObject

/** What the reconciler reads of a cache (an informer, or several for several namespaces). */
export interface Cache<T extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): T | undefined
  byIndex(index: string, value: string): T[]
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
  skipped(kind: string): void
  pruned(kind: string): void
  failed(reason: string): void
}

/** What a reconcile needs. */
export interface ReconcilerDeps {
  client: KubeClient
  /** The chart now (it may be reloaded when its files change). */
  chart: () => Chart
  memcacheds: Cache<MemcachedObject>
  /** One cache per managed kind, keyed `apiVersion/kind`, each indexed by {@link CONTROLLER_INDEX}. */
  children: ReadonlyMap<string, Cache>
  /** Pods, indexed by {@link INSTANCE_INDEX} (`<namespace>/<instance label>`). */
  pods: Cache
  memory: AppliedMemory
  events: EventRecorder
  metrics: ReconcileMetrics
  now?: () => Date
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

/** A failed outcome. */
type Failure = Exclude<ReconcileOutcome, { kind: 'ok' }>

/** What the worker does after a reconcile. */
export interface ReconcileResult {
  /** Reconcile again after this long (e.g. an ownership conflict, which no watched event would end). */
  requeueAfterMs?: number
}

/** A failure that was already reported (condition, event, metric); the worker retries it with backoff. */
export class ReconcileError extends Error {
  override readonly cause: unknown
  /** A server's Retry-After, in milliseconds. */
  readonly retryAfterMs: number | undefined
  constructor(message: string, cause: unknown) {
    super(message)
    this.name = 'ReconcileError'
    this.cause = cause
    this.retryAfterMs = cause instanceof ApiError && cause.retryAfterSeconds !== undefined ? cause.retryAfterSeconds * 1000 : undefined
  }
}

const OWNERSHIP_RETRY_MS = 60_000

/** `apiVersion/kind`, the key of {@link ReconcilerDeps.children}. */
export function kindKey(obj: { apiVersion: string; kind: string }): string {
  return `${obj.apiVersion}/${obj.kind}`
}

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

  constructor(deps: ReconcilerDeps) {
    this.#d = deps
    this.#now = deps.now ?? (() => new Date())
  }

  /** Reconciles the CR `namespace/name`. @throws ReconcileError after reporting it, for a retry with backoff */
  async reconcile(namespace: string, name: string, log: Logger): Promise<ReconcileResult> {
    const cr = this.#withWrittenStatus(this.#d.memcacheds.get(namespace, name))
    if (!cr || cr.metadata.deletionTimestamp) return {}
    let desired: RenderedObject[]
    try {
      const rendered = renderInstance(this.#d.chart(), { name, namespace, spec: cr.spec ?? {} })
      desired = stampOwner(rendered.objects, cr)
    } catch (err) {
      if (!(err instanceof RenderError)) throw err
      const outcome = outcomeOfRenderError(err)
      // Nothing is applied and the previous objects keep running; editing the CR or the chart retries.
      await this.#fail(cr, outcome, undefined, log)
      return {}
    }

    const live = new Map<string, KubeObject | undefined>()
    for (const d of desired) live.set(objectKey(d), this.#cached(d) ?? (await this.#lookUp(cr, d, log)))
    const conflicts = ownershipConflicts(desired, live, cr)
    if (conflicts.length > 0) {
      await this.#fail(cr, { kind: 'ownership', message: conflicts.map((c) => c.message).join('; '), deployment: conflicts.some((c) => c.kind === 'Deployment') }, desired, log)
      return { requeueAfterMs: OWNERSHIP_RETRY_MS }
    }

    let liveDeployment: KubeObject | undefined
    const done: Applied = { created: [], updated: [], recreated: [] }
    try {
      for (const d of desired) {
        const current = live.get(objectKey(d))
        const result = await this.#applyOne(cr, d, current, done, log)
        if (d.kind === 'Deployment') liveDeployment = result
      }
    } finally {
      await this.#announce(cr, done)
    }
    await this.#prune(cr, desired, log)
    await this.#writeStatus(cr, desired, liveDeployment, { kind: 'ok', recreated: done.recreated.map((r) => `${r.what}: ${r.change.message}`) }, log)
    return {}
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

  /** Forgets what was written and re-created for a CR (it was deleted). */
  forget(uid: string): void {
    this.#written.delete(uid)
    this.#recreations.delete(uid)
  }

  /** The live object of a desired one, from its kind's cache. */
  #cached(d: RenderedObject): KubeObject | undefined {
    return this.#d.children.get(kindKey(d))?.get(d.metadata.namespace, d.metadata.name)
  }

  /**
   * An object the caches do not hold, read from the server before it is created: the caches only
   * see objects labelled as ours, and an apply (with force) must never land on somebody else's
   * object of the same name. Costs one GET per object about to be created, none in steady state.
   */
  async #lookUp(cr: MemcachedObject, d: RenderedObject, log: Logger): Promise<KubeObject | undefined> {
    try {
      return await this.#d.client.get({ apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name })
    } catch (err) {
      if (isNotFound(err)) return undefined
      // A ReconcileError counts as reported (the worker logs nothing more): report it first.
      const message = `read ${describeObject(d)}: ${err instanceof Error ? err.message : String(err)}`
      await this.#fail(cr, { kind: 'error', message }, undefined, log)
      throw new ReconcileError(message, err)
    }
  }

  /**
   * Applies one object unless it already is what we render; returns the live object after.
   * A field the server will not change in place (refused, or silently kept) is changed by
   * deleting and re-creating the object ({@link Reconciler.#recreate}).
   */
  async #applyOne(cr: MemcachedObject, d: RenderedObject, current: KubeObject | undefined, done: Applied, log: Logger): Promise<KubeObject | undefined> {
    const { memory, metrics } = this.#d
    // Deleted to be re-created and still held by a finalizer: its deletion event brings us back.
    const deleted = this.#recreations.get(cr.metadata.uid ?? '')?.get(objectKey(d))?.deletedUid
    if (deleted !== undefined && current?.metadata.uid === deleted) return undefined
    const kept = current ? keptImmutable(d, current) : undefined
    if (current && kept) return this.#recreate(cr, d, current, kept, done, log)
    if (current && memory.isUnchangedSinceApply(d, current)) {
      metrics.skipped(d.kind)
      return current
    }
    let fields: string[] = []
    if (current) {
      const diff = diffObject(d, current)
      if (diff.equal) {
        memory.remember(current, d)
        metrics.skipped(d.kind)
        return current
      }
      fields = diff.fields
    }
    let applied: KubeObject
    try {
      applied = await this.#d.client.apply(d, { fieldManager: FIELD_MANAGER, force: true })
    } catch (err) {
      const refused = current ? immutableRefusal(err, d.kind) : undefined
      if (current && refused) return this.#recreate(cr, d, current, refused, done, log)
      return this.#applyFailed(cr, d, err, log)
    }
    memory.remember(applied, d)
    metrics.applied(d.kind)
    const what = describeObject(d)
    if (current) {
      log.info({ object: what, fields }, 'updated')
      done.updated.push(`${what}${fields.length > 0 ? ` (${fields.slice(0, 3).join(', ')}${fields.length > 3 ? ', …' : ''})` : ''}`)
    } else {
      log.info({ object: what }, 'created')
      done.created.push(what)
    }
    return applied
  }

  /** Reports a failed apply (Degraded ApplyFailed) and throws it for a retry with backoff. */
  async #applyFailed(cr: MemcachedObject, d: RenderedObject, err: unknown, log: Logger): Promise<never> {
    const message = `${describeObject(d)}: ${err instanceof Error ? err.message : String(err)}`
    await this.#fail(cr, { kind: 'apply-failed', message }, undefined, log)
    throw new ReconcileError(`apply ${message}`, err)
  }

  /**
   * Deletes `current` (uid precondition: never an object that replaced it meanwhile) and applies
   * `d` again, which creates it. Background propagation, as Flux's `ssa` manager and `kubectl
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
    byObject.set(objectKey(d), { desiredHash, deletedUid: uid })
    this.#recreations.set(ownerUid, byObject)
    let left: KubeObject | undefined
    try {
      left = await this.#d.client.delete(
        { apiVersion: d.apiVersion, kind: d.kind, namespace: d.metadata.namespace, name: d.metadata.name },
        { propagationPolicy: 'Background', preconditions: { uid } },
      )
    } catch (err) {
      if (!isNotFound(err)) return this.#applyFailed(cr, d, new Error(`delete to re-create (${change.field}): ${err instanceof Error ? err.message : String(err)}`), log)
    }
    this.#d.memory.forget(uid)
    log.info({ object: what, field: change.field }, 'deleted to re-create')
    done.recreated.push({ what, change })
    // A finalizer holds it: it is re-created once it is gone (#applyOne waits for that uid).
    if (left?.kind === d.kind && left.metadata.uid === uid && left.metadata.deletionTimestamp) return undefined
    let applied: KubeObject
    try {
      applied = await this.#d.client.apply(d, { fieldManager: FIELD_MANAGER, force: true })
    } catch (err) {
      return this.#applyFailed(cr, d, err, log)
    }
    this.#d.memory.remember(applied, d)
    this.#d.metrics.applied(d.kind)
    log.info({ object: what }, 're-created')
    return applied
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

  /** Deletes what this CR controls and no longer renders (found by label and controller uid). */
  async #prune(cr: MemcachedObject, desired: RenderedObject[], log: Logger): Promise<void> {
    const keep = new Set(desired.map((d) => objectKey(d)))
    const pruned: string[] = []
    const uid = cr.metadata.uid
    if (!uid) return
    try {
      for (const kind of WATCHED_KINDS) {
        const informer = this.#d.children.get(kindKey(kind))
        for (const obj of informer?.byIndex(CONTROLLER_INDEX, uid) ?? []) {
          const identity = { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: obj.metadata.name ?? '', namespace: obj.metadata.namespace ?? '' } }
          if (keep.has(objectKey(identity)) || obj.metadata.deletionTimestamp) continue
          const what = describeObject(identity)
          try {
            await this.#d.client.delete(
              { apiVersion: kind.apiVersion, kind: kind.kind, namespace: identity.metadata.namespace, name: identity.metadata.name },
              { propagationPolicy: 'Background', ...(obj.metadata.uid ? { preconditions: { uid: obj.metadata.uid } } : {}) },
            )
          } catch (err) {
            if (isNotFound(err)) continue
            const message = `${what}: ${err instanceof Error ? err.message : String(err)}`
            await this.#fail(cr, { kind: 'prune-failed', message }, desired, log)
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
  }

  /** Reports a failure: condition (Degraded), Warning event, log line and metric. */
  async #fail(cr: MemcachedObject, outcome: Failure, desired: RenderedObject[] | undefined, log: Logger): Promise<void> {
    const reason = DEGRADED_REASON[outcome.kind]
    this.#d.metrics.failed(reason)
    log.warn({ reason, err: outcome.message }, 'reconcile failed')
    // An event marks the failure's arrival; while the CR already says exactly this (a resync of a
    // CR that stays broken), the condition tells it and a repeated event would be a write per resync.
    const degraded = findCondition(cr.status?.conditions, 'Degraded')
    if (degraded?.status !== 'True' || degraded.reason !== reason || degraded.message !== outcome.message) {
      await this.#d.events.record(cr, 'Warning', reason, outcome.message, outcome.kind === 'apply-failed' || outcome.kind === 'immutable' ? 'Apply' : outcome.kind === 'prune-failed' ? 'Prune' : 'Render')
    }
    await this.#writeStatus(cr, desired, undefined, outcome, log)
  }

  /**
   * The Deployment whose pods and readiness the status reports: the one just applied, else the
   * cached one of the rendered name — only if this CR controls it (an object in conflict is not
   * ours to report). Without a render (invalid spec, template error), the one it controls, if any.
   */
  #ownDeployment(cr: MemcachedObject, desired: DeploymentLike | undefined, applied: KubeObject | undefined): KubeObject | undefined {
    const deployments = this.#d.children.get('apps/v1/Deployment')
    if (!desired) return deployments?.byIndex(CONTROLLER_INDEX, cr.metadata.uid ?? '')[0]
    const live = applied ?? deployments?.get(cr.metadata.namespace, desired.metadata.name)
    return live?.metadata.ownerReferences?.some((r) => r.controller && r.uid === cr.metadata.uid) ? live : undefined
  }

  /** Writes `/status` (server-side apply) only when it changed. */
  async #writeStatus(cr: MemcachedObject, desired: RenderedObject[] | undefined, applied: KubeObject | undefined, outcome: ReconcileOutcome, log: Logger): Promise<void> {
    const namespace = cr.metadata.namespace ?? 'default'
    const desiredDeployment = desired?.find((o) => o.kind === 'Deployment') as DeploymentLike | undefined
    const liveDeployment = this.#ownDeployment(cr, desiredDeployment, applied) as DeploymentLike | undefined
    const pods = this.#d.pods.byIndex(INSTANCE_INDEX, `${namespace}/${labelValue(cr.metadata.name)}`) as unknown as PodLike[]
    const status = computeStatus({ cr, desiredDeployment, liveDeployment, pods, outcome, now: this.#now() })
    if (statusEqual(status, cr.status)) return
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
