/**
 * managedFields bookkeeping and the two algorithms of structured-merge-diff's `merge/update.go`:
 * `apply` (server-side apply) and `update` (every other write).
 */
import type { JsonObject, KubeObject, ManagedFieldsEntry, Topology } from '../types.ts'
import {
  difference,
  EMPTY,
  equals,
  type FieldSet,
  fromFieldsV1,
  intersection,
  isEmpty,
  members,
  pathString,
  toFieldsV1,
  union,
  withoutPrefixes,
} from './fieldset.ts'
import { clone, deepEqual, getPath, isObject } from '../../kube/json.ts'
import { compareObjects, gvkString, markReconciled, mergeObjects, omitEmpty, prunedPaths, reconcileWithSchema, removePaths, skipTree, toFieldSet, type SkipTree } from './merge.ts'

/** Options of {@link serverSideApply}. */
export interface ApplyOptions {
  /** The `fieldManager` of the request. */
  manager: string
  /** `force=true`: take ownership of conflicting fields instead of failing. */
  force: boolean
  /** Topology of the resource (built-in or from the CRD schema). */
  topology: Topology
  /** Current time, RFC3339 UTC with seconds (`2026-11-21T16:30:00Z`). */
  now: string
  /** The endpoint's group/version, e.g. `apps/v1`. */
  apiVersion: string
  /** `'status'` for an apply to `/status`, undefined for the main resource. */
  subresource?: string
  /**
   * Paths (field names) this endpoint does not own: `[['status']]` for the main resource of a
   * kind with a status subresource; `[['spec'], ['metadata']]` (or finer) for `/status`. They are
   * never owned through this endpoint (structured-merge-diff's ignored fields), and their content
   * is restored from the live object (the resource strategy's `PrepareForUpdate`).
   */
  resetFields?: string[][]
  /**
   * Only ignore the reset fields: their content is merged as applied, not restored. This is
   * structured-merge-diff's layer alone, as its own tables run it; the API server always restores.
   */
  ignoreOnly?: boolean
  /** Server defaulting, run on the merged object after pruning (in place). */
  defaulter?: (obj: KubeObject) => void
}

/** One field that another manager owns and the apply would change. */
export interface ApplyConflict {
  /** The owning manager, e.g. `kubectl-edit`. */
  manager: string
  /** The owning entry's apiVersion. */
  apiVersion: string
  /** The field, e.g. `.spec.template.spec.containers[name="app"].image`. */
  field: string
  /** The cause message as the server writes it: `conflict with "kubectl-edit" using apps/v1`. */
  message: string
}

/** Outcome of {@link serverSideApply}. */
export type ApplyResult =
  | { ok: true; object: KubeObject; changed: boolean }
  | { ok: false; conflicts: ApplyConflict[]; message: string }

/** Options of {@link trackUpdate}. */
export interface UpdateOptions {
  manager: string
  topology: Topology
  now: string
  apiVersion: string
  subresource?: string
  resetFields?: string[][]
}

/** Fields that are never owned by anyone (structured-merge-diff's strip set). */
const STRIPPED: string[][] = [
  ['f:apiVersion'],
  ['f:kind'],
  ['f:metadata', 'f:name'],
  ['f:metadata', 'f:namespace'],
  ['f:metadata', 'f:creationTimestamp'],
  ['f:metadata', 'f:selfLink'],
  ['f:metadata', 'f:uid'],
  ['f:metadata', 'f:generation'],
  ['f:metadata', 'f:managedFields'],
  ['f:metadata', 'f:resourceVersion'],
]

/** The manager name of the synthetic owner of an object's fields before its first apply. */
export const BEFORE_FIRST_APPLY = 'before-first-apply'

interface Manager {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion: string
  subresource: string | undefined
  time: string | undefined
  set: FieldSet
  /** The entry this manager was decoded from, reused when nothing about it changed. */
  entry?: ManagedFieldsEntry
  decodedSet?: FieldSet
}

function managerId(operation: string, manager: string, apiVersion: string, subresource: string | undefined): string {
  // Appliers are one entry whatever apiVersion they use; updaters are split by apiVersion.
  return operation === 'Apply' ? `A\u0000${manager}\u0000${subresource ?? ''}` : `U\u0000${manager}\u0000${apiVersion}\u0000${subresource ?? ''}`
}

/** Decodes managedFields into managers by identity (entries without a manager or fields are dropped). */
function decodeManagers(entries: unknown, topology: Topology): Map<string, Manager> {
  const out = new Map<string, Manager>()
  if (!Array.isArray(entries)) return out
  for (const e of entries as unknown[]) {
    if (!isObject(e) || typeof e.manager !== 'string' || !isObject(e.fieldsV1)) continue
    const operation = e.operation === 'Apply' ? 'Apply' : 'Update'
    const apiVersion = typeof e.apiVersion === 'string' ? e.apiVersion : ''
    const subresource = typeof e.subresource === 'string' && e.subresource !== '' ? e.subresource : undefined
    const decoded = fromFieldsV1(e.fieldsV1)
    const set = reconcileWithSchema(decoded, topology)
    const id = managerId(operation, e.manager, apiVersion, subresource)
    const prev = out.get(id)
    if (prev !== undefined) {
      prev.set = union(prev.set, set)
      delete prev.entry
      continue
    }
    out.set(id, {
      manager: e.manager,
      operation,
      apiVersion,
      subresource,
      time: typeof e.time === 'string' ? e.time : undefined,
      set,
      entry: e as unknown as ManagedFieldsEntry,
      decodedSet: decoded,
    })
  }
  return out
}

function sameAsDecoded(m: Manager): boolean {
  const e = m.entry
  return e !== undefined && m.set === m.decodedSet && e.time === m.time && e.apiVersion === m.apiVersion
}

/** Encodes managers as managedFields entries, in the server's key order and sort order. */
function encodeManagers(managers: Map<string, Manager>): ManagedFieldsEntry[] {
  const out: ManagedFieldsEntry[] = []
  for (const m of managers.values()) {
    if (isEmpty(m.set)) continue
    if (sameAsDecoded(m)) {
      out.push(m.entry as ManagedFieldsEntry)
      continue
    }
    const e: Record<string, unknown> = { manager: m.manager, operation: m.operation, apiVersion: m.apiVersion }
    if (m.time !== undefined) e.time = m.time
    e.fieldsType = 'FieldsV1'
    e.fieldsV1 = toFieldsV1(m.set)
    if (m.subresource !== undefined) e.subresource = m.subresource
    out.push(e as unknown as ManagedFieldsEntry)
  }
  out.sort(compareEntries)
  return out
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function compareEntries(p: ManagedFieldsEntry, q: ManagedFieldsEntry): number {
  return (
    cmp(p.operation, q.operation) ||
    cmp(p.time ?? '', q.time ?? '') ||
    cmp(p.manager, q.manager) ||
    cmp(p.apiVersion, q.apiVersion) ||
    cmp(p.subresource ?? '', q.subresource ?? '')
  )
}

function resetPrefixes(resetFields: string[][] | undefined): string[][] {
  return resetFields === undefined ? [] : resetFields.map((p) => p.map((f) => 'f:' + f))
}

function ignoredPrefixes(resetFields: string[][] | undefined): string[][] {
  if (resetFields === undefined || resetFields.length === 0) return STRIPPED
  return [...STRIPPED, ...resetPrefixes(resetFields)]
}

/** {@link ignoredPrefixes} as the tree a comparison skips, one per set of reset fields. */
const ignoredTrees = new Map<string, SkipTree>()
function ignoredTree(resetFields: string[][] | undefined): SkipTree {
  const key = resetFields === undefined ? '' : resetFields.map((p) => p.join('.')).join('|')
  let tree = ignoredTrees.get(key)
  if (tree === undefined) ignoredTrees.set(key, (tree = skipTree(ignoredPrefixes(resetFields))))
  return tree
}

/** The object without `metadata.managedFields` (shallow: nothing else is copied). */
function body(obj: KubeObject): JsonObject {
  const md = obj.metadata
  if (md === undefined || md.managedFields === undefined) return obj as unknown as JsonObject
  const { managedFields: _drop, ...rest } = md
  return { ...(obj as unknown as JsonObject), metadata: rest as JsonObject }
}

/** How the server prints a manager in conflict messages (apiserver fieldmanager printManager). */
function printManager(m: Manager): string {
  let s = JSON.stringify(m.manager)
  if (m.subresource !== undefined) s += ` with subresource ${JSON.stringify(m.subresource)}`
  if (m.operation === 'Update') s += ` using ${m.apiVersion}`
  return s
}

/** The message of a 409 apply conflict, exactly as the API server builds it. */
export function conflictMessage(conflicts: readonly ApplyConflict[], printed: ReadonlyMap<string, string>): string {
  if (conflicts.length === 1) {
    const c = conflicts[0] as ApplyConflict
    return `Apply failed with 1 conflict: ${c.message}: ${c.field}`
  }
  const byManager = new Map<string, string[]>()
  for (const c of conflicts) {
    const key = printed.get(c.message) ?? c.manager
    let l = byManager.get(key)
    if (l === undefined) byManager.set(key, (l = []))
    l.push(c.field)
  }
  const lines: string[] = []
  for (const key of [...byManager.keys()].sort(cmp)) {
    lines.push(`conflicts with ${key}:`)
    for (const f of byManager.get(key) as string[]) lines.push(`- ${f}`)
  }
  return `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`
}

/** Restores the content of reset paths from the live object (strategy PrepareForUpdate). */
function restoreResetFields(merged: JsonObject, live: JsonObject | undefined, resetFields: string[][] | undefined): void {
  if (resetFields === undefined) return
  for (const path of resetFields) {
    if (path.length === 0) continue
    const parentPath = path.slice(0, -1)
    const leaf = path[path.length - 1] as string
    const liveValue = live === undefined ? undefined : getPath(live, path)
    let parent: unknown = merged
    for (const p of parentPath) {
      if (!isObject(parent)) break
      if (!isObject(parent[p])) {
        if (liveValue === undefined) {
          parent = undefined
          break
        }
        parent[p] = {}
      }
      parent = parent[p]
    }
    if (!isObject(parent)) continue
    if (path.length === 1 && leaf === 'metadata') {
      // metadata is reset member by member: managedFields is bookkeeping, not content.
      const md: JsonObject = {}
      const liveMd = isObject(liveValue) ? liveValue : {}
      for (const k of Object.keys(liveMd)) if (k !== 'managedFields') md[k] = clone(liveMd[k] as JsonObject)
      parent.metadata = md
    } else if (liveValue === undefined) delete parent[leaf]
    else parent[leaf] = clone(liveValue)
  }
}

/**
 * Server-side apply of `config` to `live` (undefined: create-on-apply), per structured-merge-diff:
 * merge, prune what this manager stopped applying, detect conflicts, move ownership, default.
 *
 * - `changed: false` means the result equals the live object, ownership included; `object` is then
 *   `live` itself and the caller must not write (no resourceVersion, no event).
 * - The returned object is fresh (callers may mutate it). uid, resourceVersion, generation,
 *   creationTimestamp are not touched — they are the server's (they are never owned anyway).
 * - Throws {@link ApplyTypeError} when the configuration cannot be typed (duplicate list-map keys).
 */
export function serverSideApply(live: KubeObject | undefined, config: KubeObject, opts: ApplyOptions): ApplyResult {
  const t = opts.topology
  const gvk = gvkString(config.apiVersion ?? opts.apiVersion, config.kind)
  const ignored = ignoredPrefixes(opts.resetFields)
  const skip = ignoredTree(opts.resetFields)
  const liveBody = live === undefined ? undefined : body(live)
  const configBody = body(config)

  let managers = live === undefined ? new Map<string, Manager>() : decodeManagers(live.metadata?.managedFields, t)
  if (live !== undefined && managers.size === 0) {
    // An object that never saw managedFields: its current fields go to a synthetic updater first.
    managers = updateManagers(new Map(), {}, liveBody as JsonObject, {
      manager: BEFORE_FIRST_APPLY,
      apiVersion: live.apiVersion,
      now: opts.now,
      topology: t,
      ignored: skip,
    })
  }

  const id = managerId('Apply', opts.manager, opts.apiVersion, opts.subresource)
  const previous = managers.get(id)
  const configSet = toFieldSet(configBody, t, gvk)
  let applied = withoutPrefixes(configSet, ignored)
  if (previous !== undefined && equals(previous.set, applied)) applied = previous.set

  const merged = mergeObjects(liveBody, configBody, t, gvk)
  if (previous !== undefined && applied !== previous.set && !isEmpty(previous.set)) {
    // Upstream strips metadata.name & co. only after the merge: during it the applier owns them.
    let owned = withoutPrefixes(configSet, resetPrefixes(opts.resetFields))
    for (const [mid, m] of managers) if (mid !== id) owned = union(owned, m.set)
    const prune = prunedPaths(merged, previous.set, owned, t)
    if (!isEmpty(prune)) removePaths(merged, prune, t)
  }
  if (opts.ignoreOnly !== true) restoreResetFields(merged, liveBody, opts.resetFields)

  // The fields nobody owns are left out as the comparison walks.
  const c = compareObjects(liveBody ?? {}, merged, t, skip)
  const changes = union(c.modified, c.added)
  const removed = c.removed

  const conflicts: ApplyConflict[] = []
  const printed = new Map<string, string>()
  const taken = new Map<string, FieldSet>()
  for (const [mid, m] of managers) {
    if (mid === id) continue
    const clash = intersection(m.set, changes)
    if (isEmpty(clash)) continue
    taken.set(mid, clash)
    const who = printManager(m)
    const message = `conflict with ${who}`
    printed.set(message, who)
    for (const p of members(clash)) conflicts.push({ manager: m.manager, apiVersion: m.apiVersion, field: pathString(p), message })
  }
  if (conflicts.length > 0 && !opts.force) {
    return { ok: false, conflicts, message: conflictMessage(conflicts, printed) }
  }

  const next = new Map<string, Manager>()
  for (const [mid, m] of managers) {
    if (mid === id) continue
    let s = m.set
    const clash = taken.get(mid)
    if (clash !== undefined) s = difference(s, clash)
    s = difference(s, removed)
    if (isEmpty(s)) continue
    next.set(mid, s === m.set ? m : { ...m, set: s })
  }
  const mine: Manager = previous !== undefined
    ? { ...previous, apiVersion: opts.apiVersion, set: applied }
    : { manager: opts.manager, operation: 'Apply', apiVersion: opts.apiVersion, subresource: opts.subresource, time: undefined, set: applied }
  if (!isEmpty(applied)) next.set(id, mine)

  const result = merged as unknown as KubeObject
  omitEmpty(merged, t)
  opts.defaulter?.(result)

  const objectChanged = liveBody === undefined || !deepEqual(merged, liveBody)
  let ownershipChanged = next.size !== managers.size
  if (!ownershipChanged) {
    for (const [mid, m] of next) {
      const before = managers.get(mid)
      if (before === undefined || before.set !== m.set || before.apiVersion !== m.apiVersion) {
        ownershipChanged = true
        break
      }
    }
  }
  if (!objectChanged && !ownershipChanged && live !== undefined) return { ok: true, object: live, changed: false }
  // The applier's timestamp moves only when the object changed (a new entry needs one anyway).
  if (objectChanged || mine.time === undefined) mine.time = opts.now
  markNewSets(next, managers, opts.topology)
  setManagedFields(result, encodeManagers(next))
  return { ok: true, object: result, changed: true }
}

/** Records the sets a write made (not those it decoded, which are) as reconciled with the kind's schema. */
function markNewSets(next: Map<string, Manager>, decoded: Map<string, Manager>, topology: Topology): void {
  for (const [id, m] of next) if (decoded.get(id)?.set !== m.set) markReconciled(m.set, topology)
}

function setManagedFields(obj: KubeObject, entries: ManagedFieldsEntry[]): void {
  const md = (obj.metadata ??= {})
  if (entries.length === 0) delete md.managedFields
  else md.managedFields = entries
}

interface UpdateCtx {
  manager: string
  apiVersion: string
  subresource?: string
  now: string
  topology: Topology
  /** What the comparison leaves out ({@link ignoredTree}). */
  ignored: SkipTree
}

/** The update algorithm: the writer takes every field it added, changed or removed. */
function updateManagers(managers: Map<string, Manager>, oldBody: JsonObject, newBody: JsonObject, ctx: UpdateCtx): Map<string, Manager> {
  const c = compareObjects(oldBody, newBody, ctx.topology, ctx.ignored)
  const changed = union(c.modified, c.added)
  const removed = c.removed
  const touched = union(changed, removed)
  const id = managerId('Update', ctx.manager, ctx.apiVersion, ctx.subresource)
  const next = new Map<string, Manager>()
  let previous: Manager | undefined
  for (const [mid, m] of managers) {
    if (mid === id) {
      previous = m
      continue
    }
    const s = isEmpty(touched) ? m.set : difference(m.set, touched)
    if (isEmpty(s)) continue
    next.set(mid, s === m.set ? m : { ...m, set: s })
  }
  const mineSet = union(previous === undefined ? EMPTY : difference(previous.set, removed), changed)
  if (!isEmpty(mineSet)) {
    const mine: Manager = previous !== undefined
      ? { ...previous, set: mineSet }
      : { manager: ctx.manager, operation: 'Update', apiVersion: ctx.apiVersion, subresource: ctx.subresource, time: undefined, set: mineSet }
    if (!isEmpty(changed) || mine.time === undefined) mine.time = ctx.now
    next.set(id, mine)
  }
  return next
}

/**
 * Ownership bookkeeping for a non-apply write (create, PUT, JSON/merge/strategic patch): sets
 * `updated.metadata.managedFields` per structured-merge-diff's `update` and returns `updated`
 * (mutated in place). `old` undefined means a create: the writer owns every field it sent plus the
 * defaults, so call this after defaulting. managedFields sent in `updated` (non-empty, main
 * resource only) replace the stored ones first, which is how clients reset them (`[{}]` clears).
 */
export function trackUpdate(old: KubeObject | undefined, updated: KubeObject, opts: UpdateOptions): KubeObject {
  const sent = updated.metadata?.managedFields
  const stored = old?.metadata?.managedFields
  // managedFields sent back as they are stored (a client's PUT of what it read, a patch of a copy)
  // replace them with themselves: the stored entries are decoded once and cached by identity.
  const replaces = opts.subresource === undefined && Array.isArray(sent) && sent.length > 0 && sent !== stored && !deepEqual(sent, stored)
  const source = replaces ? sent : stored
  const managers = decodeManagers(source, opts.topology)
  const next = updateManagers(managers, old === undefined ? {} : body(old), body(updated), {
    manager: opts.manager,
    apiVersion: opts.apiVersion,
    subresource: opts.subresource,
    now: opts.now,
    topology: opts.topology,
    ignored: ignoredTree(opts.resetFields),
  })
  markNewSets(next, managers, opts.topology)
  setManagedFields(updated, encodeManagers(next))
  return updated
}
