/**
 * The Memcached controller: informers for Memcacheds, for every kind the chart declares in its
 * kinds.yaml and for pods (label-filtered to objects the operator manages, and with `--selector`
 * to the shard's: shard.ts), for the Secrets labelled as render inputs, and for the StatefulSet
 * controller's FailedCreate Events (field-selected: workload-events.ts); events mapped to the key of the CR they concern; a work queue and N
 * workers running the {@link Reconciler}. Discovery decides which declared kinds get an informer:
 * a cluster-scoped one is refused, an optional one the cluster does not serve is left out and
 * looked up again every discovery period. Its metrics are controller-metrics.ts; the fleet's damage
 * budget and re-creation pacer, which every reconcile shares, are built by damage-guards.ts.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND } from '../api/memcached.ts'
import type { KubeClient, KubeObject } from '../controller/client.ts'
import { discoverKinds } from '../controller/discovery.ts'
import { ALLOW_MASS_PRUNE_ANNOTATION, type BudgetLimits } from './budget.ts'
import { CONTROLLER_NAME, type ControllerMetrics } from './controller-metrics.ts'
import { damageGuards } from './damage-guards.ts'
import { PAUSED_ANNOTATION } from './pause.ts'
import { detectPlatform, type Platform } from '../controller/platform.ts'
import type { PlatformOverlay } from '../render/overlays.ts'
import { byControllerUid, Informer, objectKey, splitKey } from '../controller/informer.ts'
import { reconcileLogger } from '../controller/log.ts'
import { WorkQueue } from '../controller/queue.ts'
import { FAILED_CREATE_SELECTOR, failedCreateSummary, INVOLVED_UID_INDEX, type FailedCreateEvent } from './workload-events.ts'
import type { Chart } from '../render/chart.ts'
import type { ChartKind } from '../render/kinds.ts'
import { labelValue } from '../render/names.ts'
import { INPUT_SELECTOR } from '../render/secrets.ts'
import { AppliedMemory } from './applied.ts'
import { EventAggregator } from './events.ts'
import { controllerOf } from './owner.ts'
import { ApiEventRecorder, type EventRecorder } from './recorder.ts'
import { SecretInformers } from './secret-informers.ts'
import { SecretReferences, secretSummary, type SecretSummary } from './secrets.ts'
import { Reloader, type PodDialer } from './reload.ts'
import { Resizer } from './resize.ts'
import { selectorKeys, shardSelector } from './shard.ts'
import type { WorkloadLike } from './status.ts'
import { CONTROLLER_INDEX, INSTANCE_INDEX, INSTANCE_LABEL, kindKey, Reconciler, ReconcileError, type Cache, type MemcachedObject, type ReconcilerDeps } from './reconciler.ts'
import { childSummary, memcachedSummary, podStatusKey, podSummary } from './cache-summary.ts'

/** The label every object the operator renders carries; the informers of children select by it. */
export const MANAGED_BY_SELECTOR = 'app.kubernetes.io/managed-by=memcached-operator'
const UID_INDEX = 'uid'

/**
 * The work queue's priorities, as controller-runtime's priority queue has them: what an event
 * announced (a CR created or changed, one of its objects or Secrets changed) first, in the order
 * the events came; a resync and the start-up list of every CR after it (`LowPriority`, pkg/handler
 * `WithLowPriorityWhenUnchanged`), so that a restart or a chart change with thousands of CRs does
 * not hold back a change a user just made. Changes are not ordered among themselves: a CR's pods
 * becoming ready waits behind the CRs created before them, and so a CR's status is written once its
 * pods are all ready, not once per pod (measured: 2.0 reconciles per new CR against 3.9 with its
 * objects' events first).
 */
export const PRIORITY = { changed: 0, resync: -100 } as const

/**
 * Whether, and at which priority, a Memcached's update is reconciled: a resync (the informer hands
 * the same object twice) last; a new generation or a deletion as a change; anything else — above
 * all the operator's own status writes, which change neither — not at all.
 */
export function updatePriority(before: KubeObject, after: KubeObject): number | undefined {
  if (before === after) return PRIORITY.resync
  if (before.metadata.generation !== after.metadata.generation || before.metadata.deletionTimestamp !== after.metadata.deletionTimestamp) return PRIORITY.changed
  // The operator's own switches are annotations, which move no generation.
  for (const a of [PAUSED_ANNOTATION, ALLOW_MASS_PRUNE_ANNOTATION]) if (before.metadata.annotations?.[a] !== after.metadata.annotations?.[a]) return PRIORITY.changed
  // Labels move no generation either, and the platform's overlays select CRs by them (keys in another order only cost a reconcile).
  if (JSON.stringify(before.metadata.labels ?? {}) !== JSON.stringify(after.metadata.labels ?? {})) return PRIORITY.changed
  return undefined
}

/** Options of {@link MemcachedController}. */
export interface MemcachedControllerOptions {
  client: KubeClient
  chart: () => Chart
  /** The chart each CR is rendered with (revision.ts); absent: `chart` for every CR. */
  chartFor?: ReconcilerDeps['chartFor']
  /** Namespaces to watch; empty for all. */
  namespaces: string[]
  /** A label selector on the Memcacheds: only those it matches are cached, hence reconciled. */
  selector?: string
  concurrency: number
  resyncPeriodMs: number
  /** Server-side timeout of the informers' watches (default 300–600 s at random, as client-go; for tests). */
  watchTimeoutSeconds?: number
  log: Logger
  metrics: ControllerMetrics
  /**
   * How often discovery is asked again about declared kinds that have no informer yet (optional
   * kinds not served, kinds a reloaded chart added) and about the optional kinds that have one
   * (their CRD may be uninstalled); default one minute. No request when there are neither.
   */
  discoveryPeriodMs?: number
  /**
   * Workloads deleted and re-created at a time across every Memcached (a field the server will not
   * change in place); 0: no limit. Default MAX_CONCURRENT_RECREATIONS (damage-guards.ts).
   */
  maxConcurrentRecreations?: number
  /** How long a re-creation holds its slot at most while its replacement is not ready; default RECREATION_TIMEOUT_MS (damage-guards.ts). */
  recreationTimeoutMs?: number
  /** The fleet's damage budget (budget.ts): deletes and pod restarts per window; default DEFAULT_BUDGET. */
  budget?: BudgetLimits
  /** A render may prune at most this fraction of a CR's objects; default 0.5, 1: no limit. */
  maxPruneFraction?: number
  /**
   * The platform to render for; default: found by discovery at start (controller/platform.ts),
   * `kubernetes` when discovery fails (logged).
   */
  platform?: Platform
  /** The platform's overlays (`run --overlays`), applied to every Memcached they select before its own. */
  platformOverlays?: readonly PlatformOverlay[]
  /** How long transient failures last before the CR is Degraded (default SUSTAINED_FAILURE_MS, transient.ts). */
  sustainedFailureMs?: number
  /** Overrides for tests. */
  recorder?: EventRecorder
  /** Where the operator reaches a pod's memcached to load renewed Secrets (reload.ts); default its IP. Tests map pods to processes on loopback. */
  podDialer?: PodDialer
  /** How soon a CR whose pods have not loaded a renewed Secret yet is looked at again (default 10 s; for tests). */
  reloadRetryMs?: number
  /** How long a TLS Secret must be unchanged before the pods are asked to load it (default 90 s, reload.ts; for tests). */
  reloadSettleMs?: number
}

/** Why a declared kind the cluster serves cluster-scoped is refused. */
function clusterScoped(k: ChartKind): string {
  return `${k.apiVersion} ${k.kind} (${k.resource}) is cluster-scoped: a chart may declare only namespaced kinds (kinds.yaml)`
}

/** The default of {@link MemcachedControllerOptions.discoveryPeriodMs}. */
export const DISCOVERY_PERIOD_MS = 60_000

/** A declared kind the cluster serves cluster-scoped: the operator renders only into a CR's namespace. */
export class ClusterScopedKindError extends Error {
  override name = 'ClusterScopedKindError'
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
  /** What the child and pod informers select: the operator's label and the shard's selector (shard.ts). */
  #childSelector: string
  /** Optional kinds the cluster does not serve (kindKey → why): the reconciler leaves them out. */
  #unserved = new Map<string, string>()
  #make: <T extends KubeObject>(apiVersion: string, kind: string, labelSelector: string | undefined, indexes: Record<string, (o: T) => string[]>) => InformerSet<T>
  #started = false
  #stopped = false
  #discovering: Promise<void> | undefined
  #discoveryTimer: NodeJS.Timeout | undefined
  #pods: InformerSet
  /** StatefulSets' FailedCreate Events (workload-events.ts). */
  #workloadEvents: InformerSet<FailedCreateEvent>
  /** Secrets labelled as render inputs, without their content (see reconcile/secrets.ts). */
  #secrets: SecretInformers
  #references = new SecretReferences()
  #memory = new AppliedMemory()
  #aggregator = new EventAggregator()
  #reconciler: Reconciler
  /** What the reconciles render for: decided at start, before any reconcile. */
  #platform: Platform = 'kubernetes'
  #workers: Promise<void>[] = []
  /** Events are queued only once the workers run (on the leader): a standby's queue stays empty. */
  #active = false

  constructor(opts: MemcachedControllerOptions) {
    this.#o = opts
    this.#queue = new WorkQueue({ name: CONTROLLER_NAME, hooks: opts.metrics.queueHooks })
    opts.metrics.watchQueue?.(this.#queue)
    opts.metrics.maxConcurrent?.(opts.concurrency)
    const onError = (what: string) => (err: Error, phase: string) => opts.log.warn({ informer: what, phase, err: err.message }, 'informer retrying')
    const make = <T extends KubeObject>(apiVersion: string, kind: string, labelSelector: string | undefined, indexes: Record<string, (o: T) => string[]>): InformerSet<T> =>
      new InformerSet(
        (opts.namespaces.length > 0 ? opts.namespaces : [undefined]).map((namespace) => {
          const informer = new Informer<T>(opts.client, {
            apiVersion,
            kind,
            ...(namespace ? { namespace } : {}),
            ...(labelSelector ? { labelSelector } : {}),
            // Pods are many and only their names, labels, deletion, phase, IP and readiness matter: cache just that.
            // Secrets: never their content, only its checksum.
            transform: (o) => (kind === 'Pod' ? podSummary(o) : kind === 'Secret' ? secretSummary(o) : kind === KIND ? memcachedSummary(o) : childSummary(o)) as T,
            onError: onError(kind),
            ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
            ...(kind === KIND ? { resyncPeriodMs: opts.resyncPeriodMs } : {}),
          })
          for (const [name, fn] of Object.entries(indexes)) informer.addIndex(name, fn)
          return informer
        }),
      )
    this.#make = make

    // A shard sees only its Memcacheds, and only their children and pods: those carry their CR's
    // values of the selector's label keys (shard.ts), so the shard's selector selects them too.
    const shardKeys = selectorKeys(opts.selector)
    this.#childSelector = shardSelector(MANAGED_BY_SELECTOR, opts.selector)
    this.#memcacheds = make<MemcachedObject>(API_VERSION, KIND, opts.selector, {
      [UID_INDEX]: (o) => (o.metadata.uid ? [o.metadata.uid] : []),
      [INSTANCE_INDEX]: (o) => [`${o.metadata.namespace ?? ''}/${labelValue(o.metadata.name)}`],
    })
    this.#pods = make('v1', 'Pod', this.#childSelector, {
      [INSTANCE_INDEX]: (o) => {
        const instance = o.metadata.labels?.[INSTANCE_LABEL]
        return instance ? [`${o.metadata.namespace ?? ''}/${instance}`] : []
      },
    })
    // Secrets per namespace, on demand (secret-informers.ts): only where the operator may read them.
    this.#secrets = new SecretInformers({
      namespaces: opts.namespaces,
      make: (namespace) =>
        new Informer<SecretSummary>(opts.client, {
          apiVersion: 'v1',
          kind: 'Secret',
          namespace,
          labelSelector: INPUT_SELECTOR,
          // Never their content, only its checksum.
          transform: secretSummary,
          onError: (err, phase) => {
            this.#secrets.failed(namespace, err)
            onError(`Secret (${namespace})`)(err, phase)
          },
          ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
        }),
      onInformer: (i) => this.#onSecretInformer(i),
    })
    this.#workloadEvents = new InformerSet(
      (opts.namespaces.length > 0 ? opts.namespaces : [undefined]).map((namespace) => {
        const informer = new Informer<FailedCreateEvent>(opts.client, { apiVersion: 'v1', kind: 'Event', ...(namespace ? { namespace } : {}), fieldSelector: FAILED_CREATE_SELECTOR, transform: failedCreateSummary, onError: onError('Event (FailedCreate)'), ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}) })
        informer.addIndex(INVOLVED_UID_INDEX, (e) => (e.involvedObject.uid ? [e.involvedObject.uid] : []))
        return informer
      }),
    )

    const recorder = opts.recorder ?? new ApiEventRecorder(opts.client, this.#aggregator, opts.log)
    const { budget, pacer } = damageGuards(opts, (key) => {
      if (this.#active) this.#queue.add(key, PRIORITY.changed)
    })
    const reloader = new Reloader({ client: opts.client, secrets: this.#secrets, events: recorder, ...(opts.podDialer ? { dial: opts.podDialer } : {}), ...(opts.reloadRetryMs !== undefined ? { retryMs: opts.reloadRetryMs } : {}), ...(opts.reloadSettleMs !== undefined ? { settleMs: opts.reloadSettleMs } : {}), failed: (reason) => opts.metrics.failed(reason) })
    this.#reconciler = new Reconciler({
      client: opts.client,
      chart: opts.chart,
      ...(opts.chartFor ? { chartFor: opts.chartFor } : {}),
      memcacheds: this.#memcacheds,
      children: this.#children,
      shardKeys,
      unserved: this.#unserved,
      pods: this.#pods,
      workloadEvents: this.#workloadEvents,
      secrets: this.#secrets,
      references: this.#references,
      memory: this.#memory,
      events: recorder,
      metrics: opts.metrics,
      pacer,
      budget,
      ...(opts.maxPruneFraction !== undefined ? { maxPruneFraction: opts.maxPruneFraction } : {}),
      platform: () => this.#platform,
      ...(opts.platformOverlays !== undefined ? { platformOverlays: opts.platformOverlays } : {}),
      reloader,
      resizer: new Resizer({ client: opts.client, events: recorder, failed: (reason) => opts.metrics.failed(reason), connectionFor: (cr, plan, pod) => reloader.targetFor(cr.metadata.namespace ?? 'default', plan, pod), ...(opts.reloadRetryMs !== undefined ? { retryMs: opts.reloadRetryMs } : {}) }),
      ...(opts.sustainedFailureMs !== undefined ? { sustainedFailureMs: opts.sustainedFailureMs } : {}),
    })
    this.#wire()
  }

  #enqueue(o: KubeObject, priority: number = PRIORITY.changed): void {
    if (this.#active) this.#queue.add(objectKey(o), priority)
  }

  /** Queues the CR that controls a child. */
  #byOwner(o: KubeObject): void {
    const owner = controllerOf(o)
    if (owner?.kind !== KIND) return
    const owners = this.#memcacheds.byIndex(UID_INDEX, owner.uid)
    for (const cr of owners) this.#enqueue(cr)
    // An object of a deleted CR: a CR re-created under the same name may be waiting for it to go
    // (an ownership conflict), so it is told by name, as controller-runtime's owner handler does.
    const successor = owners.length === 0 ? this.#memcacheds.get(o.metadata.namespace, owner.name) : undefined
    if (successor) this.#enqueue(successor)
  }

  /**
   * The informer of a declared kind (started if the others run): the operator's objects (of the
   * shard), wired to their CRs. Nobody else's objects are listed or watched: an object of a CR's
   * name that this cache does not show is looked for by creating it (reconciler.ts). A reconcile
   * waits until it has synced.
   */
  #addKind(k: ChartKind): void {
    const set = this.#make(k.apiVersion, k.kind, this.#childSelector, { [CONTROLLER_INDEX]: byControllerUid })
    for (const i of set.informers) {
      i.onAdd((o) => this.#byOwner(o))
      i.onUpdate((before, after) => {
        if (before.metadata.resourceVersion !== after.metadata.resourceVersion) this.#byOwner(after)
      })
      i.onDelete((o) => this.#byOwner(o))
      if (this.#started) i.start()
    }
    this.#children.set(kindKey(k), set)
  }

  /** Stops and drops the informer of a declared kind. */
  #removeKind(k: ChartKind): void {
    for (const i of this.#children.get(kindKey(k))?.informers ?? []) i.stop()
    this.#children.delete(kindKey(k))
  }

  /**
   * Asks discovery about the chart's declared kinds that have no informer yet, and gives each its
   * informer: a served namespaced kind, and a kind not optional even when not served (its
   * informer retries until it is, and applying it fails meanwhile, as before kinds were
   * declared). An optional kind not served is left out (kept in #unserved) until a later call
   * finds it served, which queues every Memcached so that its objects are applied. Later calls
   * also ask about the optional kinds that have an informer: one that is no longer served (its
   * CRD uninstalled) loses its informer and is left out again, instead of every CR that renders
   * it failing its apply (and its informer retrying a resource that is gone).
   * @throws ClusterScopedKindError on the first call, when a declared kind is cluster-scoped
   */
  async #discover(first: boolean): Promise<void> {
    const kinds = this.#o.chart().kinds
    this.#o.client.learnKinds(kinds)
    const pending = kinds.filter((k) => !this.#children.has(kindKey(k)))
    const watchedOptional = first ? [] : kinds.filter((k) => k.optional && this.#children.has(kindKey(k)))
    if (pending.length === 0 && watchedOptional.length === 0) return
    let serving: Awaited<ReturnType<typeof discoverKinds>>
    try {
      serving = await discoverKinds(this.#o.client, [...pending, ...watchedOptional])
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      this.#o.log.warn({ err: message }, 'discovery failed; retrying every discovery period')
      // Not knowing is not "not served": the kinds that must be served get their informers now.
      if (first) for (const k of pending) (k.optional ? this.#unserved.set(kindKey(k), `discovery failed: ${message}`) : this.#addKind(k))
      return
    }
    const refused: string[] = []
    let newlyServed = false
    for (const k of pending) {
      const s = serving.get(kindKey(k))
      this.#o.metrics.kindServed?.(kindKey(k), s?.served === true && s.namespaced)
      if (s?.served && !s.namespaced) {
        const why = clusterScoped(k)
        refused.push(why)
        this.#unserved.set(kindKey(k), why)
      } else if (s?.served || !k.optional) {
        this.#addKind(k)
        if (this.#unserved.delete(kindKey(k))) newlyServed = true
        if (s?.served) this.#o.log.info({ kind: kindKey(k) }, 'kind served: watching it')
        else this.#o.log.warn({ kind: kindKey(k), why: s?.why }, 'a declared kind is not served; its informer retries until it is')
      } else {
        if (this.#unserved.get(kindKey(k)) !== s?.why) this.#o.log.info({ kind: kindKey(k), why: s?.why }, 'optional kind not served: its objects are left out')
        this.#unserved.set(kindKey(k), s?.why ?? 'not served')
      }
    }
    let noLongerServed = false
    for (const k of watchedOptional) {
      const s = serving.get(kindKey(k))
      if (s?.served && s.namespaced) continue
      // Left out first, so that a reconcile from now on does not apply it; then its informer goes.
      const why = s?.served ? clusterScoped(k) : s?.why ?? 'not served'
      this.#unserved.set(kindKey(k), why)
      this.#removeKind(k)
      this.#o.metrics.kindServed?.(kindKey(k), false)
      this.#o.log.warn({ kind: kindKey(k), why }, 'optional kind no longer served: its informer is stopped and its objects are left out')
      noLongerServed = true
    }
    if (refused.length > 0) {
      if (first) throw new ClusterScopedKindError(refused.join('; '))
      this.#o.log.error({ refused }, 'declared kinds refused')
    }
    if (newlyServed || noLongerServed) this.#queueAll()
  }

  /** One discovery round at a time; `thenQueueAll` re-queues every Memcached after it (even when it failed). */
  #rediscover(thenQueueAll = false): void {
    if (this.#discovering) {
      if (thenQueueAll) void this.#discovering.then(() => this.enqueueAll())
      return
    }
    this.#discovering = this.#discover(false)
      .catch((err: unknown) => this.#o.log.error({ err }, 'discovery round failed'))
      .finally(() => {
        this.#discovering = undefined
        if (thenQueueAll) this.#queueAll()
      })
  }

  /** Maps every event to the key of the CR it concerns. */
  #wire(): void {
    const enqueue = (o: KubeObject): void => this.#enqueue(o)
    for (const i of this.#memcacheds.informers) {
      i.onAdd(enqueue)
      i.onUpdate((before, after) => {
        this.#reconciler.observed(after)
        // A resync is reconciled too (drift no event announced), after the changes.
        const priority = updatePriority(before, after)
        if (priority !== undefined) this.#enqueue(after, priority)
      })
      i.onDelete((cr) => {
        this.#references.forget(objectKey(cr))
        if (cr.metadata.uid) {
          this.#memory.forgetOwner(cr.metadata.uid)
          this.#reconciler.forget(cr.metadata.uid)
          this.#aggregator.forgetObject(cr.metadata.uid)
        }
      })
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
        // status.nodes lists pods that exist and are not terminating or finished; a Deployment's
        // status.serverList the ready pods' IPs.
        if (before.metadata.deletionTimestamp !== after.metadata.deletionTimestamp || podStatusKey(before) !== podStatusKey(after)) byInstance(after)
      })
    }
    // A StatefulSet that cannot create a pod says so only in an Event: its CR's Degraded says why.
    const byStatefulSet = (e: FailedCreateEvent): void => {
      const set = this.#children.get('apps/v1/StatefulSet')?.get(e.metadata.namespace, e.involvedObject.name)
      if (set && set.metadata.uid === e.involvedObject.uid) this.#byOwner(set)
    }
    for (const i of this.#workloadEvents.informers) {
      i.onAdd(byStatefulSet)
      i.onUpdate((before, after) => {
        if (before.message !== after.message || before.lastSeen !== after.lastSeen) byStatefulSet(after)
      })
    }
    // A Secret that appears (created, or labelled), changes content or goes (deleted, or its label
    // removed) re-renders exactly the CRs whose last render referred to it.
    const byReference = (secret: KubeObject): void => {
      if (!this.#active) return
      for (const key of this.#references.referrers(objectKey(secret))) this.#queue.add(key, PRIORITY.changed)
    }
    this.#byReference = byReference
  }

  #byReference: ((secret: KubeObject) => void) | undefined

  /** A Secret informer's handlers (those made on demand get them as they are made). */
  #onSecretInformer(i: Informer<SecretSummary>): void {
    const byReference = (secret: KubeObject) => this.#byReference?.(secret)
    i.onAdd(byReference)
    i.onDelete(byReference)
    i.onUpdate((before, after) => {
      if (before.checksum !== after.checksum) byReference(after)
    })
  }

  #all(): InformerSet[] {
    return [this.#memcacheds as unknown as InformerSet, ...this.#children.values(), this.#pods, this.#secrets as unknown as InformerSet, this.#workloadEvents as unknown as InformerSet]
  }

  /** What the child and pod caches hold, as `Kind namespace/name` (for diagnostics). */
  cachedObjects(): string[] {
    return [...this.#children.values(), this.#pods].flatMap((set) => set.list().map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`))
  }

  /** The Memcacheds as cached (memcachedSummary: with the owners of spec.chartRevision), for the rollout. */
  memcacheds(): MemcachedObject[] {
    return this.#memcacheds.list()
  }

  /** Calls `fn` at every change the Memcached cache sees (created, updated, its status among them, deleted): the rollout's kick. */
  onMemcachedChange(fn: () => void): void {
    for (const i of this.#memcacheds.informers) {
      i.onAdd(() => fn())
      i.onUpdate(() => fn())
      i.onDelete(() => fn())
    }
  }

  /** What the Secret cache holds: metadata and checksums (for diagnostics; never a Secret's content). */
  cachedSecrets(): SecretSummary[] {
    return this.#secrets.list()
  }

  /**
   * Asks discovery about the chart's kinds, starts every informer and resolves when all caches
   * have synced; then asks discovery again every discovery period about declared kinds without
   * an informer. @throws ClusterScopedKindError when the chart declares a cluster-scoped kind
   */
  async start(): Promise<void> {
    this.#platform = this.#o.platform ?? (await detectPlatform(this.#o.client).catch((err: unknown) => {
      this.#o.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'platform discovery failed: rendering for kubernetes (set --platform)')
      return 'kubernetes' as const
    }))
    this.#o.log.info({ platform: this.#platform, ...(this.#o.platform ? {} : { by: 'discovery' }) }, 'platform')
    await this.#discover(true)
    // Stopped while discovery waited (for the rate limiter, say): no informer is started after.
    if (this.#stopped) return
    this.#started = true
    const informers = this.#all().flatMap((s) => s.informers)
    for (const i of informers) i.start()
    this.#secrets.start()
    this.#discoveryTimer = setInterval(() => this.#rediscover(), this.#o.discoveryPeriodMs ?? DISCOVERY_PERIOD_MS)
    this.#discoveryTimer.unref()
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

  /**
   * Re-queues every Memcached (after a chart change); nothing while the workers do not run. A
   * reloaded chart that declares kinds discovery has not seen yet is given its informers first.
   */
  enqueueAll(): void {
    if (!this.#active) return
    const kinds = this.#o.chart().kinds
    if (this.#started && kinds.some((k) => !this.#children.has(kindKey(k)) && !this.#unserved.has(kindKey(k)))) {
      this.#rediscover(true)
      return
    }
    this.#queueAll()
  }

  #queueAll(): void {
    if (!this.#active) return
    for (const cr of this.#memcacheds.list()) this.#queue.add(objectKey(cr), PRIORITY.resync)
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
      this.#o.metrics.activeWorkers?.(1)
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
        this.#o.metrics.activeWorkers?.(-1)
        this.#queue.done(key)
      }
    }
  }

  /** Stops taking work, waits for in-flight reconciles, stops the informers. */
  async stop(): Promise<void> {
    this.#stopped = true
    clearInterval(this.#discoveryTimer)
    await this.#discovering
    this.#queue.shutdown()
    await this.#queue.drain()
    await Promise.all(this.#workers)
    for (const s of this.#all()) for (const i of s.informers) i.stop()
    this.#secrets.stop()
  }
}
