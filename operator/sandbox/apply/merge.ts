/**
 * The schema-aware operations of structured-merge-diff over plain JSON: the field set of an
 * applied configuration, merging a configuration into a live object, comparing two objects
 * (added / modified / removed paths) and removing a set of paths from an object.
 *
 * Over 600 lines: four operations over one schema walk (walk.ts) that share its list and map
 * helpers; a split by operation has to move those helpers first, which is not yet done.
 */
import type { Json, JsonObject, Topology } from '../types.ts'
import { builder, build, EMPTY as EMPTY_SET, isEmpty as isEmptySet, LEAF, make, type FieldSet, type SetBuilder, pathString } from './fieldset.ts'
import { clone, cloneDropNull, deepEqual, isObject } from '../../kube/json.ts'
import { childTopology, isGoTyped, isImplicit, OPEN, ItemKeyError, itemElement, itemTopology, kindOf, LEAF_KIND, LIST_KIND, MAP_KIND, STRUCT_KIND } from './walk.ts'

/**
 * An applied configuration the schema cannot type: duplicate keys in an associative list, an item
 * without its key fields. The API server answers these with HTTP 500 and the message
 * `failed to create typed patch object (<gvk>): <path>: <detail>`.
 */
export class ApplyTypeError extends Error {
  /** Path of the offending list, e.g. `.spec.template.spec.containers`. */
  readonly path: string
  /** What is wrong, e.g. `duplicate entries for key [name="app"]`. */
  readonly detail: string
  /** The HTTP status the real server uses. */
  readonly status = 500
  constructor(gvk: string, path: string, detail: string) {
    super(`failed to create typed patch object (${gvk}): ${path}: ${detail}`)
    this.name = 'ApplyTypeError'
    this.path = path
    this.detail = detail
  }
}

/** Go's spelling of a group/version/kind: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`. */
export function gvkString(apiVersion: string, kind: string): string {
  return `${apiVersion.includes('/') ? apiVersion : '/' + apiVersion}, Kind=${kind}`
}

const EMPTY_OBJECT: JsonObject = Object.freeze({}) as JsonObject

// ---------------------------------------------------------------------------------------------
// Field set of an applied configuration

/**
 * The set of fields an applied configuration manages: scalars and atomic nodes are leaves, every
 * associative-list item and every free-form map entry is a member, struct fields are not.
 * Throws {@link ApplyTypeError} for lists whose items cannot be identified or repeat a key.
 */
export function toFieldSet(obj: JsonObject, topology: Topology, gvk: string): FieldSet {
  const root = builder()
  const trail: string[] = []
  try {
    addChildren(root, obj, topology, trail)
  } catch (e) {
    if (e instanceof ItemKeyError) throw new ApplyTypeError(gvk, pathString(trail), e.detail)
    throw e
  }
  return build(root)
}

function addChildren(n: SetBuilder, v: unknown, t: Topology, trail: string[]): void {
  const kind = kindOf(t, v)
  if (kind === STRUCT_KIND || kind === MAP_KIND) {
    const o = v as JsonObject
    for (const k of Object.keys(o)) {
      const cv = o[k]
      if (cv === undefined) continue
      const ct = childTopology(t, k)
      const pe = 'f:' + k
      const c = builder()
      if (kindOf(ct, cv) === LEAF_KIND) c.member = true
      else {
        trail.push(pe)
        addChildren(c, cv, ct, trail)
        trail.pop()
        // Map entries are members; so are undeclared fields of a preserve-unknown-fields struct,
        // and empty maps (typed/tofieldset.go visitMapItems: `securityContext: {}` is owned).
        if (kind === MAP_KIND || (t.type === 'struct' && t.preserveUnknown === true && !(k in t.fields)) || (c.children === null && isObject(cv))) c.member = true
      }
      if (c.member || c.children !== null) (n.children ??= new Map()).set(pe, c)
    }
  } else if (kind === LIST_KIND) {
    const items = v as Json[]
    const it = itemTopology(t)
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as Json
      const pe = itemElement(t, item, i)
      const ch = (n.children ??= new Map())
      if (ch.has(pe)) throw new ItemKeyError(`duplicate entries for key ${pathString([pe])}`)
      const c = builder()
      c.member = true
      if (kindOf(it, item) !== LEAF_KIND) {
        trail.push(pe)
        addChildren(c, item, it, trail)
        trail.pop()
      }
      ch.set(pe, c)
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Merge

/**
 * Merges an applied configuration into a live object: the configuration wins on scalars and atomic
 * nodes; structs and maps merge member by member; associative lists merge item by item with the
 * configuration's order and live-only items kept in place. The result is a fresh tree (nothing is
 * shared with either input), so callers may mutate it. A null in the configuration replaces a
 * scalar, an atomic node or an empty container and leaves a granular one (a deduced map too)
 * unchanged (typed/merge.go). Nulls are
 * values of a custom resource (its CRD's defaulting then drops those of non-nullable fields, as
 * the API server does) and are dropped from a built-in kind's, as decoding into its Go type drops
 * them.
 */
export function mergeObjects(live: JsonObject | undefined, config: JsonObject, topology: Topology, gvk: string): JsonObject {
  const trail: string[] = []
  const outer = keepNulls
  keepNulls = !isGoTyped(topology)
  try {
    return (merge(live, config, topology, trail) ?? {}) as JsonObject
  } catch (e) {
    if (e instanceof ItemKeyError) throw new ApplyTypeError(gvk, pathString(trail), e.detail)
    throw e
  } finally {
    keepNulls = outer
  }
}

/** Whether the merge in progress keeps null values ({@link mergeObjects}). */
let keepNulls = false

const copyOf = <T>(v: T): T => (keepNulls ? clone(v) : cloneDropNull(v))

function merge(l: Json | undefined, r: Json | undefined, t: Topology, trail: string[]): Json | undefined {
  if (r === undefined) return l === undefined || (l === null && !keepNulls) ? undefined : clone(l)
  if (r === null) {
    // typed/merge.go: null merged into a granular map, struct or list changes nothing below it
    // (the live items stay); on a scalar or an atomic node it replaces it, and on an empty
    // container too (both sides empty or null are a leaf: `emptyPromoteToLeaf`). A deduced value
    // (`__untyped_deduced_`, typed/parser.go) is granular when it is a map: the null's atom is the
    // whole deduced atom, whose map part wins in handleAtom (typed/helpers.go), so doMap runs with
    // the live map against a nil one and keeps its entries. Its lists are atomic and its scalars
    // leaves, which the null replaces.
    if (l === undefined || l === null || kindOf(t, l) === LEAF_KIND) return keepNulls ? null : undefined
    if (keepNulls && isEmptyContainer(l)) return null
    return clone(l)
  }
  if (l === undefined || l === null) return copyOf(r)
  const kind = kindOf(t, r)
  if (kind === LEAF_KIND || kindOf(t, l) !== kind) return copyOf(r)
  if (kind === LIST_KIND) return mergeList(l as Json[], r as Json[], t, trail)
  const lo = l as JsonObject
  const ro = r as JsonObject
  const out: JsonObject = {}
  for (const k of Object.keys(lo)) {
    const lv = lo[k]
    let v: Json | undefined
    if (k in ro) {
      trail.push('f:' + k)
      v = merge(lv, ro[k], childTopology(t, k), trail)
      trail.pop()
    } else v = lv === undefined || (lv === null && !keepNulls) ? undefined : clone(lv)
    if (v !== undefined) out[k] = v
  }
  for (const k of Object.keys(ro)) {
    if (k in lo) continue
    const rv = ro[k]
    if (rv !== undefined && (rv !== null || keepNulls)) out[k] = copyOf(rv)
  }
  return out
}

/** structured-merge-diff's list merge (typed/merge.go visitListItems), keyed by path element. */
function mergeList(l: Json[], r: Json[], t: Topology, trail: string[]): Json[] {
  const it = itemTopology(t)
  const rPEs: string[] = new Array(r.length)
  const rItems = new Map<string, Json>()
  for (let i = 0; i < r.length; i++) {
    const pe = itemElement(t, r[i], i)
    if (rItems.has(pe)) throw new ItemKeyError(`duplicate entries for key ${pathString([pe])}`)
    rItems.set(pe, r[i] as Json)
    rPEs[i] = pe
  }
  const lPEs: string[] = new Array(l.length)
  // A key the live list repeats (a PUT may store that) maps to undefined: typed/merge.go does not
  // merge duplicates with the configuration, whose item replaces all of them.
  const lItems = new Map<string, Json | undefined>()
  for (let i = 0; i < l.length; i++) {
    const pe = itemElement(t, l[i], i)
    lItems.set(pe, lItems.has(pe) ? undefined : (l[i] as Json))
    lPEs[i] = pe
  }
  const shared: string[] = []
  for (const pe of rPEs) if (lItems.has(pe)) shared.push(pe)
  let si = 0
  let nextShared: string | undefined = shared[si++]
  const merged = new Set<string>()
  const out: Json[] = []
  const item = (pe: string, lv: Json | undefined, rv: Json | undefined): void => {
    trail.push(pe)
    const m = merge(lv, rv, it, trail)
    trail.pop()
    if (m !== undefined) out.push(m)
  }
  let lI = 0
  let rI = 0
  while (lI < lPEs.length || rI < rPEs.length) {
    if (lI < lPEs.length && rI < rPEs.length) {
      const pe = lPEs[lI] as string
      if (pe === rPEs[rI]) {
        merged.add(pe)
        item(pe, lItems.get(pe), rItems.get(pe))
        lI++
        rI++
        nextShared = shared[si++]
        continue
      }
      if (rItems.has(pe) && nextShared !== undefined && nextShared !== pe) {
        lI++
        continue
      }
    }
    if (lI < lPEs.length) {
      const pe = lPEs[lI] as string
      if (!rItems.has(pe)) {
        item(pe, l[lI], undefined)
        lI++
        continue
      } else if (merged.has(pe)) {
        lI++
        continue
      }
    }
    if (rI < rPEs.length) {
      const pe = rPEs[rI] as string
      merged.add(pe)
      item(pe, lItems.get(pe), rItems.get(pe))
      rI++
      if (nextShared === pe) nextShared = shared[si++]
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Compare

/** The paths that differ between two objects. */
export interface Comparison {
  added: FieldSet
  modified: FieldSet
  removed: FieldSet
}

/**
 * Field paths a comparison leaves out, as a tree by path element (`f:metadata` → `f:name` → null):
 * null where everything at and below the path is left out.
 */
export type SkipTree = ReadonlyMap<string, SkipTree | null>

/** The {@link SkipTree} of path prefixes (each a list of path elements, `['f:metadata', 'f:name']`). */
export function skipTree(prefixes: readonly (readonly string[])[]): SkipTree {
  const root = new Map<string, Map<string, unknown> | null>()
  for (const p of prefixes) {
    let n: Map<string, unknown> | null = root
    for (let i = 0; i < p.length && n !== null; i++) {
      const k = p[i] as string
      if (i === p.length - 1) n.set(k, null)
      else {
        let c = n.get(k) as Map<string, unknown> | null | undefined
        if (c === undefined) n.set(k, (c = new Map()))
        n = c
      }
    }
  }
  return root as SkipTree
}

/**
 * Compares two objects the way structured-merge-diff does: leaves are added, removed or
 * modified; a struct, map or list item that appears (or disappears) is itself added (removed).
 * The paths `skip` holds, and what lies below them, are left out of all three sets (as
 * `withoutPrefixes` of the sets would leave them out), without being walked.
 */
export function compareObjects(lhs: JsonObject, rhs: JsonObject, topology: Topology, skip?: SkipTree): Comparison {
  compare(lhs, rhs, topology, skip)
  const out = { added: resAdded, modified: resModified, removed: resRemoved }
  resAdded = resModified = resRemoved = EMPTY_SET
  return out
}

/**
 * What {@link compare} found below the node it compared, relative to it (a node that is itself
 * added is a member): read by the caller at once, before comparing the next node. Built bottom-up,
 * a map per node that holds a change, rather than inserted path by path from the root.
 */
let resAdded: FieldSet = EMPTY_SET
let resModified: FieldSet = EMPTY_SET
let resRemoved: FieldSet = EMPTY_SET

function isEmptyContainer(v: unknown): boolean {
  if (v === undefined) return true
  if (Array.isArray(v)) return v.length === 0
  if (isObject(v)) {
    for (const k in v) if (v[k] !== undefined) return false
    return true
  }
  return false
}

const EMPTY_ARRAY: Json[] = Object.freeze([]) as unknown as Json[]

/**
 * A member of a present object, where an absent implicit node reads as its Go zero value
 * (`{}` or a null list): that is what the server's typed objects always carry.
 */
function member(o: JsonObject | undefined, k: string, t: Topology): Json | undefined {
  if (o === undefined) return undefined
  const v = o[k]
  if (v !== undefined && v !== null) return v
  if (!isImplicit(t)) return v
  return t.type === 'list' ? EMPTY_ARRAY : EMPTY_OBJECT
}

/** The children a node's comparison collects, one map per set, each made when its first change comes. */
interface Below {
  added: Map<string, FieldSet> | null
  modified: Map<string, FieldSet> | null
  removed: Map<string, FieldSet> | null
}

/**
 * Files the last comparison's results under path element `pe`; `below` is made at the first
 * change (a subtree without changes allocates nothing) and returned.
 */
function collect(below: Below | null, pe: string): Below | null {
  if (resAdded === EMPTY_SET && resModified === EMPTY_SET && resRemoved === EMPTY_SET) return below
  below ??= { added: null, modified: null, removed: null }
  if (resAdded !== EMPTY_SET) (below.added ??= new Map()).set(pe, resAdded)
  if (resModified !== EMPTY_SET) (below.modified ??= new Map()).set(pe, resModified)
  if (resRemoved !== EMPTY_SET) (below.removed ??= new Map()).set(pe, resRemoved)
  return below
}

function compare(l: Json | undefined, r: Json | undefined, t: Topology, skip?: SkipTree): void {
  // The same value on both sides (a write that shares the stored object's unchanged members, or
  // both absent) holds no change at any depth.
  if (l === r) {
    resAdded = resModified = resRemoved = EMPTY_SET
    return
  }
  if (l === null || r === null) {
    // typed/compare.go: a null is a value that takes the other side's form. Against a container
    // with members it is that container empty: the members are added or removed, the container
    // itself stays. Otherwise it is a leaf: added, removed or modified.
    const other = l === null ? r : l
    if (other !== undefined && other !== null && kindOf(t, other) !== LEAF_KIND && !isEmptyContainer(other)) {
      const empty = Array.isArray(other) ? EMPTY_ARRAY : EMPTY_OBJECT
      compare(l === null ? empty : l, r === null ? empty : r, t, skip)
      return
    }
    resAdded = l === undefined ? LEAF : EMPTY_SET
    resRemoved = r === undefined ? LEAF : EMPTY_SET
    resModified = l !== undefined && r !== undefined ? LEAF : EMPTY_SET
    return
  }
  const kind = kindOf(t, r ?? l)
  if (l !== undefined && r !== undefined && kindOf(t, l) !== kind) {
    // typed/compare.go: a value that changed form (a deduced map that became a list or a scalar)
    // is walked as each form: the members of the old container are removed, those of the new one
    // added, and a side that is a leaf makes the value modified.
    let modified = false
    let removed: FieldSet = EMPTY_SET
    if (kindOf(t, l) === LEAF_KIND) modified = true
    else {
      compare(l, undefined, t, skip)
      removed = make(false, resRemoved.children)
    }
    let added: FieldSet = EMPTY_SET
    if (kind === LEAF_KIND) modified = true
    else {
      compare(undefined, r, t, skip)
      added = make(false, resAdded.children)
    }
    resAdded = added
    resRemoved = removed
    resModified = modified ? LEAF : EMPTY_SET
    return
  }
  if (kind !== LEAF_KIND && isEmptyContainer(l) && isEmptyContainer(r)) {
    resAdded = l === undefined ? LEAF : EMPTY_SET
    resRemoved = l !== undefined && r === undefined ? LEAF : EMPTY_SET
    resModified = l !== undefined && r !== undefined && !deepEqual(l, r) ? LEAF : EMPTY_SET
    return
  }
  if (kind === LEAF_KIND) {
    resAdded = l === undefined ? LEAF : EMPTY_SET
    resRemoved = l !== undefined && r === undefined ? LEAF : EMPTY_SET
    resModified = l !== undefined && r !== undefined && !deepEqual(l, r) ? LEAF : EMPTY_SET
    return
  }
  let below: Below | null = null
  if (kind === LIST_KIND) below = compareItems((l ?? EMPTY_ARRAY) as Json[], (r ?? EMPTY_ARRAY) as Json[], t)
  else {
    const lo = l as JsonObject | undefined
    const ro = r as JsonObject | undefined
    if (lo !== undefined) {
      for (const k of Object.keys(lo)) {
        if (lo[k] === undefined) continue
        const pe = 'f:' + k
        const next = skip?.get(pe)
        if (next === null) continue
        const ct = childTopology(t, k)
        compare(member(lo, k, ct), member(ro, k, ct), ct, next)
        below = collect(below, pe)
      }
    }
    if (ro !== undefined) {
      for (const k of Object.keys(ro)) {
        if ((lo !== undefined && lo[k] !== undefined) || ro[k] === undefined) continue
        const pe = 'f:' + k
        const next = skip?.get(pe)
        if (next === null) continue
        const ct = childTopology(t, k)
        compare(member(lo, k, ct), member(ro, k, ct), ct, next)
        below = collect(below, pe)
      }
    }
  }
  resAdded = make(l === undefined, below?.added ?? null)
  resModified = make(false, below?.modified ?? null)
  resRemoved = make(l !== undefined && r === undefined, below?.removed ?? null)
}

/**
 * typed/compare.go visitListItems: items pair up by key. A key that either side repeats is compared
 * as one atomic value: still repeated → modified if the repeats differ; no longer repeated → the
 * key is removed (its surviving item added below it); newly repeated → its old item is removed
 * and the key added, with nothing below it.
 */
function compareItems(la: Json[], ra: Json[], t: Topology): Below | null {
  const it = itemTopology(t)
  const l = indexItems(la, t)
  const r = indexItems(ra, t)
  let below: Below | null = null
  for (const [pe, lv] of l.first) {
    pairItems(lv, l.repeats?.get(pe), r.first.get(pe), r.repeats?.get(pe), it)
    below = collect(below, pe)
  }
  for (const [pe, rv] of r.first) {
    if (l.first.has(pe)) continue
    pairItems(undefined, undefined, rv, r.repeats?.get(pe), it)
    below = collect(below, pe)
  }
  return below
}

interface ItemIndex {
  /** The first item of each key, in list order. */
  first: Map<string, Json>
  /** Every item of each key that appears more than once (rare: only then allocated). */
  repeats: Map<string, Json[]> | null
}

function indexItems(a: Json[], t: Topology): ItemIndex {
  const first = new Map<string, Json>()
  let repeats: Map<string, Json[]> | null = null
  for (let i = 0; i < a.length; i++) {
    const v = a[i] as Json
    const pe = itemElement(t, v, i)
    const seen = first.get(pe)
    if (seen === undefined && !first.has(pe)) first.set(pe, v)
    else {
      repeats ??= new Map()
      const list = repeats.get(pe)
      if (list === undefined) repeats.set(pe, [seen as Json, v])
      else list.push(v)
    }
  }
  return { first, repeats }
}

/** A node that is a member, with what a comparison found below it. */
function asMember(s: FieldSet): FieldSet {
  return s.member ? s : make(true, s.children)
}

function pairItems(lv: Json | undefined, lRep: Json[] | undefined, rv: Json | undefined, rRep: Json[] | undefined, it: Topology): void {
  if (lRep === undefined && rRep === undefined) {
    compare(lv, rv, it)
  } else if (lRep !== undefined && rRep !== undefined) {
    resAdded = resRemoved = EMPTY_SET
    resModified = deepEqual(lRep, rRep) ? EMPTY_SET : LEAF
  } else if (lRep !== undefined) {
    // No longer repeated: the key is removed, its surviving item added below it.
    if (rv !== undefined) compare(undefined, rv, it)
    else resAdded = resModified = resRemoved = EMPTY_SET
    resRemoved = asMember(resRemoved)
  } else {
    // Newly repeated: the old item removed, the key added with nothing below it.
    if (lv !== undefined) compare(lv, undefined, it)
    else resAdded = resModified = resRemoved = EMPTY_SET
    resAdded = asMember(resAdded)
  }
}

// ---------------------------------------------------------------------------------------------
// Schema changes

const reconciled = new WeakMap<FieldSet, { topology: Topology; set: FieldSet }>()

/**
 * A manager's set after the schema changed under it (typed/reconcile_schema.go, which both apply
 * and update run first): where a node the set holds paths below has become atomic, the set owns the
 * node itself instead. Returns `set` itself when nothing changes; cached per set and topology.
 */
export function reconcileWithSchema(set: FieldSet, topology: Topology): FieldSet {
  const hit = reconciled.get(set)
  if (hit !== undefined && hit.topology === topology) return hit.set
  const out = reconcileNode(set, topology)
  reconciled.set(set, { topology, set: out })
  return out
}

/**
 * Records that `set` needs no reconciling with `topology`: it was built under that topology (by
 * comparing or typing objects, whose walks stop at atomic nodes) or from sets that were (a union
 * or a difference holds no path below an atomic node that its inputs did not). The next write that
 * decodes it skips the walk.
 */
export function markReconciled(set: FieldSet, topology: Topology): void {
  if (!reconciled.has(set)) reconciled.set(set, { topology, set })
}

function reconcileNode(s: FieldSet, t: Topology): FieldSet {
  if (s.children === null) return s
  if (t.type === 'list' ? t.listType === 'atomic' : (t.type === 'struct' || t.type === 'map') && t.atomic === true) return LEAF
  // Deduced (untyped) maps are not reconciled; neither is what lies below them.
  if (t.type === 'any' || t.type === 'scalar') return s
  let out: Map<string, FieldSet> | null = null
  for (const [pe, c] of s.children) {
    let ct: Topology
    if (t.type === 'list') ct = itemTopology(t)
    else if (pe.startsWith('f:')) ct = childTopology(t, pe.slice(2))
    else continue
    const r = reconcileNode(c, ct)
    if (r !== c) (out ??= new Map(s.children)).set(pe, r)
  }
  return out === null ? s : { member: s.member, children: out }
}

// ---------------------------------------------------------------------------------------------
// Prune

/**
 * What an apply removes from the merged object: structured-merge-diff's `prune`, `addBackOwnedItems`
 * and `addBackDanglingItems` (merge/update.go) folded into one walk. Upstream removes everything
 * the applier applied last time (`last`), adds back what any manager owns (`owned`: the others'
 * sets and this apply's own), then keeps only removals that were in `last`. Each of those sets goes
 * through `EnsureNamedFieldsAreMembers` first, which makes a struct field a member as soon as a
 * path below it is, but never a list item or a map entry. Hence:
 * - a struct field that someone still owns something below survives, only its unowned members go;
 * - a list item (or map entry) the applier applied and no longer applies goes whole, even when
 *   another manager owns fields inside it (an Update's set never holds the item itself) — the
 *   other manager loses those fields when the comparison finds them removed;
 * - only what the applier applied last time is removed, and only paths present in the object.
 * The result holds the roots of the subtrees to remove, for {@link removePaths}.
 */
export function prunedPaths(merged: JsonObject, last: FieldSet, owned: FieldSet, topology: Topology): FieldSet {
  return pruneWalk(last, owned, merged, topology, false, false, false)
}

const DUPLICATE: unique symbol = Symbol('duplicate list item')

function pruneWalk(l: FieldSet, o: FieldSet, v: Json | typeof DUPLICATE, t: Topology, named: boolean, underLast: boolean, unowned: boolean): FieldSet {
  const inLast = l.member || (named && l.children !== null)
  const inOwned = o.member || (named && o.children !== null)
  const under = underLast || inLast
  // `unowned`: some node on the way here (this one included) was pruned and nobody adds it back.
  const gone = unowned || (under && !inOwned)
  if (inLast && gone) return LEAF
  if (l.children === null || v === DUPLICATE) return EMPTY_SET
  const kind = kindOf(t, v)
  let out: Map<string, FieldSet> | null = null
  if (kind === STRUCT_KIND || kind === MAP_KIND) {
    const obj = v as JsonObject
    for (const [pe, lc] of l.children) {
      if (!pe.startsWith('f:')) continue
      const k = pe.slice(2)
      const cv = obj[k]
      if (cv === undefined) continue
      const ct = childTopology(t, k)
      // EnsureNamedFieldsAreMembers: a field the struct's schema declares.
      const childNamed = kind === STRUCT_KIND && t.type === 'struct' && (k in t.fields || t.preserveUnknown !== true)
      const r = pruneWalk(lc, o.children?.get(pe) ?? EMPTY_SET, cv, ct, childNamed, under, gone)
      if (!isEmptySet(r)) (out ??= new Map()).set(pe, r)
    }
  } else if (kind === LIST_KIND) {
    const items = v as Json[]
    const byElement = new Map<string, Json | typeof DUPLICATE>()
    for (let i = 0; i < items.length; i++) {
      let pe: string
      try {
        pe = itemElement(t, items[i], i)
      } catch {
        continue
      }
      byElement.set(pe, byElement.has(pe) ? DUPLICATE : (items[i] as Json))
    }
    const it = itemTopology(t)
    for (const [pe, lc] of l.children) {
      const cv = byElement.get(pe)
      if (cv === undefined) continue
      const r = pruneWalk(lc, o.children?.get(pe) ?? EMPTY_SET, cv, it, false, under, gone)
      if (!isEmptySet(r)) (out ??= new Map()).set(pe, r)
    }
  }
  return out === null ? EMPTY_SET : { member: false, children: out }
}

// ---------------------------------------------------------------------------------------------
// Removal

/**
 * Removes the members of `set` from `obj` in place. A map, struct or list that removal leaves empty
 * is removed too (the server's typed conversion drops the nil it becomes), except implicit structs,
 * which stay as `{}`.
 */
export function removePaths(obj: JsonObject, set: FieldSet, topology: Topology): void {
  const outer = keepNulls
  keepNulls = !isGoTyped(topology)
  try {
    remove(obj, set, topology)
  } finally {
    keepNulls = outer
  }
}

/** Returns true when the value was non-empty and removal emptied it. */
function remove(v: Json, set: FieldSet, t: Topology): boolean {
  if (set.children === null) return false
  const kind = kindOf(t, v)
  if (kind === STRUCT_KIND || kind === MAP_KIND) {
    const o = v as JsonObject
    let removed = false
    for (const [pe, c] of set.children) {
      if (!pe.startsWith('f:')) continue
      const k = pe.slice(2)
      const cv = o[k]
      if (cv === undefined) continue
      const ct = childTopology(t, k)
      if (c.member) delete o[k]
      else if (remove(cv, c, ct)) {
        // typed/remove.go: a container whose members were all removed is left null (a custom
        // resource's CRD defaulting drops it where the field is not nullable); a Go type drops it.
        if (isImplicit(ct) && ct.type === 'struct') o[k] = {}
        else if (keepNulls) o[k] = null
        else delete o[k]
      } else continue
      removed = true
    }
    return removed && isEmptyContainer(o)
  }
  if (kind === LIST_KIND) {
    const a = v as Json[]
    const it = itemTopology(t)
    let w = 0
    const n = a.length
    for (let i = 0; i < n; i++) {
      const item = a[i] as Json
      const c = set.children.get(itemElement(t, item, i))
      if (c !== undefined) {
        if (c.member) continue
        // An item emptied below keeps its place: its key fields normally survive anyway.
        remove(item, c, it)
      }
      a[w++] = item
    }
    a.length = w
    return w === 0 && n > 0
  }
  return false
}

// ---------------------------------------------------------------------------------------------
// Go typing

/**
 * What a real server's round trip through Go types does to a built-in object: empty lists and
 * empty maps are `omitempty` and vanish (`env: []`, `labels: {}`), except lists a zero value
 * always carries (`containers`). Structs, even empty (`securityContext: {}`, `emptyDir: {}`),
 * stay. In place; a no-op for topologies that are not built-in kinds.
 */
export function omitEmpty(obj: JsonObject, topology: Topology): void {
  if (isGoTyped(topology)) omitEmptyIn(obj, topology)
}

function omitEmptyIn(v: Json, t: Topology): void {
  if (Array.isArray(v)) {
    const it = itemTopology(t)
    for (const item of v) if (typeof item === 'object' && item !== null) omitEmptyIn(item, it)
    return
  }
  if (!isObject(v)) return
  for (const k of Object.keys(v)) {
    const cv = v[k]
    if (typeof cv !== 'object' || cv === null) continue
    const ct = t.type === 'struct' || t.type === 'map' || t.type === 'any' ? childTopology(t, k) : OPEN
    omitEmptyIn(cv, ct)
    if (Array.isArray(cv) ? cv.length === 0 && !isImplicit(ct) : ct.type === 'map' && isEmptyContainer(cv)) delete v[k]
  }
}
