/**
 * Memory of what the operator applied: for each object (by uid), the resourceVersion the server
 * returned after our apply, a hash of the desired object we applied, and a hash of the fields our
 * apply owns (our managedFields entry). While the desired hash holds and the object is either the
 * very version we left or one whose fields of ours are still ours (only others' fields or its
 * status changed), we render the same thing and every value we set is still there, so the
 * reconcile sends nothing without even diffing — whatever the normalisation in diff.ts misses (a
 * server quirk we do not know) costs at most one no-op apply per change, never one per resync.
 *
 * Why our managedFields entry tells: server-side apply moves a field from every manager's set to
 * the manager whose write changed or removed its value (structured-merge-diff's Updater: the
 * fields an update modified leave the other managers), so a field of ours that somebody changed
 * is no longer in our entry. A Deployment's status written by its controller, a label someone
 * added, leave our entry as it was; a `kubectl scale` or an edit of our field does not.
 *
 * Why only an apply's own answer is trusted that way: a version that the caches show later is not
 * necessarily a later version. A cache that lags behind our applies (a watch that is behind, or
 * dropped and relisted) may show an object as it was before our last apply, with the same fields
 * of ours holding other values — ours too, from an earlier apply. So an object the caches show
 * and a diff finds equal to what we render is remembered by its resourceVersion alone
 * ({@link AppliedMemory.rememberFound}); and an apply that failed may have been applied all the
 * same (a timeout, a lost answer), so the caller forgets the object's entry: the next reconcile
 * diffs it again.
 *
 * Pure data: the caller feeds it the objects the server returned.
 */
import { createHash } from 'node:crypto'
import { FIELD_MANAGER } from './diff.ts'
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

/**
 * SHA-256 (base64) of the fields our server-side apply owns on `o`: its managedFields entry of
 * manager {@link FIELD_MANAGER}, operation Apply, no subresource, as the server sent it (the
 * informer's cache keeps that entry's fieldsV1 as the JSON text; a response has it parsed, and
 * JSON.stringify gives the same text back, keys in the server's order). Undefined without one.
 */
export function ownedFieldsHash(o: VersionedObject): string | undefined {
  const entries = o.metadata.managedFields
  if (!Array.isArray(entries)) return undefined
  for (const e of entries as { manager?: unknown; operation?: unknown; subresource?: unknown; fieldsV1?: unknown }[]) {
    if (e.manager !== FIELD_MANAGER || e.operation !== 'Apply' || (e.subresource ?? '') !== '') continue
    const text = typeof e.fieldsV1 === 'string' ? e.fieldsV1 : JSON.stringify(e.fieldsV1 ?? {})
    return createHash('sha256').update(text).digest('base64')
  }
  return undefined
}

/** What is remembered of one object. */
export interface AppliedEntry {
  /** The resourceVersion the server returned for our apply. */
  resourceVersion: string
  /** {@link hashDesired} of what we applied. */
  desiredHash: string
  /** uid of the object's controller (the CR), so that everything of a CR can be forgotten at once. */
  ownerUid: string | undefined
  /** {@link ownedFieldsHash} of the object our apply returned (undefined: only its resourceVersion tells, as for an object found equal). */
  ownedFields: string | undefined
}

/** Options of {@link AppliedMemory}. */
export interface AppliedMemoryOptions {
  /** Most entries kept; the least recently used goes first (default 100,000: 25,000 CRs of 4 objects). */
  maxEntries?: number
}

/** What the memory reads of a live object: its uid, resourceVersion, controller, managedFields and deletion. */
export interface VersionedObject {
  metadata: { uid?: string; resourceVersion?: string; ownerReferences?: unknown; managedFields?: unknown; deletionTimestamp?: unknown }
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
   * True when `desired` hashes as what we applied last and `live` (same uid) is as that apply left
   * it: the very version the server returned, or a later one (its status, others' fields) in
   * which our fields are still ours, not being deleted. Nothing to do, no diff needed. False for
   * a missing object or one we never applied.
   */
  isUnchangedSinceApply(desired: unknown, live: VersionedObject | undefined): boolean {
    const uid = live?.metadata.uid
    if (uid === undefined || live === undefined) return false
    const entry = this.#entries.get(uid)
    if (entry === undefined || entry.desiredHash !== hashDesired(desired) || !this.#asLeft(entry, live)) return false
    this.#touch(uid, entry)
    return true
  }

  /**
   * What {@link AppliedMemory.isUnchangedSinceApply} tells, for a caller that kept the desired
   * object's hash instead of the object: `live` is as our last apply (of a desired object hashing
   * to `desiredHash`) left it.
   */
  isStill(live: VersionedObject, desiredHash: string): boolean {
    const uid = live.metadata.uid
    const entry = uid === undefined ? undefined : this.#entries.get(uid)
    if (uid === undefined || entry === undefined || entry.desiredHash !== desiredHash || !this.#asLeft(entry, live)) return false
    this.#touch(uid, entry)
    return true
  }

  /** `live` is the version of `entry`, or a later one with the same fields of ours and no deletion. */
  #asLeft(entry: AppliedEntry, live: VersionedObject): boolean {
    if (entry.resourceVersion === live.metadata.resourceVersion) return true
    if (entry.ownedFields === undefined || live.metadata.deletionTimestamp) return false
    if (ownedFieldsHash(live) !== entry.ownedFields) return false
    // The later version is as good: the next look compares resourceVersions only.
    entry.resourceVersion = live.metadata.resourceVersion ?? entry.resourceVersion
    return true
  }

  /** Moves an entry to the most recently used end. */
  #touch(uid: string, entry: AppliedEntry): void {
    this.#entries.delete(uid)
    this.#entries.set(uid, entry)
  }

  /**
   * Records that `liveAfterApply` (the object the server returned for our apply of `desired`) is
   * what `desired` produces; a later version in which our managedFields entry is unchanged is too.
   * Objects without uid or resourceVersion are not remembered.
   */
  remember(liveAfterApply: VersionedObject, desired: unknown): void {
    this.#set(liveAfterApply, desired, ownedFieldsHash(liveAfterApply))
  }

  /**
   * Records that `live`, as a cache showed it, was found equal to `desired` by a diff: that very
   * version is what `desired` produces, so that the next resync skips even the diff. Not a later
   * one with the same fields of ours: the cache may lag behind an apply of ours that changed their
   * values, and that version may come next.
   */
  rememberFound(live: VersionedObject, desired: unknown): void {
    this.#set(live, desired, undefined)
  }

  #set(live: VersionedObject, desired: unknown, ownedFields: string | undefined): void {
    const { uid, resourceVersion } = live.metadata
    if (uid === undefined || resourceVersion === undefined) return
    this.forget(uid)
    const ownerUid = controllerOf(live)?.uid
    this.#entries.set(uid, { resourceVersion, desiredHash: hashDesired(desired), ownerUid, ownedFields })
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
