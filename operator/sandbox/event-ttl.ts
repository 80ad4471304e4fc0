/**
 * kube-apiserver's `--event-ttl` (default 1 h): an Event is stored with an etcd lease that every
 * write of it renews (pkg/registry/core/event/storage/storage.go, whose `TTLFunc` answers the TTL
 * for a create and an update alike), and when the lease runs out etcd deletes the key. No request
 * is made, no admission runs and finalizers are not waited for: watchers see a DELETED event.
 */
import type { Store, StoreEvent } from './store.ts'

/** The tables that hold Events (core/v1 and events.k8s.io/v1). */
export const EVENT_TABLES: readonly string[] = ['/events', 'events.k8s.io/events']

interface Lease {
  table: string
  namespace: string
  name: string
  /** The resourceVersion of the write that took the lease. */
  rv: number
  expires: number
}

/** The longest delay a timer takes (a longer one fires at once). */
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * Deletes Events from a store `ttlMs` after their last write, through `remove` (which keeps what
 * the server derives from storage, such as quota usage, as a removal does). A TTL of 0 or less
 * grants no lease: Events stay, as with a TTL of 0 in the apiserver's store.
 */
export class EventTtl {
  readonly #store: Store
  readonly #ttlMs: number
  readonly #remove: (table: string, namespace: string, name: string) => void
  /** By table, namespace and name; in order of last write, so the first lease is the next to run out. */
  readonly #leases = new Map<string, Lease>()
  #timer: NodeJS.Timeout | undefined
  #unsubscribe: (() => void)[]

  constructor(store: Store, ttlMs: number, remove: (table: string, namespace: string, name: string) => void) {
    this.#store = store
    this.#ttlMs = ttlMs
    this.#remove = remove
    this.#unsubscribe = ttlMs > 0 ? EVENT_TABLES.map((t) => store.subscribe(t, (e) => this.#onEvent(e))) : []
  }

  #onEvent(e: StoreEvent): void {
    const key = `${e.table}\u0000${e.current.namespace}\u0000${e.current.name}`
    this.#leases.delete(key)
    if (e.type === 'DELETED') return
    this.#leases.set(key, { table: e.table, namespace: e.current.namespace, name: e.current.name, rv: e.rv, expires: Date.now() + this.#ttlMs })
    this.#arm()
  }

  #arm(): void {
    if (this.#timer !== undefined) return
    const first = this.#leases.values().next().value
    if (first === undefined) return
    this.#timer = setTimeout(() => this.#expire(), Math.min(MAX_DELAY_MS, Math.max(0, first.expires - Date.now())))
    this.#timer.unref()
  }

  #expire(): void {
    this.#timer = undefined
    const now = Date.now()
    // The leases due now, taken first: a write made while they are removed (a subscriber that
    // writes an Event again) takes a new lease, due a TTL later, and is not met in this pass.
    const due: Lease[] = []
    for (const lease of this.#leases.values()) {
      if (lease.expires > now) break
      due.push(lease)
    }
    for (const lease of due) {
      const key = `${lease.table}\u0000${lease.namespace}\u0000${lease.name}`
      if (this.#leases.get(key) !== lease) continue
      this.#leases.delete(key)
      if (this.#store.get(lease.table, lease.namespace, lease.name)?.rv === lease.rv) this.#remove(lease.table, lease.namespace, lease.name)
    }
    this.#arm()
  }

  /** Stops expiring (the store keeps what it holds). */
  close(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    for (const u of this.#unsubscribe) u()
    this.#unsubscribe = []
  }
}
