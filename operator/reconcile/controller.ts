/**
 * The Memcached controller: informers for Memcacheds, for every kind the chart may render
 * (label-filtered to objects the operator manages) and for pods; events mapped to the owning CR's
 * key; a work queue and N workers running the {@link Reconciler}.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND } from '../api/memcached.ts'
import type { KubeClient, KubeObject } from '../controller/client.ts'
import { byControllerUid, Informer, objectKey, splitKey } from '../controller/informer.ts'
import { reconcileLogger } from '../controller/log.ts'
import type { OperatorMetrics } from '../controller/metrics.ts'
import { WorkQueue, type QueueHooks } from '../controller/queue.ts'
import type { Chart } from '../render/chart.ts'
import { WATCHED_KINDS } from '../render/guard.ts'
import { labelValue } from '../render/names.ts'
import { AppliedMemory } from './applied.ts'
import { EventAggregator } from './events.ts'
import { FIELD_MANAGER } from './diff.ts'
import { controllerOf } from './owner.ts'
import { ApiEventRecorder, type EventRecorder } from './recorder.ts'
import { CONTROLLER_INDEX, INSTANCE_INDEX, INSTANCE_LABEL, kindKey, Reconciler, ReconcileError, type Cache, type MemcachedObject, type ReconcileMetrics } from './reconciler.ts'

/** The label every object the operator renders carries; the informers of children select by it. */
export const MANAGED_BY_SELECTOR = 'app.kubernetes.io/managed-by=memcached-operator'
const UID_INDEX = 'uid'

/** The controller's name in metrics and logs. */
export const CONTROLLER_NAME = 'memcached'

/** Metrics of the controller, named after controller-runtime's. */
export interface ControllerMetrics extends ReconcileMetrics {
  reconciled(result: 'success' | 'error' | 'requeue' | 'requeue_after', seconds: number): void
  queueHooks: QueueHooks
}

/** The controller's metrics in the operator's prom-client registry. */
export function controllerMetrics(m: OperatorMetrics): ControllerMetrics {
  m.initController(CONTROLLER_NAME)
  return {
    applied: (kind) => m.applies.inc({ kind }),
    skipped: (kind) => m.skippedApplies.inc({ kind }),
    pruned: (kind) => m.prunes.inc({ kind }),
    failed: (reason) => m.reconcileFailures.inc({ reason }),
    reconciled: (result, seconds) => m.observeReconcile(CONTROLLER_NAME, result, seconds),
    queueHooks: m.queueHooks(CONTROLLER_NAME),
  }
}

/** Options of {@link MemcachedController}. */
export interface MemcachedControllerOptions {
  client: KubeClient
  chart: () => Chart
  /** Namespaces to watch; empty for all. */
  namespaces: string[]
  /** A label selector on the Memcacheds: only those it matches are cached, hence reconciled. */
  selector?: string
  concurrency: number
  resyncPeriodMs: number
  log: Logger
  metrics: ControllerMetrics
  /** Overrides for tests. */
  recorder?: EventRecorder
}

/** What the controller keeps of a pod: enough for status.nodes and for mapping it to its CR. */
export function podSummary(pod: KubeObject): KubeObject {
  const { name, namespace, uid, resourceVersion, labels, deletionTimestamp, ownerReferences } = pod.metadata
  const phase = (pod.status as { phase?: string } | undefined)?.phase
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: { name, namespace, uid, resourceVersion, labels, ...(deletionTimestamp ? { deletionTimestamp } : {}), ...(ownerReferences ? { ownerReferences } : {}) },
    ...(phase ? { status: { phase } } : {}),
  }
}

/** A Memcached as cached: its managedFields are never read. */
function withoutManagedFields(o: KubeObject): KubeObject {
  if (!o.metadata.managedFields) return o
  const { managedFields: _, ...metadata } = o.metadata
  return { ...o, metadata }
}

/** A child as cached: of its managedFields only the operator's own Apply entry is read (by the diff). */
function withOwnManagedFields(o: KubeObject): KubeObject {
  const entries = o.metadata.managedFields as { manager?: string; operation?: string }[] | undefined
  if (!entries) return o
  const own = entries.filter((e) => e.manager === FIELD_MANAGER && e.operation === 'Apply' && !('subresource' in e))
  return { ...o, metadata: { ...o.metadata, managedFields: own } as KubeObject['metadata'] }
}

/** Informers of one resource, one per watched namespace (or one for all), seen as one cache. */
class InformerSet<T extends KubeObject = KubeObject> implements Cache<T> {
  readonly informers: Informer<T>[]
  constructor(informers: Informer<T>[]) {
    this.informers = informers
  }
  get(namespace: string | undefined, name: string): T | undefined {
    for (const i of this.informers) {
      const hit = i.get(namespace, name)
      if (hit) return hit
    }
    return undefined
  }
  byIndex(index: string, value: string): T[] {
    return this.informers.length === 1 ? this.informers[0]!.byIndex(index, value) : this.informers.flatMap((i) => i.byIndex(index, value))
  }
  list(): T[] {
    return this.informers.flatMap((i) => i.list())
  }
  hasSynced(): boolean {
    return this.informers.every((i) => i.hasSynced())
  }
}

/** The controller; {@link start} the caches, then {@link runWorkers} (on the leader only). */
export class MemcachedController {
  #o: MemcachedControllerOptions
  #queue: WorkQueue
  #memcacheds: InformerSet<MemcachedObject>
  #children = new Map<string, InformerSet>()
  #pods: InformerSet
  #memory = new AppliedMemory()
  #aggregator = new EventAggregator()
  #reconciler: Reconciler
  #workers: Promise<void>[] = []
  /** Events are queued only once the workers run (on the leader): a standby's queue stays empty. */
  #active = false

  constructor(opts: MemcachedControllerOptions) {
    this.#o = opts
    this.#queue = new WorkQueue({ name: CONTROLLER_NAME, hooks: opts.metrics.queueHooks })
    const onError = (what: string) => (err: Error, phase: string) => opts.log.warn({ informer: what, phase, err: err.message }, 'informer retrying')
    const make = <T extends KubeObject>(apiVersion: string, kind: string, labelSelector: string | undefined, indexes: Record<string, (o: T) => string[]>): InformerSet<T> =>
      new InformerSet(
        (opts.namespaces.length > 0 ? opts.namespaces : [undefined]).map((namespace) => {
          const informer = new Informer<T>(opts.client, {
            apiVersion,
            kind,
            ...(namespace ? { namespace } : {}),
            ...(labelSelector ? { labelSelector } : {}),
            // Pods are many and only their names, labels, phase and deletion matter: cache just that.
            transform: (o) => (kind === 'Pod' ? podSummary(o) : kind === KIND ? withoutManagedFields(o) : withOwnManagedFields(o)) as T,
            onError: onError(kind),
            ...(kind === KIND ? { resyncPeriodMs: opts.resyncPeriodMs } : {}),
          })
          for (const [name, fn] of Object.entries(indexes)) informer.addIndex(name, fn)
          return informer
        }),
      )

    // A shard sees only its Memcacheds: children and pods of the others map to keys it does not
    // hold, whose reconcile does nothing (it never prunes or adopts for a CR it cannot see).
    this.#memcacheds = make<MemcachedObject>(API_VERSION, KIND, opts.selector, {
      [UID_INDEX]: (o) => (o.metadata.uid ? [o.metadata.uid] : []),
      [INSTANCE_INDEX]: (o) => [`${o.metadata.namespace ?? ''}/${labelValue(o.metadata.name)}`],
    })
    for (const k of WATCHED_KINDS) this.#children.set(kindKey(k), make(k.apiVersion, k.kind, MANAGED_BY_SELECTOR, { [CONTROLLER_INDEX]: byControllerUid }))
    this.#pods = make('v1', 'Pod', MANAGED_BY_SELECTOR, {
      [INSTANCE_INDEX]: (o) => {
        const instance = o.metadata.labels?.[INSTANCE_LABEL]
        return instance ? [`${o.metadata.namespace ?? ''}/${instance}`] : []
      },
    })

    const recorder = opts.recorder ?? new ApiEventRecorder(opts.client, this.#aggregator, opts.log)
    this.#reconciler = new Reconciler({
      client: opts.client,
      chart: opts.chart,
      memcacheds: this.#memcacheds,
      children: this.#children,
      pods: this.#pods,
      memory: this.#memory,
      events: recorder,
      metrics: opts.metrics,
    })
    this.#wire()
  }

  /** Maps every event to the key of the CR it concerns. */
  #wire(): void {
    const enqueue = (o: KubeObject): void => {
      if (this.#active) this.#queue.add(objectKey(o))
    }
    for (const i of this.#memcacheds.informers) {
      i.onAdd(enqueue)
      i.onUpdate((before, after) => {
        // Our own status writes change neither generation nor deletion: no reconcile for them.
        // A resync hands the same object twice: reconcile it (drift no event announced).
        if (before === after || before.metadata.generation !== after.metadata.generation || before.metadata.deletionTimestamp !== after.metadata.deletionTimestamp) enqueue(after)
      })
      i.onDelete((cr) => {
        if (cr.metadata.uid) {
          this.#memory.forgetOwner(cr.metadata.uid)
          this.#reconciler.forget(cr.metadata.uid)
          this.#aggregator.forgetObject(cr.metadata.uid)
        }
      })
    }
    const byOwner = (o: KubeObject): void => {
      const owner = controllerOf(o)
      if (owner?.kind !== KIND) return
      const owners = this.#memcacheds.byIndex(UID_INDEX, owner.uid)
      for (const cr of owners) enqueue(cr)
      // An object of a deleted CR: a CR re-created under the same name may be waiting for it to go
      // (an ownership conflict), so it is told by name, as controller-runtime's owner handler does.
      const successor = owners.length === 0 ? this.#memcacheds.get(o.metadata.namespace, owner.name) : undefined
      if (successor) enqueue(successor)
    }
    for (const set of this.#children.values()) {
      for (const i of set.informers) {
        i.onAdd(byOwner)
        i.onUpdate((before, after) => {
          if (before.metadata.resourceVersion !== after.metadata.resourceVersion) byOwner(after)
        })
        i.onDelete(byOwner)
      }
    }
    const byInstance = (pod: KubeObject): void => {
      const instance = pod.metadata.labels?.[INSTANCE_LABEL]
      if (!instance) return
      for (const cr of this.#memcacheds.byIndex(INSTANCE_INDEX, `${pod.metadata.namespace ?? ''}/${instance}`)) enqueue(cr)
    }
    for (const i of this.#pods.informers) {
      i.onAdd(byInstance)
      i.onDelete(byInstance)
      i.onUpdate((before, after) => {
        // status.nodes lists pods that exist and are not terminating or finished.
        const phase = (o: KubeObject) => (o.status as { phase?: string } | undefined)?.phase
        if (before.metadata.deletionTimestamp !== after.metadata.deletionTimestamp || phase(before) !== phase(after)) byInstance(after)
      })
    }
  }

  #all(): InformerSet[] {
    return [this.#memcacheds as unknown as InformerSet, ...this.#children.values(), this.#pods]
  }

  /** Starts every informer and resolves when all caches have synced. */
  async start(): Promise<void> {
    const informers = this.#all().flatMap((s) => s.informers)
    for (const i of informers) i.start()
    await Promise.all(informers.map((i) => i.waitForSync()))
  }

  /** True once every cache has synced (the readiness probe). */
  hasSynced(): boolean {
    return this.#all().every((s) => s.hasSynced())
  }

  /**
   * Informers that made no progress (a list, an event, a bookmark, a watch (re)started) for
   * `thresholdMs`: wedged caches, for the liveness probe.
   */
  stalledInformers(thresholdMs: number, now: number = Date.now()): string[] {
    const stalled: string[] = []
    for (const s of this.#all()) for (const i of s.informers) if (now - i.lastProgress() > thresholdMs) stalled.push(i.describe())
    return stalled
  }

  /** Re-queues every Memcached (after a chart change); nothing while the workers do not run. */
  enqueueAll(): void {
    if (!this.#active) return
    for (const cr of this.#memcacheds.list()) this.#queue.add(objectKey(cr))
  }

  /**
   * Starts the workers (call once this process leads) and queues every Memcached once, as
   * controller-runtime starts a controller's sources when it is elected.
   */
  runWorkers(): void {
    if (this.#active) return
    this.#active = true
    this.enqueueAll()
    for (let i = 0; i < this.#o.concurrency; i++) this.#workers.push(this.#work())
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.#queue.get()
      if (key === undefined) return
      const { namespace, name } = splitKey(key)
      const log = reconcileLogger(this.#o.log, { controller: CONTROLLER_NAME, key })
      const started = performance.now()
      try {
        const result = await this.#reconciler.reconcile(namespace ?? '', name, log)
        this.#queue.forget(key)
        if (result.requeueAfterMs !== undefined) this.#queue.addAfter(key, result.requeueAfterMs)
        this.#o.metrics.reconciled(result.requeueAfterMs !== undefined ? 'requeue_after' : 'success', (performance.now() - started) / 1000)
      } catch (err) {
        const retryAfter = err instanceof ReconcileError ? err.retryAfterMs : undefined
        const delay = this.#queue.addRateLimited(key, retryAfter !== undefined ? { minDelayMs: retryAfter } : {})
        this.#o.metrics.reconciled('error', (performance.now() - started) / 1000)
        if (!(err instanceof ReconcileError)) {
          // Already-reported failures were logged by the reconciler; anything else is a bug worth a line.
          this.#o.metrics.failed('ReconcileError')
          log.error({ err }, 'reconcile failed unexpectedly')
        }
        log.debug({ retryInMs: delay }, 'requeued with backoff')
      } finally {
        this.#queue.done(key)
      }
    }
  }

  /** Stops taking work, waits for in-flight reconciles, stops the informers. */
  async stop(): Promise<void> {
    this.#queue.shutdown()
    await this.#queue.drain()
    await Promise.all(this.#workers)
    for (const s of this.#all()) for (const i of s.informers) i.stop()
  }
}
