/**
 * client-go's two building blocks for controllers, reduced to what the simulated
 * kube-controller-manager needs: an informer (list, then watch from the list's resourceVersion;
 * a local cache indexed by owner uid; relist when the watch reports an error) and a work queue
 * (a key is queued once however often it is added, processed by one worker at a time, retried
 * with exponential backoff when its sync fails).
 */
import type { KubeObject, WatchEvent } from '../types.ts'
import type { Client, GVR } from './client.ts'

/** What happened to a cached object. */
export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED'
/** An informer's event callback. */
export type Handler = (type: EventType, obj: KubeObject) => void

/** `namespace/name` (or `name` for cluster-scoped objects). */
export function keyOf(obj: KubeObject): string {
  return obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name ?? ''}` : obj.metadata.name ?? ''
}

/** Splits a key back into namespace and name. */
export function splitKey(key: string): { namespace: string | undefined; name: string } {
  const i = key.indexOf('/')
  return i < 0 ? { namespace: undefined, name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) }
}

function rvNumber(obj: KubeObject): number {
  const n = Number(obj.metadata.resourceVersion)
  return Number.isFinite(n) ? n : 0
}

/** A list+watch cache of one resource across all namespaces. */
export class Informer {
  readonly gvr: GVR
  #client: Client
  #transform: (obj: KubeObject) => KubeObject
  #store = new Map<string, KubeObject>()
  /** owner uid → keys of objects that name it in ownerReferences */
  #byOwner = new Map<string, Set<string>>()
  /** namespace → keys of its objects, when the informer was asked to index them */
  #byNamespace: Map<string, Set<string>> | undefined
  /** `namespace\nkey=value` → keys of the objects with that label, when asked to index them */
  #byLabel: Map<string, Set<string>> | undefined
  #handlers: Handler[] = []
  #stopWatch: (() => void) | undefined
  #watchGen = 0
  #resourceVersion = '0'
  #timer: NodeJS.Timeout | undefined
  #stopped = false
  #synced = false

  /**
   * @param transform reduces each object before caching (e.g. to its metadata, to keep the
   *   garbage collector's cache small)
   * @param opts.byNamespace index objects by namespace, for {@link inNamespace}
   * @param opts.byLabel index objects by label, for {@link withLabel}
   */
  constructor(client: Client, gvr: GVR, transform: (obj: KubeObject) => KubeObject = (o) => o, opts: { byNamespace?: boolean; byLabel?: boolean } = {}) {
    this.#client = client
    this.gvr = gvr
    this.#transform = transform
    if (opts.byNamespace) this.#byNamespace = new Map()
    if (opts.byLabel) this.#byLabel = new Map()
  }

  /**
   * Cached objects of one namespace carrying at least the rarest of the labels `required` (the
   * informer must index labels; the caller checks the others). Without any required label: the
   * namespace's objects.
   */
  withLabels(namespace: string, required: Record<string, string>): KubeObject[] {
    let keys: Set<string> | undefined
    let any = false
    for (const [k, v] of Object.entries(required)) {
      any = true
      const set = this.#byLabel?.get(`${namespace}\n${k}=${v}`)
      if (!set) return []
      if (!keys || set.size < keys.size) keys = set
    }
    if (!any) return this.inNamespace(namespace)
    return this.#objects(keys)
  }

  /** Cached objects of one namespace (the informer must index namespaces). */
  inNamespace(namespace: string): KubeObject[] {
    return this.#objects(this.#byNamespace?.get(namespace))
  }

  /** The cached objects of a set of keys. */
  #objects(keys: Set<string> | undefined): KubeObject[] {
    const out: KubeObject[] = []
    for (const k of keys ?? []) {
      const o = this.#store.get(k)
      if (o) out.push(o)
    }
    return out
  }

  /** Registers an event handler (call before start). */
  on(handler: Handler): void {
    this.#handlers.push(handler)
  }

  /** True once the first list has been delivered. */
  get synced(): boolean {
    return this.#synced
  }

  /** Lists, then watches; resolves after the first list (or stop). Retries failed lists. */
  async start(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#relist()
        this.#synced = true
        return
      } catch {
        await new Promise<void>((resolve) => {
          this.#timer = setTimeout(() => {
            this.#timer = undefined
            resolve()
          }, 200)
        })
      }
    }
  }

  /** Stops the watch and any pending relist. */
  stop(): void {
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = undefined
    this.#endWatch()
  }

  #endWatch(): void {
    this.#watchGen++
    this.#stopWatch?.()
    this.#stopWatch = undefined
  }

  /** The cached object under `key`. */
  get(key: string): KubeObject | undefined {
    return this.#store.get(key)
  }

  /** Every cached object. */
  list(): IterableIterator<KubeObject> {
    return this.#store.values()
  }

  /** Cached objects whose ownerReferences name `uid`. */
  dependentsOf(uid: string): KubeObject[] {
    const keys = this.#byOwner.get(uid)
    if (!keys) return []
    const out: KubeObject[] = []
    for (const k of keys) {
      const o = this.#store.get(k)
      if (o) out.push(o)
    }
    return out
  }

  async #relist(): Promise<void> {
    this.#endWatch()
    const { items, resourceVersion } = await this.#client.list(this.gvr)
    if (this.#stopped) return
    const seen = new Set<string>()
    for (const raw of items) {
      const obj = this.#transform(raw)
      const key = keyOf(obj)
      seen.add(key)
      const old = this.#store.get(key)
      if (!old || old.metadata.resourceVersion !== obj.metadata.resourceVersion) this.#put(old ? 'MODIFIED' : 'ADDED', obj)
    }
    for (const [key, old] of [...this.#store]) if (!seen.has(key)) this.#remove(key, old)
    this.#resourceVersion = resourceVersion
    // A watch the server ends (timeout, 410) is replaced by a fresh list and watch.
    // Events of a watch already replaced (or stopped) are dropped: only the current one counts.
    const gen = ++this.#watchGen
    this.#stopWatch = this.#client.watch(this.gvr, resourceVersion, (e) => {
      if (gen === this.#watchGen) this.#onEvent(e)
    }, () => {
      if (gen === this.#watchGen) this.#scheduleRelist()
    })
  }

  #scheduleRelist(): void {
    if (this.#stopped || this.#timer) return
    this.#endWatch()
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.#relist().catch(() => this.#scheduleRelist())
    }, 100)
  }

  #onEvent(e: WatchEvent): void {
    if (this.#stopped) return
    if (e.type === 'ERROR') {
      // 410 Expired or a broken stream: start over from a fresh list, like a reflector.
      this.#scheduleRelist()
      return
    }
    const raw = e.object as KubeObject
    if (e.type === 'BOOKMARK') {
      this.#resourceVersion = raw.metadata?.resourceVersion ?? this.#resourceVersion
      return
    }
    const obj = this.#transform(raw)
    const key = keyOf(obj)
    const old = this.#store.get(key)
    if (e.type === 'DELETED') {
      if (old) this.#remove(key, old, obj)
    } else if (!old || rvNumber(obj) >= rvNumber(old)) {
      this.#put(old ? 'MODIFIED' : 'ADDED', obj)
    }
  }

  #put(type: EventType, obj: KubeObject): void {
    const key = keyOf(obj)
    const old = this.#store.get(key)
    this.#store.set(key, obj)
    // Most changes (status above all) leave the indexed labels and owners as they were.
    if (old && sameIndexKeys(old, obj)) {
      this.#emit(type, obj)
      return
    }
    if (old) this.#unindex(key, old)
    if (this.#byNamespace) {
      const ns = obj.metadata.namespace ?? ''
      let set = this.#byNamespace.get(ns)
      if (!set) this.#byNamespace.set(ns, (set = new Set()))
      set.add(key)
    }
    if (this.#byLabel) {
      for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
        const lk = `${obj.metadata.namespace ?? ''}\n${k}=${v}`
        let set = this.#byLabel.get(lk)
        if (!set) this.#byLabel.set(lk, (set = new Set()))
        set.add(key)
      }
    }
    for (const ref of obj.metadata.ownerReferences ?? []) {
      let set = this.#byOwner.get(ref.uid)
      if (!set) this.#byOwner.set(ref.uid, (set = new Set()))
      set.add(key)
    }
    this.#emit(type, obj)
  }

  #remove(key: string, old: KubeObject, last: KubeObject = old): void {
    this.#unindex(key, old)
    this.#store.delete(key)
    this.#emit('DELETED', last)
  }

  #unindex(key: string, old: KubeObject): void {
    const nsKeys = this.#byNamespace?.get(old.metadata.namespace ?? '')
    if (nsKeys) {
      nsKeys.delete(key)
      if (nsKeys.size === 0) this.#byNamespace?.delete(old.metadata.namespace ?? '')
    }
    if (this.#byLabel) {
      for (const [k, v] of Object.entries(old.metadata.labels ?? {})) {
        const lk = `${old.metadata.namespace ?? ''}\n${k}=${v}`
        const set = this.#byLabel.get(lk)
        set?.delete(key)
        if (set?.size === 0) this.#byLabel.delete(lk)
      }
    }
    for (const ref of old.metadata.ownerReferences ?? []) {
      const set = this.#byOwner.get(ref.uid)
      if (!set) continue
      set.delete(key)
      if (set.size === 0) this.#byOwner.delete(ref.uid)
    }
  }

  #emit(type: EventType, obj: KubeObject): void {
    for (const h of this.#handlers) {
      try {
        h(type, obj)
      } catch {
        // A handler's bug must not stop the informer; the periodic resync retries its work.
      }
    }
  }
}

/** Whether two versions of an object (same key) have the same labels and owner uids, all that the indexes hold. */
function sameIndexKeys(a: KubeObject, b: KubeObject): boolean {
  const la = a.metadata.labels ?? {}
  const lb = b.metadata.labels ?? {}
  let n = 0
  for (const k in la) {
    if (lb[k] !== la[k]) return false
    n++
  }
  for (const _ in lb) n--
  if (n !== 0) return false
  const oa = a.metadata.ownerReferences ?? []
  const ob = b.metadata.ownerReferences ?? []
  if (oa.length !== ob.length) return false
  for (let i = 0; i < oa.length; i++) if (oa[i]?.uid !== ob[i]?.uid) return false
  return true
}

/** A deduplicating work queue with per-key exponential backoff. */
export class WorkQueue {
  #worker: (key: string) => Promise<void>
  #concurrency: number
  #queue: string[] = []
  #queued = new Set<string>()
  #active = new Set<string>()
  #dirty = new Set<string>()
  #failures = new Map<string, number>()
  #timers = new Map<string, NodeJS.Timeout>()
  #running = 0
  #stopped = false
  #paused = true
  #scheduled = false
  #idle: (() => void)[] = []

  /** Keys added before {@link start} wait: a controller must not act on half-filled caches. */
  constructor(worker: (key: string) => Promise<void>, concurrency = 4) {
    this.#worker = worker
    this.#concurrency = concurrency
  }

  /** Begins processing. */
  start(): void {
    this.#paused = false
    this.#pump()
  }

  /** Queues `key` (once, however often it is added before being processed). */
  add(key: string): void {
    if (this.#stopped) return
    if (this.#active.has(key)) {
      this.#dirty.add(key)
      return
    }
    if (this.#queued.has(key)) return
    this.#queued.add(key)
    this.#queue.push(key)
    this.#soon()
  }

  /**
   * Starts idle workers on the event loop's next turn, not inside the caller: as a controller's
   * worker goroutines take keys from the queue on their own, so that the events of one moment (the
   * pods of a ReplicaSet becoming ready together) are one sync of the key they map to, not one each.
   */
  #soon(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      this.#pump()
    })
  }

  /** Queues `key` after `ms` milliseconds (one pending timer per key). */
  addAfter(key: string, ms: number): void {
    if (this.#stopped || this.#timers.has(key)) return
    this.#timers.set(key, setTimeout(() => {
      this.#timers.delete(key)
      this.add(key)
    }, ms))
  }

  /** Stops processing, cancels timers, and waits for running workers to finish. */
  async shutdown(): Promise<void> {
    this.#stopped = true
    for (const t of this.#timers.values()) clearTimeout(t)
    this.#timers.clear()
    this.#queue = []
    this.#queued.clear()
    if (this.#running > 0) await new Promise<void>((resolve) => this.#idle.push(resolve))
  }

  #pump(): void {
    while (!this.#stopped && !this.#paused && this.#running < this.#concurrency && this.#queue.length > 0) {
      const key = this.#queue.shift() as string
      this.#queued.delete(key)
      this.#active.add(key)
      this.#running++
      void this.#run(key)
    }
  }

  async #run(key: string): Promise<void> {
    try {
      await this.#worker(key)
      this.#failures.delete(key)
    } catch {
      // Conflicts, transient errors, a cache that has not caught up yet: retry with backoff
      // (5 ms doubling up to 2 s), as client-go's rate-limited queue does.
      const n = (this.#failures.get(key) ?? 0) + 1
      this.#failures.set(key, n)
      this.addAfter(key, Math.min(2000, 5 * 2 ** n))
    } finally {
      this.#active.delete(key)
      this.#running--
      if (this.#dirty.delete(key)) this.add(key)
      if (this.#stopped && this.#running === 0) for (const r of this.#idle.splice(0)) r()
      this.#pump()
    }
  }
}
