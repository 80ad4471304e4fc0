/**
 * An informer: a list+watch cache of one resource (one namespace or all, optionally
 * label-filtered) with event handlers and indexes, in the manner of client-go's
 * reflector + DeltaFIFO + indexer, reduced to what a controller needs.
 *
 * It lists, then watches from the list's resourceVersion with bookmarks. A watch that ends
 * normally is resumed from the last resourceVersion seen; a 410 Expired relists, and the new list
 * is diffed against the cache (deletes, updates, adds — never a second ADDED for an object already
 * known), as client-go's `Replace` does. Any other failure — an error status, an ERROR event, a
 * dropped or stalled connection, a failed list — is retried with capped, jittered exponential
 * backoff; client-node's informer stops for good there instead (kubernetes-client/javascript#596,
 * #958, #1496).
 *
 * Lists follow client-go's reflector with its WatchListClient feature (tools/cache/reflector.go
 * `watchList`): the first list and every relist is a watch-list (`sendInitialEvents=true`,
 * `resourceVersionMatch=NotOlderThan`, from the last resourceVersion seen, or none at first), whose
 * initial ADDED events are transformed one by one as they stream and loaded at the BOOKMARK
 * annotated `k8s.io/initial-events-end`; the same stream then goes on as the watch. So a kind is
 * never one answer, however large (a `resourceVersion=0` list is: the watch cache ignores `limit`).
 * When the server has the resourceVersion no longer (410) or not yet (504 "Too large resource
 * version"), the watch-list is repeated at once without one. A server that refuses watch-lists
 * (400/422: older, or its WatchList feature off) is listed consistently in pages of 500 from then
 * on, which it paginates; any other failure of a watch-list falls back to that paginated list
 * once, as client-go does ("making progress is better than deadlocking").
 *
 * A watch is given up as a dead connection only after `timeoutSeconds` + 30 s without a byte: a
 * real server sends nothing at all, not even a bookmark, on a type nobody writes (apiserver
 * `pkg/storage/cacher/cache_watcher.go`), and ends the watch itself at its timeout — an expected
 * end that is resumed at once and not reported.
 */
import { Backoff, realClock, type BackoffOptions, type Clock, type TimerHandle } from './clock.ts'
import { ApiError, isExpired, isTooLargeResourceVersion, type KubeClient, type KubeObject, type WatchEvent } from './client.ts'

/** `namespace/name`, or `name` for a cluster-scoped object: the key of the cache and of work queues. */
export function objectKey(obj: { metadata: { name?: string; namespace?: string } }): string {
  const name = obj.metadata.name ?? ''
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${name}` : name
}

/** Splits a key of {@link objectKey} back into namespace and name. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/')
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) }
}

/** A function from an object to its index values (e.g. its controller owner's uid). */
export type IndexFunc<T extends KubeObject> = (obj: T) => string[]

/** Index values: the uid of the object's controller ownerReference (none when it has none). */
export function byControllerUid(obj: KubeObject): string[] {
  const ref = obj.metadata.ownerReferences?.find((r) => r.controller === true)
  return ref ? [ref.uid] : []
}

/** Index values: the value of one label (none when the label is absent). */
export function byLabel(label: string): (obj: KubeObject) => string[] {
  return (obj) => {
    const v = obj.metadata.labels?.[label]
    return v === undefined ? [] : [v]
  }
}

/** A transform that drops `metadata.managedFields`, usually the largest part of a cached object. */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata.managedFields === undefined) return obj
  const { managedFields: _dropped, ...metadata } = obj.metadata
  return { ...obj, metadata }
}

/** The annotation of the BOOKMARK that ends a watch-list's initial events (apimachinery `metav1.InitialEventsAnnotationKey`). */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end'

/** Where a failure happened. */
export type InformerPhase = 'list' | 'watch' | 'handler'

/** Options of {@link Informer}. */
export interface InformerOptions<T extends KubeObject> {
  apiVersion: string
  kind: string
  /** Omit for all namespaces. */
  namespace?: string
  labelSelector?: string
  fieldSelector?: string
  /** Every this many ms, `onUpdate(obj, obj)` is called for every cached object (0 or unset: never). */
  resyncPeriodMs?: number
  /** Retry of failed lists and watches (default 800 ms doubling to 30 s with 50% jitter, as client-go's reflector). */
  backoff?: BackoffOptions
  /** Server-side timeout of each watch (default 300–600 s at random, as client-go). */
  watchTimeoutSeconds?: number
  /**
   * A watch silent this long (no event, no bookmark) is ended and replaced as a dead connection
   * (default: its `timeoutSeconds` + 30 s, so that a healthy quiet watch is ended by the server first).
   */
  watchIdleTimeoutMs?: number
  /** Start and relist with streaming watch-lists (default true); false lists in pages. */
  watchList?: boolean
  /** Applied to every object before it is cached and handed to handlers (e.g. {@link stripManagedFields}). */
  transform?: (obj: KubeObject) => T
  /** Told about every failure that is being retried, and handler exceptions. */
  onError?: (err: Error, phase: InformerPhase) => void
  clock?: Clock
  random?: () => number
}

type AddHandler<T> = (obj: T) => void
type UpdateHandler<T> = (oldObj: T, newObj: T) => void
type DeleteHandler<T> = (obj: T) => void

/** A list+watch cache of one resource. */
export class Informer<T extends KubeObject = KubeObject> {
  #client: KubeClient
  #opts: InformerOptions<T>
  #clock: Clock
  #random: () => number
  #backoff: Backoff
  #store = new Map<string, T>()
  #indexFuncs = new Map<string, IndexFunc<T>>()
  /**
   * index name → value → keys. What an object is filed under is computed again from the cached
   * object when it leaves, as client-go's indexer does (index functions are pure): no second map
   * per cached object.
   */
  #indexes = new Map<string, Map<string, Set<string>>>()
  #onAdd: AddHandler<T>[] = []
  #onUpdate: UpdateHandler<T>[] = []
  #onDelete: DeleteHandler<T>[] = []
  #resourceVersion = ''
  /** The last list failed because the server lacks the resourceVersion asked for: list from etcd. */
  #resourceVersionUnavailable = false
  /** The server refused a watch-list: lists come in pages. */
  #watchListUnsupported = false
  #synced = false
  #syncWaiters: ((synced: boolean) => void)[] = []
  #started = false
  #stopped = false
  /** Bumped for every list or watch started; stale callbacks compare and bail out. */
  #generation = 0
  #stopWatch: (() => void) | undefined
  #listAbort: AbortController | undefined
  #retryTimer: TimerHandle | undefined
  #resyncTimer: TimerHandle | undefined
  #progressAt = 0

  constructor(client: KubeClient, opts: InformerOptions<T>) {
    this.#client = client
    this.#opts = opts
    this.#clock = opts.clock ?? realClock
    this.#progressAt = this.#clock.now()
    this.#random = opts.random ?? Math.random
    this.#backoff = new Backoff(opts.backoff ?? { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0.5 }, this.#random)
  }

  /** `apiVersion`/`kind` of the cached resource. */
  get resource(): { apiVersion: string; kind: string } {
    return { apiVersion: this.#opts.apiVersion, kind: this.#opts.kind }
  }

  /** Registers a handler for objects that appear (first list, watch ADDED, relist). */
  onAdd(fn: AddHandler<T>): this {
    this.#onAdd.push(fn)
    return this
  }

  /** Registers a handler for changed objects; on a periodic resync `oldObj === newObj`. */
  onUpdate(fn: UpdateHandler<T>): this {
    this.#onUpdate.push(fn)
    return this
  }

  /** Registers a handler for objects that disappear (watch DELETED, or missing from a relist), with their last known state. */
  onDelete(fn: DeleteHandler<T>): this {
    this.#onDelete.push(fn)
    return this
  }

  /** Adds a named index; objects already cached are indexed at once. */
  addIndex(name: string, fn: IndexFunc<T>): this {
    this.#indexFuncs.set(name, fn)
    this.#indexes.set(name, new Map())
    for (const [key, obj] of this.#store) this.#indexOne(key, obj, name, fn)
    return this
  }

  /** Cached objects filed under `value` in index `name`. @throws Error for an unknown index */
  byIndex(name: string, value: string): T[] {
    const index = this.#indexes.get(name)
    if (!index) throw new Error(`no index ${JSON.stringify(name)}`)
    const out: T[] = []
    for (const key of index.get(value) ?? []) {
      const obj = this.#store.get(key)
      if (obj) out.push(obj)
    }
    return out
  }

  /** Whether the first list has been loaded into the cache. */
  hasSynced(): boolean {
    return this.#synced
  }

  /** Resolves true once synced, or false if the informer is stopped first. */
  waitForSync(): Promise<boolean> {
    if (this.#synced) return Promise.resolve(true)
    if (this.#stopped) return Promise.resolve(false)
    return new Promise((resolve) => this.#syncWaiters.push(resolve))
  }

  /** The resourceVersion the cache is at (the last list, event or bookmark). */
  get resourceVersion(): string {
    return this.#resourceVersion
  }

  /** A cached object; pass `undefined` as namespace for cluster-scoped kinds. */
  get(namespace: string | undefined, name: string): T | undefined {
    return this.#store.get(namespace ? `${namespace}/${name}` : name)
  }

  /** Cached objects, of one namespace or of all. */
  list(namespace?: string): T[] {
    const all = [...this.#store.values()]
    return namespace === undefined ? all : all.filter((o) => o.metadata.namespace === namespace)
  }

  /** Cached keys (`namespace/name`). */
  keys(): string[] {
    return [...this.#store.keys()]
  }

  /** Starts listing and watching (idempotent); handlers registered before start see every object. */
  start(): void {
    if (this.#started || this.#stopped) return
    this.#started = true
    this.#progressAt = this.#clock.now()
    this.#list()
    const period = this.#opts.resyncPeriodMs ?? 0
    if (period > 0) this.#scheduleResync(period)
  }

  /**
   * When the informer last made progress: started, finished a list, (re)started a watch, or got a
   * watch event or bookmark. A stale value means a wedged cache (the liveness probe's concern).
   */
  lastProgress(): number {
    return this.#progressAt
  }

  /** `Kind` and namespace, for messages. */
  describe(): string {
    return `${this.#opts.kind}${this.#opts.namespace ? ` in ${this.#opts.namespace}` : ''}`
  }

  /** Stops watching, cancels timers and in-flight requests; the cache stays readable. */
  stop(): void {
    if (this.#stopped) return
    this.#stopped = true
    this.#generation++
    this.#stopWatch?.()
    this.#stopWatch = undefined
    this.#listAbort?.abort()
    this.#listAbort = undefined
    if (this.#retryTimer !== undefined) this.#clock.clearTimeout(this.#retryTimer)
    if (this.#resyncTimer !== undefined) this.#clock.clearTimeout(this.#resyncTimer)
    const waiters = this.#syncWaiters
    this.#syncWaiters = []
    for (const w of waiters) w(false)
  }

  #scheduleResync(period: number): void {
    this.#resyncTimer = this.#clock.setTimeout(() => {
      if (this.#stopped) return
      if (this.#synced) for (const obj of [...this.#store.values()]) this.#emitUpdate(obj, obj)
      this.#scheduleResync(period)
    }, period)
  }

  #report(err: unknown, phase: InformerPhase): void {
    const e = err instanceof Error ? err : new Error(String(err))
    try {
      this.#opts.onError?.(e, phase)
    } catch {
      // A failing error reporter must not stop the informer.
    }
  }

  #retry(what: 'list' | 'watch', immediate: boolean): void {
    const delay = this.#backoff.next()
    const gen = ++this.#generation
    this.#retryTimer = this.#clock.setTimeout(() => {
      if (gen !== this.#generation || this.#stopped) return
      if (what === 'list') this.#list()
      else this.#watch(false)
    }, immediate ? 0 : delay)
  }

  #list(): void {
    if (this.#opts.watchList !== false && !this.#watchListUnsupported) this.#watch(true)
    else this.#pagedList()
  }

  /** A consistent list (from etcd on a real server) in pages of 500, each item transformed as its page arrives. */
  #pagedList(): void {
    const gen = ++this.#generation
    const abort = new AbortController()
    this.#listAbort = abort
    const o = this.#opts
    this.#client
      .list({ apiVersion: o.apiVersion, kind: o.kind }, { namespace: o.namespace, labelSelector: o.labelSelector, fieldSelector: o.fieldSelector, limit: 500, signal: abort.signal, transform: (i) => this.#transform(i) })
      .then(
        (list) => {
          if (gen !== this.#generation || this.#stopped) return
          this.#listAbort = undefined
          this.#loaded(list.items as T[], list.metadata.resourceVersion)
          this.#watch(false)
        },
        (err: unknown) => {
          if (gen !== this.#generation || this.#stopped) return
          this.#listAbort = undefined
          this.#report(err, 'list')
          this.#retry('list', false)
        },
      )
  }

  /** A full state has arrived (a list, or a watch-list's initial events): the cache becomes it. */
  #loaded(items: T[], resourceVersion: string): void {
    this.#resourceVersionUnavailable = false
    this.#progressAt = this.#clock.now()
    this.#replace(items, resourceVersion)
    if (!this.#synced) {
      this.#synced = true
      const waiters = this.#syncWaiters
      this.#syncWaiters = []
      for (const w of waiters) w(true)
    }
  }

  /** A watch-list ended before its initial-events-end bookmark. */
  #watchListFailed(err: Error | undefined, expired: boolean): void {
    if (expired || isExpired(err) || isTooLargeResourceVersion(err)) {
      // The server lacks the resourceVersion asked for: at once without one, then with backoff.
      const first = !this.#resourceVersionUnavailable
      this.#resourceVersionUnavailable = true
      this.#retry('list', first)
      return
    }
    if (err instanceof ApiError && (err.status === 400 || err.status === 422)) this.#watchListUnsupported = true
    else this.#report(err ?? new Error(`the watch-list of ${this.describe()} ended before its initial-events-end bookmark`), 'list')
    this.#pagedList()
  }

  /**
   * Watches from the cache's resourceVersion, or (`listing`) runs a watch-list: the current state
   * as ADDED events up to the initial-events-end bookmark, then changes on the same stream.
   */
  #watch(listing: boolean): void {
    const gen = ++this.#generation
    const o = this.#opts
    const started = this.#clock.now()
    this.#progressAt = started
    let received = 0
    let expired = false
    let failure: Error | undefined
    // A watch-list's objects until its initial-events-end bookmark, each transformed as it arrives.
    let initial: Map<string, T> | undefined = listing ? new Map() : undefined
    const timeoutSeconds = o.watchTimeoutSeconds ?? Math.floor(300 + 300 * this.#random())
    const rv = listing && this.#resourceVersionUnavailable ? '' : this.#resourceVersion
    const opts = {
      namespace: o.namespace,
      labelSelector: o.labelSelector,
      fieldSelector: o.fieldSelector,
      ...(rv === '' ? {} : { resourceVersion: rv }),
      ...(listing ? { sendInitialEvents: true } : {}),
      allowWatchBookmarks: true,
      timeoutSeconds,
      idleTimeoutMs: o.watchIdleTimeoutMs ?? (timeoutSeconds + 30) * 1000,
    }
    this.#stopWatch = this.#client.watch(
      { apiVersion: o.apiVersion, kind: o.kind },
      opts,
      (event) => {
        if (gen !== this.#generation || this.#stopped || expired || failure) return
        this.#progressAt = this.#clock.now()
        if (event.type === 'ERROR') {
          const status = event.object as unknown as { code?: number; reason?: string; message?: string }
          const err = new ApiError(status.code ?? 500, status.reason ?? '', status.message ?? 'watch ERROR event')
          if (isExpired(err)) expired = true
          else failure = err
          return
        }
        received++
        if (initial) {
          if (event.type === 'BOOKMARK') {
            if (event.object.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') return
            const items = [...initial.values()]
            initial = undefined
            this.#backoff.reset()
            this.#loaded(items, event.object.metadata.resourceVersion ?? this.#resourceVersion)
            return
          }
          const obj = this.#transform(this.#withKind(event.object))
          if (event.type === 'DELETED') initial.delete(objectKey(obj))
          else initial.set(objectKey(obj), obj)
          return
        }
        // Progress on this connection: the next failure starts the backoff over.
        this.#backoff.reset()
        this.#apply(event)
      },
      (err) => {
        if (gen !== this.#generation || this.#stopped) return
        this.#stopWatch = undefined
        if (initial) {
          this.#watchListFailed(failure ?? err, expired)
          return
        }
        // A watch that stayed up a long time was healthy: its failure starts the backoff over.
        if (this.#clock.now() - started >= 60_000) this.#backoff.reset()
        if (expired || isExpired(err)) {
          // Relist at once the first time; a server that expires every resume gets backoff.
          this.#retry('list', this.#backoff.attempts === 0)
          return
        }
        const cause = failure ?? err
        if (cause) {
          this.#report(cause, 'watch')
          this.#retry('watch', false)
          return
        }
        // The server ended the watch (its timeout): resume from where we are, unreported. A watch
        // that ended at once with nothing in it is treated as a failure, so a misbehaving server
        // is not hammered.
        const quick = received === 0 && this.#clock.now() - started < 1000
        this.#retry('watch', !quick)
      },
    )
  }

  #withKind(obj: KubeObject): KubeObject {
    return obj.apiVersion !== undefined && obj.kind !== undefined ? obj : { ...obj, apiVersion: obj.apiVersion ?? this.#opts.apiVersion, kind: obj.kind ?? this.#opts.kind }
  }

  #transform(obj: KubeObject): T {
    const fn = this.#opts.transform
    if (!fn) return obj as T
    try {
      return fn(obj)
    } catch (e) {
      // Caching the object untransformed beats losing its event.
      this.#report(e, 'handler')
      return obj as T
    }
  }

  #apply(event: WatchEvent): void {
    const rv = event.object.metadata?.resourceVersion
    if (event.type === 'BOOKMARK') {
      if (rv) this.#resourceVersion = rv
      return
    }
    const obj = this.#transform(this.#withKind(event.object))
    const key = objectKey(obj)
    if (rv) this.#resourceVersion = rv
    const old = this.#store.get(key)
    if (event.type === 'DELETED') {
      if (!old) return
      this.#remove(key)
      this.#emitDelete(obj)
      return
    }
    this.#put(key, obj)
    if (!old) this.#emitAdd(obj)
    else if (old.metadata.uid !== undefined && obj.metadata.uid !== undefined && old.metadata.uid !== obj.metadata.uid) {
      // A delete and re-create that the watch folded together.
      this.#emitDelete(old)
      this.#emitAdd(obj)
    } else this.#emitUpdate(old, obj)
  }

  /** Loads a fresh list: deletes for what vanished, updates for what changed, adds for what is new. */
  #replace(items: T[], resourceVersion: string): void {
    const fresh = new Map<string, T>()
    for (const item of items) fresh.set(objectKey(item), item)
    for (const [key, old] of [...this.#store]) {
      const now = fresh.get(key)
      if (!now || (old.metadata.uid !== undefined && now.metadata.uid !== undefined && now.metadata.uid !== old.metadata.uid)) {
        this.#remove(key)
        this.#emitDelete(old)
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.#store.get(key)
      this.#put(key, obj)
      if (!old) this.#emitAdd(obj)
      else if (old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.#emitUpdate(old, obj)
    }
    this.#resourceVersion = resourceVersion
  }

  #put(key: string, obj: T): void {
    this.#unindex(key)
    this.#store.set(key, obj)
    for (const [name, fn] of this.#indexFuncs) this.#indexOne(key, obj, name, fn)
  }

  #remove(key: string): void {
    this.#unindex(key)
    this.#store.delete(key)
  }

  #indexValues(obj: T, fn: IndexFunc<T>, report: boolean): string[] {
    try {
      return fn(obj)
    } catch (e) {
      if (report) this.#report(e, 'handler')
      return []
    }
  }

  #indexOne(key: string, obj: T, name: string, fn: IndexFunc<T>): void {
    const index = this.#indexes.get(name)
    if (!index) return
    for (const v of this.#indexValues(obj, fn, true)) {
      let keys = index.get(v)
      if (!keys) index.set(v, (keys = new Set()))
      keys.add(key)
    }
  }

  /** Takes the cached object of `key` out of every index (before it is replaced or removed). */
  #unindex(key: string): void {
    const old = this.#store.get(key)
    if (old === undefined) return
    for (const [name, fn] of this.#indexFuncs) {
      const index = this.#indexes.get(name)
      for (const v of this.#indexValues(old, fn, false)) {
        const keys = index?.get(v)
        keys?.delete(key)
        if (keys && keys.size === 0) index?.delete(v)
      }
    }
  }

  #emitAdd(obj: T): void {
    for (const fn of this.#onAdd) this.#call(() => fn(obj))
  }

  #emitUpdate(oldObj: T, newObj: T): void {
    for (const fn of this.#onUpdate) this.#call(() => fn(oldObj, newObj))
  }

  #emitDelete(obj: T): void {
    for (const fn of this.#onDelete) this.#call(() => fn(obj))
  }

  #call(fn: () => void): void {
    try {
      fn()
    } catch (e) {
      this.#report(e, 'handler')
    }
  }
}
