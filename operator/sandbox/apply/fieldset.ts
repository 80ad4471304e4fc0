/**
 * Field sets as structured-merge-diff keeps them: a tree of path elements, each spelled the way
 * `fieldsV1` spells it (`f:name`, `k:{"name":"app"}`, `v:"x"`, `i:0`), where a node may itself be
 * a member of the set (a leaf, or `".": {}` when it also has members below it).
 *
 * Sets are treated as immutable values: every operation returns a new set or one of its inputs
 * unchanged (identity is preserved when nothing changes, which lets callers reuse the encoded
 * `fieldsV1` of managers whose ownership did not move).
 */
import type { Json, JsonObject } from '../types.ts'
import { isObject } from '../../kube/json.ts'

/** One node of a field set. */
export interface FieldSet {
  /** Whether the path leading to this node is itself in the set. */
  readonly member: boolean
  /** Children by path element (fieldsV1 spelling); `null` when there are none. */
  readonly children: ReadonlyMap<string, FieldSet> | null
}

/** The empty set. */
export const EMPTY: FieldSet = Object.freeze({ member: false, children: null })
/** A set holding exactly the path that leads to it. */
export const LEAF: FieldSet = Object.freeze({ member: true, children: null })

/** True when the set holds no path. */
export function isEmpty(s: FieldSet): boolean {
  return !s.member && (s.children === null || s.children.size === 0)
}

/** A set node: `member` and `children` (none or empty: the shared {@link EMPTY} or {@link LEAF}). */
export function make(member: boolean, children: ReadonlyMap<string, FieldSet> | null): FieldSet {
  if (children !== null && children.size === 0) children = null
  if (!member && children === null) return EMPTY
  if (member && children === null) return LEAF
  return { member, children }
}

/** Builds a set from paths (each a list of path elements). */
export function fromPaths(paths: readonly (readonly string[])[]): FieldSet {
  let s = EMPTY
  for (const p of paths) s = union(s, single(p))
  return s
}

function single(p: readonly string[]): FieldSet {
  let s = LEAF
  for (let i = p.length - 1; i >= 0; i--) s = make(false, new Map([[p[i] as string, s]]))
  return s
}

/** a ∪ b */
export function union(a: FieldSet, b: FieldSet): FieldSet {
  if (a === b || isEmpty(b)) return a
  if (isEmpty(a)) return b
  const member = a.member || b.member
  if (b.children === null) return member === a.member ? a : make(member, a.children === null ? null : new Map(a.children))
  if (a.children === null) return member === b.member ? b : make(member, new Map(b.children))
  let out: Map<string, FieldSet> | null = null
  for (const [k, bc] of b.children) {
    const ac = a.children.get(k)
    const u = ac === undefined ? bc : union(ac, bc)
    if (u !== ac) {
      out ??= new Map(a.children)
      out.set(k, u)
    }
  }
  if (out === null && member === a.member) return a
  return make(member, out ?? new Map(a.children))
}

/** a − b (members of b removed from a; b's members do not remove a's children). */
export function difference(a: FieldSet, b: FieldSet): FieldSet {
  if (a === b) return EMPTY
  if (isEmpty(a) || isEmpty(b)) return a
  const member = a.member && !b.member
  let out: Map<string, FieldSet> | null = null
  if (a.children !== null && b.children !== null) {
    for (const [k, bc] of b.children) {
      const ac = a.children.get(k)
      if (ac === undefined) continue
      const d = difference(ac, bc)
      if (d !== ac) {
        out ??= new Map(a.children)
        if (isEmpty(d)) out.delete(k)
        else out.set(k, d)
      }
    }
  }
  if (out === null && member === a.member) return a
  return make(member, out ?? (a.children === null ? null : new Map(a.children)))
}

/** a ∩ b */
export function intersection(a: FieldSet, b: FieldSet): FieldSet {
  if (a === b) return a
  if (isEmpty(a) || isEmpty(b)) return EMPTY
  const member = a.member && b.member
  let out: Map<string, FieldSet> | null = null
  if (a.children !== null && b.children !== null) {
    const [small, big] = a.children.size <= b.children.size ? [a.children, b.children] : [b.children, a.children]
    for (const [k, sc] of small) {
      const bc = big.get(k)
      if (bc === undefined) continue
      const i = intersection(sc, bc)
      if (!isEmpty(i)) (out ??= new Map()).set(k, i)
    }
  }
  return make(member, out)
}

/** Removes every path at or below each prefix (structured-merge-diff's RecursiveDifference). */
export function withoutPrefixes(s: FieldSet, prefixes: readonly (readonly string[])[]): FieldSet {
  for (const p of prefixes) s = withoutPrefix(s, p, 0)
  return s
}

function withoutPrefix(s: FieldSet, p: readonly string[], i: number): FieldSet {
  if (i === p.length) return EMPTY
  const k = p[i] as string
  const c = s.children?.get(k)
  if (c === undefined || s.children === null) return s
  const d = withoutPrefix(c, p, i + 1)
  if (d === c) return s
  const out = new Map(s.children)
  if (isEmpty(d)) out.delete(k)
  else out.set(k, d)
  return make(s.member, out)
}

/** Set equality. */
export function equals(a: FieldSet, b: FieldSet): boolean {
  if (a === b) return true
  if (a.member !== b.member) return false
  const an = a.children?.size ?? 0
  const bn = b.children?.size ?? 0
  if (an !== bn) return false
  if (an === 0) return true
  for (const [k, ac] of a.children as ReadonlyMap<string, FieldSet>) {
    const bc = b.children?.get(k)
    if (bc === undefined || !equals(ac, bc)) return false
  }
  return true
}

/** A mutable builder node, frozen into a FieldSet by {@link build}. */
export interface SetBuilder {
  member: boolean
  children: Map<string, SetBuilder> | null
}

/** A fresh builder node. */
export function builder(): SetBuilder {
  return { member: false, children: null }
}

/** Freezes a builder (dropping empty branches). */
export function build(b: SetBuilder): FieldSet {
  let out: Map<string, FieldSet> | null = null
  if (b.children !== null) {
    for (const [k, c] of b.children) {
      const s = build(c)
      if (!isEmpty(s)) (out ??= new Map()).set(k, s)
    }
  }
  return make(b.member, out)
}

const decoded = new WeakMap<object, FieldSet>()

/** Decodes a `fieldsV1` object. Results are cached by object identity. */
export function fromFieldsV1(json: unknown): FieldSet {
  if (!isObject(json)) return EMPTY
  const hit = decoded.get(json)
  if (hit !== undefined) return hit
  const s = decodeNode(json, false)
  decoded.set(json, s)
  // The stored encoding of the set (as toFieldsV1 records its own): a manager whose set a write
  // left as it was keeps its fieldsV1. Not for the shared EMPTY and LEAF, which other texts decode to.
  if (s.children !== null) encoded.set(s, json)
  return s
}

function decodeNode(json: JsonObject, member: boolean): FieldSet {
  let out: Map<string, FieldSet> | null = null
  for (const k of Object.keys(json)) {
    if (k === '.') {
      member = true
      continue
    }
    const v = json[k]
    const child = isObject(v) && Object.keys(v).length > 0 ? decodeNode(v, false) : LEAF
    ;(out ??= new Map()).set(k, child)
  }
  return make(member, out)
}

/** Encodings by set: sets are immutable, and so (like the decoded ones) are the encodings handed out. */
const encoded = new WeakMap<FieldSet, JsonObject>()

/**
 * Encodes a set as `fieldsV1`: `".": {}` first where a node is a member with children, then path
 * elements in structured-merge-diff's order. Cached by set identity: a manager whose set did not
 * change (a writer sending the same fields again) gets the encoding it had.
 */
export function toFieldsV1(s: FieldSet): JsonObject {
  const hit = encoded.get(s)
  if (hit !== undefined) return hit
  const out = encodeNode(s, false)
  decoded.set(out, s)
  encoded.set(s, out)
  return out
}

function encodeNode(s: FieldSet, includeSelf: boolean): JsonObject {
  const out: JsonObject = {}
  if (s.children === null) return out
  if (includeSelf) out['.'] = {}
  for (const k of sortedKeys(s.children)) {
    const c = s.children.get(k) as FieldSet
    out[k] = c.children === null ? {} : encodeNode(c, c.member)
  }
  return out
}

/** Keys of a node in path-element order (field names, then keys, then values, then indexes). */
export function sortedKeys(m: ReadonlyMap<string, FieldSet>): string[] {
  const keys = [...m.keys()]
  if (keys.length < 2) return keys
  let allFields = true
  for (const k of keys) if (!k.startsWith('f:')) allFields = false
  if (allFields) return insertionSort(keys, byCodeUnits)
  const decorated = keys.map((k) => ({ k, pe: parsedElement(k) }))
  insertionSort(decorated, (x, y) => comparePE(x.pe, y.pe))
  return decorated.map((d) => d.k)
}

/**
 * Sorts in place. A node's keys are few (a struct's fields, a list's items): sorting them here
 * spares the work array `Array.prototype.sort` allocates at every call, which every encoding of a
 * set made per node.
 */
function insertionSort<T>(a: T[], cmp: (x: T, y: T) => number): T[] {
  if (a.length > 32) return a.sort(cmp)
  for (let i = 1; i < a.length; i++) {
    const x = a[i] as T
    let j = i - 1
    while (j >= 0 && cmp(a[j] as T, x) > 0) {
      a[j + 1] = a[j] as T
      j--
    }
    a[j + 1] = x
  }
  return a
}

/** Parsed path elements by spelling (the same keys and values recur in every object of a kind); bounded. */
const parsedElements = new Map<string, PathElement>()
function parsedElement(k: string): PathElement {
  let pe = parsedElements.get(k)
  if (pe === undefined) {
    if (parsedElements.size >= 10_000) parsedElements.clear()
    parsedElements.set(k, (pe = parseElement(k)))
  }
  return pe
}

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A decoded path element. */
export type PathElement =
  | { kind: 0; name: string }
  | { kind: 1; key: [string, Json][] }
  | { kind: 2; value: Json }
  | { kind: 3; index: number }

/** Parses a fieldsV1 path element spelling. */
export function parseElement(k: string): PathElement {
  const body = k.slice(2)
  switch (k[0]) {
    case 'k': {
      const o = JSON.parse(body) as Record<string, Json>
      return { kind: 1, key: Object.keys(o).sort().map((n) => [n, o[n] as Json]) }
    }
    case 'v':
      return { kind: 2, value: JSON.parse(body) as Json }
    case 'i':
      return { kind: 3, index: Number(body) }
    default:
      return { kind: 0, name: body }
  }
}

function comparePE(a: PathElement, b: PathElement): number {
  if (a.kind !== b.kind) return a.kind - b.kind
  switch (a.kind) {
    case 0:
      return byCodeUnits(a.name, (b as { name: string }).name)
    case 1: {
      const bk = (b as { key: [string, Json][] }).key
      for (let i = 0; ; i++) {
        const x = a.key[i]
        const y = bk[i]
        if (x === undefined) return y === undefined ? 0 : -1
        if (y === undefined) return 1
        const c = byCodeUnits(x[0], y[0]) || compareValues(x[1], y[1])
        if (c !== 0) return c
      }
    }
    case 2:
      return compareValues(a.value, (b as { value: Json }).value)
    default:
      return a.index - (b as { index: number }).index
  }
}

function valueRank(v: Json): number {
  if (typeof v === 'number') return 0
  if (typeof v === 'string') return 1
  if (typeof v === 'boolean') return 2
  if (Array.isArray(v)) return 3
  if (v === null) return 5
  return 4
}

/** structured-merge-diff's total order over values: numbers, strings, booleans, lists, maps, null. */
function compareValues(a: Json, b: Json): number {
  const ra = valueRank(a)
  const rb = valueRank(b)
  if (ra !== rb) return ra - rb
  if (typeof a === 'number') return a - (b as number)
  if (typeof a === 'string') return byCodeUnits(a, b as string)
  if (typeof a === 'boolean') return Number(a) - Number(b as boolean)
  return byCodeUnits(JSON.stringify(a), JSON.stringify(b))
}

/** The members of a set as paths, in structured-merge-diff's iteration order (a node's members before its subtrees). */
export function members(s: FieldSet): string[][] {
  const out: string[][] = []
  walkMembers(s, [], out)
  return out
}

function walkMembers(s: FieldSet, prefix: string[], out: string[][]): void {
  if (s.children === null) return
  const keys = sortedKeys(s.children)
  for (const k of keys) if ((s.children.get(k) as FieldSet).member) out.push([...prefix, k])
  for (const k of keys) {
    const c = s.children.get(k) as FieldSet
    if (c.children !== null) walkMembers(c, [...prefix, k], out)
  }
}

/** Renders a path the way the API server does in conflict messages: `.spec.containers[name="app"].image`. */
export function pathString(path: readonly string[]): string {
  let s = ''
  for (const k of path) {
    const pe = parseElement(k)
    switch (pe.kind) {
      case 0:
        s += '.' + pe.name
        break
      case 1:
        s += '[' + pe.key.map(([n, v]) => `${n}=${valueString(v)}`).join(',') + ']'
        break
      case 2:
        s += `[=${valueString(pe.value)}]`
        break
      default:
        s += `[${pe.index}]`
    }
  }
  return s
}

function valueString(v: Json): string {
  return typeof v === 'string' ? JSON.stringify(v) : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)
}
