/**
 * The sandbox's etcd: objects by resource and key, one global monotonically increasing
 * resourceVersion shared by every kind, a bounded window of past events for watch resumption,
 * and synchronous subscribers for live watches.
 *
 * Stored objects are immutable by convention: every write stores a fresh object and its JSON,
 * serialised once, so reads can hand out the bytes without cloning; the parsed object is held
 * weakly (see {@link StoredObject}).
 */
import { wireCopy } from '../kube/json.ts'
import type { KubeObject } from './types.ts'

const metaOrder = ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields']

/**
 * Rebuilds an object with the key order of the real server's serialisation (apiVersion, kind,
 * metadata in ObjectMeta field order, then the body, status last), so stored bytes read naturally.
 */
export function canonicalOrder(obj: KubeObject): KubeObject {
  const m = obj.metadata as Record<string, unknown>
  const meta: Record<string, unknown> = {}
  for (const k of metaOrder) if (m[k] !== undefined) meta[k] = m[k]
  for (const k in m) if (!(k in meta) && m[k] !== undefined) meta[k] = m[k]
  const out: KubeObject = { apiVersion: obj.apiVersion, kind: obj.kind, metadata: meta }
  for (const k in obj) if (k !== 'apiVersion' && k !== 'kind' && k !== 'metadata' && k !== 'status') out[k] = obj[k]
  if (obj.status !== undefined) out.status = obj.status
  return out
}

/**
 * One stored object: its serialised bytes, and the parsed object held only weakly. The bytes are
 * what nearly every read sends (GET, LIST, watch) and what a write parses into its private copy;
 * the parsed object (for selectors, tables, quota, admission) is the one the write stored until
 * the garbage collector needs the room, then parsed again from the bytes when next asked for.
 * Keeping both for every object and every retained version doubled the heap the collector
 * traverses, and its cost grew with the number of objects.
 *
 * The bytes are made when first read. A write's object is held strongly until then; once the
 * write's event has been delivered ({@link StoredObject.settle}) an object that no in-process
 * informer shares gets its bytes and is held weakly, as above, while one they share (frozen, kept
 * alive by them anyway) waits until a reader wants its bytes: a kind nobody reads over the wire
 * (ReplicaSets, Endpoints, EndpointSlices in the benchmarks) is never serialised.
 */
export class StoredObject {
  readonly rv: number
  readonly namespace: string
  readonly name: string
  #json: string | undefined
  /** The object, until its bytes exist. */
  #strong: KubeObject | undefined
  #obj: WeakRef<KubeObject>
  readonly #apiVersion: unknown
  readonly #kind: unknown
  /** Whether `apiVersion` is the object's first member (so its bytes begin with it). */
  readonly #apiVersionFirst: boolean
  /** Where the bytes after `apiVersion` and `kind` begin (`-1`: not in canonical order; `-2`: not known yet). */
  #itemStart = -2
  constructor(obj: KubeObject, rv: number) {
    this.rv = rv
    this.namespace = obj.metadata.namespace ?? ''
    this.name = obj.metadata.name ?? ''
    this.#strong = obj
    this.#obj = new WeakRef(obj)
    this.#apiVersion = obj.apiVersion
    this.#kind = obj.kind
    let first: string | undefined
    for (const k in obj) {
      if ((obj as Record<string, unknown>)[k] === undefined) continue
      first = k
      break
    }
    this.#apiVersionFirst = first === 'apiVersion'
  }
  /** The serialised object (made on first use). */
  get json(): string {
    if (this.#json === undefined) {
      this.#json = JSON.stringify(this.#strong)
      this.#strong = undefined
    }
    return this.#json
  }
  /**
   * Called once the write's event has been delivered: an object no in-process informer took
   * (it is not frozen) gets its bytes now and is held weakly from then on.
   */
  settle(): void {
    const o = this.#strong
    if (o !== undefined && !Object.isFrozen(o)) void this.json
  }
  /** The stored object, immutable by convention (parsed again from the bytes if it was collected). */
  get obj(): KubeObject {
    const strong = this.#strong
    if (strong !== undefined) return strong
    let o = this.#obj.deref()
    if (o === undefined) {
      o = JSON.parse(this.json) as KubeObject
      this.#obj = new WeakRef(o)
    }
    return o
  }
  /**
   * The stored object deeply frozen, for in-process readers that share it instead of parsing a
   * copy each; a reader that tried to change it would throw.
   */
  shared(): KubeObject {
    const o = this.obj
    if (!Object.isFrozen(o)) deepFreeze(o)
    return o
  }
  /**
   * The stored object when it is alive and deeply frozen (then it cannot have drifted from its
   * bytes): what {@link copy} copies from, and what a write that copies only what it changes
   * builds on; undefined otherwise.
   */
  frozen(): KubeObject | undefined {
    const o = this.#obj.deref()
    return o !== undefined && Object.isFrozen(o) ? o : undefined
  }
  /**
   * The bytes as an item of a built-in List: the real server's typed lists omit each item's
   * `kind` and `apiVersion`. Cut from the bytes (which begin with them), not kept.
   */
  get itemJson(): string {
    const json = this.json
    if (this.#itemStart === -2) {
      let prefix = '{'
      if (this.#apiVersion !== undefined) prefix += `"apiVersion":${JSON.stringify(this.#apiVersion)},`
      if (this.#kind !== undefined) prefix += `"kind":${JSON.stringify(this.#kind)},`
      this.#itemStart = json.startsWith(prefix) ? prefix.length : -1
    }
    if (this.#itemStart < 0) return JSON.stringify({ ...this.obj, apiVersion: undefined, kind: undefined })
    return this.#itemStart === 1 ? json : `{${json.slice(this.#itemStart)}`
  }
  /** Whether the stored bytes are at apiVersion `gv` (and can be sent as they are): they begin with it. */
  isAt(gv: string): boolean {
    return this.#apiVersionFirst && this.#apiVersion === gv
  }
  /**
   * A private deep copy the caller may mutate: the bytes parsed, or the parsed object copied
   * directly when it is frozen (then it cannot have drifted from the bytes it was written as).
   */
  copy(): KubeObject {
    const o = this.frozen()
    return o !== undefined ? (wireCopy(o) as KubeObject) : (JSON.parse(this.json) as KubeObject)
  }
  /**
   * The stored object without its status, for a `/status` write of a built-in kind, which sets the
   * status and top-level metadata fields and changes nothing below them (its schema is fixed, so
   * the stored object has nothing to prune): when the object is frozen, a new top level and
   * metadata over its frozen members, shared rather than copied (changing one would throw);
   * otherwise a private copy.
   */
  withoutStatus(): KubeObject {
    const o = this.frozen()
    if (o === undefined) return this.copyWithoutStatus()
    const { status: _, ...rest } = o
    return { ...rest, metadata: { ...o.metadata } } as KubeObject
  }
  /** {@link copy} without the status, for a write that replaces it (the status is not copied to be dropped). */
  copyWithoutStatus(): KubeObject {
    const o = this.frozen()
    if (o !== undefined) {
      const { status: _, ...rest } = o
      return wireCopy(rest) as KubeObject
    }
    const out = JSON.parse(this.json) as KubeObject
    delete out.status
    return out
  }
}

/** Freezes a JSON value, its members before itself (so a frozen object's members are frozen). */
function deepFreeze(v: unknown): void {
  if (typeof v !== 'object' || v === null || Object.isFrozen(v)) return
  if (Array.isArray(v)) for (const x of v) deepFreeze(x)
  else for (const k in v) deepFreeze((v as Record<string, unknown>)[k])
  Object.freeze(v)
}

/** Tells each subscriber of an event; one that throws does not stop the others, and its error still surfaces. */
function tell(subs: Set<Subscriber> | undefined, e: StoreEvent): void {
  if (subs === undefined || subs.size === 0) return
  for (const fn of [...subs]) {
    try {
      fn(e)
    } catch (err) {
      queueMicrotask(() => {
        throw err
      })
    }
  }
}

/** A change recorded in the history window and delivered to subscribers. */
export interface StoreEvent {
  rv: number
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
  /** `group/resource` (`/pods` for core). */
  table: string
  current: StoredObject
  /** The state before a MODIFIED event, for selector watches that must see objects leave. */
  previous?: StoredObject
}

type Subscriber = (event: StoreEvent) => void

function keyOf(namespace: string, name: string): string {
  return `${namespace}/${name}`
}

/** Orders like etcd keys (`/registry/<resource>/<namespace>/<name>`): namespace, then name. */
function byKey(a: StoredObject, b: StoredObject): number {
  const na = a.namespace
  const nb = b.namespace
  if (na !== nb) return na < nb ? -1 : 1
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

interface Table {
  objects: Map<string, StoredObject>
  sorted: StoredObject[] | null
}

/** The object store; see the module comment. */
export class Store {
  #rv: number
  #tables = new Map<string, Table>()
  #history: StoreEvent[] = []
  #historyStart = 0
  #window: number
  #compacted: number
  #subscribers = new Map<string, Set<Subscriber>>()
  /** Subscribers that freeze the objects they are told of ({@link StoredObject.shared}): told last. */
  #freezers = new Map<string, Set<Subscriber>>()
  #pending: StoreEvent[] = []
  #delivering = false

  /**
   * @param window how many events are kept for watch resumption; older resourceVersions get 410.
   * @param startRv the resourceVersion before the first write (real clusters never start at 0).
   */
  constructor(window = 10_000, startRv = 1000) {
    this.#window = Math.max(1, window)
    this.#rv = startRv
    this.#compacted = startRv
  }

  /** The latest resourceVersion handed out. */
  get resourceVersion(): number {
    return this.#rv
  }

  /** Watches from a resourceVersion below this one get 410 Expired. */
  get compactedResourceVersion(): number {
    return this.#compacted
  }

  /** Number of live subscribers (open watches) across all tables. */
  get subscribers(): number {
    let n = 0
    for (const s of this.#subscribers.values()) n += s.size
    for (const s of this.#freezers.values()) n += s.size
    return n
  }

  /** Number of stored objects across all tables. */
  get size(): number {
    let n = 0
    for (const t of this.#tables.values()) n += t.objects.size
    return n
  }

  #table(table: string): Table {
    let t = this.#tables.get(table)
    if (!t) {
      t = { objects: new Map(), sorted: null }
      this.#tables.set(table, t)
    }
    return t
  }

  /** Reads one object. */
  get(table: string, namespace: string, name: string): StoredObject | undefined {
    return this.#tables.get(table)?.objects.get(keyOf(namespace, name))
  }

  /** Objects of a table in key order, optionally in one namespace. The array must not be mutated. */
  list(table: string, namespace?: string): readonly StoredObject[] {
    const t = this.#tables.get(table)
    if (!t) return []
    if (t.sorted === null) t.sorted = [...t.objects.values()].sort(byKey)
    if (namespace === undefined || namespace === '') return t.sorted
    return t.sorted.filter((o) => o.namespace === namespace)
  }

  /** Tables (`group/resource`) that hold at least one object. */
  tables(): string[] {
    return [...this.#tables.entries()].filter(([, t]) => t.objects.size > 0).map(([k]) => k)
  }

  /**
   * Stores `obj` (which the store now owns) with the next resourceVersion and emits ADDED or
   * MODIFIED. The caller has decided that the write changes something.
   */
  put(table: string, obj: KubeObject): StoredObject {
    const rv = ++this.#rv
    obj.metadata.resourceVersion = String(rv)
    const stored = new StoredObject(canonicalOrder(obj), rv)
    const t = this.#table(table)
    const key = keyOf(stored.namespace, stored.name)
    const previous = t.objects.get(key)
    t.objects.set(key, stored)
    if (previous === undefined) t.sorted = null
    else if (t.sorted !== null) {
      // Same key, same place: find it by binary search rather than a scan.
      const sorted = t.sorted
      let lo = 0
      let hi = sorted.length
      while (lo < hi) {
        const mid = (lo + hi) >>> 1
        if (byKey(sorted[mid] as StoredObject, previous) < 0) lo = mid + 1
        else hi = mid
      }
      if (sorted[lo] === previous) sorted[lo] = stored
      else t.sorted = null
    }
    const event: StoreEvent = previous === undefined ? { rv, type: 'ADDED', table, current: stored } : { rv, type: 'MODIFIED', table, current: stored, previous }
    this.#record(event)
    return stored
  }

  /** Removes an object; its last state is emitted as DELETED with a new resourceVersion. */
  remove(table: string, namespace: string, name: string): StoredObject | undefined {
    const t = this.#tables.get(table)
    const key = keyOf(namespace, name)
    const previous = t?.objects.get(key)
    if (!t || !previous) return undefined
    t.objects.delete(key)
    t.sorted = null
    const rv = ++this.#rv
    const last = previous.copy()
    last.metadata.resourceVersion = String(rv)
    const stored = new StoredObject(last, rv)
    this.#record({ rv, type: 'DELETED', table, current: stored, previous })
    return stored
  }

  #record(event: StoreEvent): void {
    this.#history.push(event)
    if (this.#history.length - this.#historyStart > this.#window) {
      const dropped = this.#history[this.#historyStart]
      this.#historyStart++
      if (dropped) this.#compacted = dropped.rv
      // Compact the array occasionally rather than shifting on every write.
      if (this.#historyStart > 4096 && this.#historyStart * 2 > this.#history.length) {
        this.#history = this.#history.slice(this.#historyStart)
        this.#historyStart = 0
      }
    }
    this.#pending.push(event)
    // A subscriber that writes while being told of an event (an in-process controller) must not
    // make other subscribers see the new event before the current one: deliver in order, once.
    if (this.#delivering) return
    this.#delivering = true
    try {
      for (let i = 0; i < this.#pending.length; i++) {
        const e = this.#pending[i] as StoreEvent
        // Those who read the bytes first: an object is serialised before it is frozen (V8 serialises
        // frozen objects, arrays above all, markedly slower).
        tell(this.#subscribers.get(e.table), e)
        tell(this.#freezers.get(e.table), e)
        e.current.settle()
      }
    } finally {
      this.#pending = []
      this.#delivering = false
    }
  }

  /**
   * Events of `table` with resourceVersion greater than `since`, or `undefined` when `since`
   * is older than the retained window.
   */
  since(table: string, since: number): StoreEvent[] | undefined {
    if (since < this.#compacted) return undefined
    const out: StoreEvent[] = []
    // Binary search the first event after `since`; the history is ordered by rv.
    let lo = this.#historyStart
    let hi = this.#history.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((this.#history[mid]?.rv ?? 0) <= since) lo = mid + 1
      else hi = mid
    }
    for (let i = lo; i < this.#history.length; i++) {
      const e = this.#history[i]
      if (e && e.table === table) out.push(e)
    }
    return out
  }

  /**
   * Subscribes to future events of a table; returns the unsubscribe function. `freezes`: the
   * subscriber takes the stored objects themselves, frozen ({@link StoredObject.shared}); it is told
   * of each event after the others.
   */
  subscribe(table: string, fn: Subscriber, opts: { freezes?: boolean } = {}): () => void {
    const all = opts.freezes === true ? this.#freezers : this.#subscribers
    let subs = all.get(table)
    if (!subs) {
      subs = new Set()
      all.set(table, subs)
    }
    subs.add(fn)
    return () => {
      subs.delete(fn)
    }
  }

  /** Forgets every retained event, so that any resume from an older resourceVersion gets 410. */
  compact(): void {
    this.#history = []
    this.#historyStart = 0
    this.#compacted = this.#rv
  }
}
