/**
 * Memory of what the operator applied: for each object (by uid), the resourceVersion the server
 * returned after our apply and a hash of the desired object we applied. While both still hold,
 * the object is exactly as we left it and we render the same thing, so the reconcile sends
 * nothing without even diffing — whatever the normalisation in diff.ts misses (a server quirk we
 * do not know) costs at most one no-op apply per change, never one per resync.
 *
 * Pure data: the caller feeds it the objects the server returned.
 */
import { createHash } from 'node:crypto'
import { controllerOf } from './owner.ts'

/** JSON with map keys sorted at every level: the same value always gives the same text. */
export function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : stableJson(v))).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** Hex SHA-256 of the desired object's {@link stableJson}: independent of map key order. */
export function hashDesired(obj: unknown): string {
  return createHash('sha256').update(stableJson(obj)).digest('hex')
}

/** What is remembered of one object. */
export interface AppliedEntry {
  /** The resourceVersion the server returned for our apply. */
  resourceVersion: string
  /** {@link hashDesired} of what we applied. */
  desiredHash: string
  /** uid of the object's controller (the CR), so that everything of a CR can be forgotten at once. */
  ownerUid: string | undefined
}

/** Options of {@link AppliedMemory}. */
export interface AppliedMemoryOptions {
  /** Most entries kept; the least recently used goes first (default 100,000: 25,000 CRs of 4 objects). */
  maxEntries?: number
}

/** What the memory reads of a live object: its uid, resourceVersion and controller. */
export interface VersionedObject {
  metadata: { uid?: string; resourceVersion?: string; ownerReferences?: unknown }
}

/**
 * What was applied, by object uid. Bounded (least recently used entries are dropped, which only
 * costs a diff) and clearable per CR ({@link AppliedMemory.forgetOwner} when a CR is deleted).
 */
export class AppliedMemory {
  #entries = new Map<string, AppliedEntry>()
  /** Owner uid → uids of the objects remembered for it: forgetting a CR does not walk every entry. */
  #byOwner = new Map<string, Set<string>>()
  #max: number

  /** @param opts bound of the memory */
  constructor(opts: AppliedMemoryOptions = {}) {
    const max = opts.maxEntries ?? 100_000
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`maxEntries must be a positive integer, got ${max}`)
    this.#max = max
  }

  /** How many objects are remembered. */
  get size(): number {
    return this.#entries.size
  }

  /**
   * True when `live` is the very version the server returned after our last apply (same uid and
   * resourceVersion) and `desired` hashes as what we applied then: nothing to do, no diff needed.
   * False for a missing object or one we never applied.
   */
  isUnchangedSinceApply(desired: unknown, live: VersionedObject | undefined): boolean {
    const uid = live?.metadata.uid
    if (uid === undefined || live === undefined) return false
    const entry = this.#entries.get(uid)
    if (entry === undefined || entry.resourceVersion !== live.metadata.resourceVersion) return false
    if (entry.desiredHash !== hashDesired(desired)) return false
    this.#entries.delete(uid)
    this.#entries.set(uid, entry)
    return true
  }

  /**
   * Records that `liveAfterApply` (the object the server returned for our apply of `desired`) is
   * what `desired` produces. Also right after a diff found `live` equal to `desired`: then the
   * next resync skips even the diff. Objects without uid or resourceVersion are not remembered.
   */
  remember(liveAfterApply: VersionedObject, desired: unknown): void {
    const { uid, resourceVersion } = liveAfterApply.metadata
    if (uid === undefined || resourceVersion === undefined) return
    this.forget(uid)
    const ownerUid = controllerOf(liveAfterApply)?.uid
    this.#entries.set(uid, { resourceVersion, desiredHash: hashDesired(desired), ownerUid })
    if (ownerUid !== undefined) {
      let owned = this.#byOwner.get(ownerUid)
      if (!owned) this.#byOwner.set(ownerUid, (owned = new Set()))
      owned.add(uid)
    }
    if (this.#entries.size > this.#max) this.forget(this.#entries.keys().next().value as string)
  }

  /** The entry of an object, if remembered (for logs and tests). */
  get(uid: string): AppliedEntry | undefined {
    return this.#entries.get(uid)
  }

  /** Forgets one object (deleted, pruned, or an apply of it failed). */
  forget(uid: string): void {
    const entry = this.#entries.get(uid)
    if (entry === undefined) return
    this.#entries.delete(uid)
    if (entry.ownerUid === undefined) return
    const owned = this.#byOwner.get(entry.ownerUid)
    owned?.delete(uid)
    if (owned?.size === 0) this.#byOwner.delete(entry.ownerUid)
  }

  /** Forgets every object controlled by the CR of uid `ownerUid` (the CR was deleted). Returns how many. */
  forgetOwner(ownerUid: string): number {
    const owned = [...(this.#byOwner.get(ownerUid) ?? [])]
    for (const uid of owned) this.forget(uid)
    return owned.length
  }

  /** Forgets everything (e.g. when leadership is lost). */
  clear(): void {
    this.#entries.clear()
    this.#byOwner.clear()
  }
}
