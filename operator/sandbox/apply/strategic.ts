/**
 * Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds: a port of
 * apimachinery pkg/util/strategicpatch/patch.go (`StrategicMergeMapPatch`, v0.34), function for
 * function, so that directives behave as on a real server: `$patch: replace|delete` on maps (a
 * deleted map that existed is left as `{}`) and on list items, `$retainKeys`,
 * `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` (its order wins, then the
 * patch's, then the live list's).
 *
 * The patch metadata comes from the same topology as apply: a list that apply merges by key
 * (`patchStrategy: merge`) merges by its first key (the `patchMergeKey`), a set merges as a union
 * of scalars, every other list is replaced; maps and structs always merge (strategic merge ignores
 * `+mapType=atomic`). No built-in served here has a `patchStrategy: replace` map.
 */
import type { Json, JsonObject, KubeObject, Topology } from '../types.ts'
import { clone, isObject } from '../../kube/json.ts'
import { childTopology, itemTopology } from './walk.ts'

/**
 * A strategic merge patch that cannot be applied, with the status the server answers
 * (apiserver `interpretStrategicMergePatchError`: 400 for the malformed-patch sentinels, 422 for
 * lists of lists, and the raw error, 500 with no reason, for the rest).
 */
export class StrategicPatchError extends Error {
  readonly status: 400 | 422 | 500
  constructor(message: string, status: 400 | 422 | 500 = 500) {
    super(message)
    this.name = 'StrategicPatchError'
    this.status = status
  }
}

const DIRECTIVE = '$patch'
const RETAIN_KEYS = '$retainKeys'
const DELETE_FROM = '$deleteFromPrimitiveList'
const SET_ORDER = '$setElementOrder'

const badRetainKeys = (): StrategicPatchError => new StrategicPatchError('invalid patch format of retainKeys', 400)
const badSetOrder = (): StrategicPatchError => new StrategicPatchError('invalid patch format of setElementOrder list', 400)
const badPrimitiveList = (): StrategicPatchError => new StrategicPatchError('invalid patch format of primitive list', 400)

/** Go's `%v` of a decoded JSON value (maps print `map[k:v]` with sorted keys). */
function goV(v: Json | undefined): string {
  if (v === null || v === undefined) return '<nil>'
  if (Array.isArray(v)) return `[${v.map(goV).join(' ')}]`
  if (isObject(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goV(v[k])}`)
      .join(' ')}]`
  return String(v)
}

/** reflect.TypeOf(v) of a decoded JSON value, as a name. */
function goType(v: Json | undefined): string {
  if (v === null || v === undefined) return '<nil>'
  if (Array.isArray(v)) return '[]interface {}'
  if (isObject(v)) return 'map[string]interface {}'
  return typeof v === 'number' ? 'float64' : typeof v === 'string' ? 'string' : 'bool'
}

const errNoMergeKey = (m: JsonObject, k: string): StrategicPatchError => new StrategicPatchError(`map: ${goV(m)} does not contain declared merge key: ${k}`)
const errBadArgType = (expected: string, actual: Json | undefined): StrategicPatchError => new StrategicPatchError(`expected a ${expected}, but received a ${goType(actual)}`)
const errBadPatchType = (t: Json | undefined, m: JsonObject): StrategicPatchError => new StrategicPatchError(`unknown patch type: ${goV(t)} in map: ${goV(m)}`)

/** The patch metadata of a list field: its items' topology, strategy and merge key. */
function sliceMeta(t: Topology, key: string): { items: Topology; merge: boolean; mergeKey: string } {
  const c = childTopology(t, key)
  if (c.type !== 'list' || c.listType === 'atomic') return { items: itemTopology(c), merge: false, mergeKey: '' }
  return { items: c.items, merge: true, mergeKey: c.listType === 'map' ? (c.keys?.[0] ?? '') : '' }
}

/**
 * Applies a strategic merge patch to `live` as kube-apiserver does, and returns the patched
 * object (fresh; neither argument is modified). The result is what the server then decodes into
 * its typed object: directive keys that survive the merge (`$retainKeys` in a new map, …) and
 * `null` values in added content do not exist in a typed object, so they are dropped.
 */
export function strategicMergePatch(live: KubeObject, patch: unknown, topology: Topology): KubeObject {
  return dropUntyped(applyStrategicPatch(live as unknown as JsonObject, patch, topology)) as unknown as KubeObject
}

/**
 * `StrategicMergeMapPatchUsingLookupPatchMeta` itself (MergeParallelList and
 * IgnoreUnmatchedNulls on): the merged map, exactly as upstream returns it. Throws
 * {@link StrategicPatchError}.
 */
export function applyStrategicPatch(original: JsonObject, patch: unknown, topology: Topology): JsonObject {
  if (!isObject(patch)) throw new StrategicPatchError('strategic merge patch must be a JSON object', 400)
  return mergeMap(clone(original), clone(patch), topology)
}

function dropUntyped(v: Json): Json {
  if (Array.isArray(v)) return v.map(dropUntyped)
  if (!isObject(v)) return v
  for (const k of Object.keys(v)) {
    const x = v[k] as Json
    if (k.startsWith('$') || x === null) delete v[k]
    else v[k] = dropUntyped(x)
  }
  return v
}

function mergeMap(original: JsonObject | undefined, patch: JsonObject, t: Topology): JsonObject {
  if (Object.hasOwn(patch, DIRECTIVE)) {
    const directive = patch[DIRECTIVE]
    if (directive === 'replace') {
      delete patch[DIRECTIVE]
      return patch
    }
    if (directive === 'delete') return {}
    throw errBadPatchType(directive, patch)
  }
  const out = original ?? {}
  applyRetainKeysDirective(out, patch)
  mergePatchIntoOriginal(out, patch, t)
  for (let k of Object.keys(patch)) {
    const patchV = patch[k] as Json
    let isDeleteList = false
    if (k.startsWith(`${DELETE_FROM}/`)) {
      k = k.slice(DELETE_FROM.length + 1)
      isDeleteList = true
    } else if (k.startsWith(DELETE_FROM)) throw badPrimitiveList()
    if (patchV === null) {
      delete out[k]
      continue
    }
    if (!Object.hasOwn(out, k) || goType(out[k]) !== goType(patchV)) {
      if (!isDeleteList) {
        discardNullValuesFromPatch(patchV)
        const [v, keep] = removeDirectives(patchV)
        if (keep) out[k] = v
        else delete out[k]
      }
      continue
    }
    const cur = out[k] as Json
    if (isObject(cur)) out[k] = mergeMap(cur, patchV as JsonObject, childTopology(t, k))
    else if (Array.isArray(cur)) {
      const meta = sliceMeta(t, k)
      out[k] = mergeSliceHandler(cur, patchV as Json[], meta.items, meta.merge, meta.mergeKey, isDeleteList)
    } else {
      const [v, keep] = removeDirectives(patchV)
      if (keep) out[k] = v
      else delete out[k]
    }
  }
  return out
}

function discardNullValuesFromPatch(v: Json): void {
  if (Array.isArray(v)) for (const x of v) discardNullValuesFromPatch(x)
  else if (isObject(v))
    for (const k of Object.keys(v)) {
      const x = v[k] as Json
      if (x === null) delete v[k]
      else discardNullValuesFromPatch(x)
    }
}

/** Drops every map holding `$patch` (and what it is in); whether the value itself is kept. */
function removeDirectives(obj: Json): [Json, boolean] {
  if (isObject(obj)) {
    if (Object.hasOwn(obj, DIRECTIVE)) return [null, false]
    for (const k of Object.keys(obj)) {
      const [v, keep] = removeDirectives(obj[k] as Json)
      if (keep) obj[k] = v
      else delete obj[k]
    }
    return [obj, true]
  }
  if (Array.isArray(obj)) {
    const res: Json[] = []
    for (const x of obj) {
      const [v, keep] = removeDirectives(x)
      if (keep) res.push(v)
    }
    return [res, true]
  }
  return [obj, true]
}

function applyRetainKeysDirective(original: JsonObject, patch: JsonObject): void {
  if (!Object.hasOwn(patch, RETAIN_KEYS)) return
  const list = patch[RETAIN_KEYS]
  delete patch[RETAIN_KEYS]
  if (!Array.isArray(list)) throw badRetainKeys()
  const keep = new Set<Json>(list)
  for (const k of Object.keys(patch)) {
    if (patch[k] === null || k.startsWith(DELETE_FROM) || k.startsWith(SET_ORDER)) continue
    if (!keep.has(k)) throw badRetainKeys()
  }
  for (const k of Object.keys(original)) if (!keep.has(k)) delete original[k]
}

/** The `$setElementOrder/<field>` lists: merges each with its field's patch list, in the order they give. */
function mergePatchIntoOriginal(original: JsonObject, patch: JsonObject, t: Topology): void {
  for (const key of Object.keys(patch)) {
    if (!key.startsWith(SET_ORDER)) continue
    const order = patch[key] as Json
    delete patch[key]
    if (!Array.isArray(order)) throw errBadArgType('[]interface {}', order)
    if (!key.startsWith(`${SET_ORDER}/`)) throw badSetOrder()
    const field = key.slice(SET_ORDER.length + 1)
    const foundOriginal = Object.hasOwn(original, field)
    const foundPatch = Object.hasOwn(patch, field)
    const originalList = original[field]
    const patchList = patch[field]
    if (foundOriginal && !Array.isArray(originalList)) throw errBadArgType('[]interface {}', originalList)
    if (foundPatch && !Array.isArray(patchList)) throw errBadArgType('[]interface {}', patchList)
    const originalValue = foundOriginal ? (originalList as Json[]) : []
    const patchValue = foundPatch ? (patchList as Json[]) : []
    const meta = sliceMeta(t, field)
    validatePatchWithSetOrderList(patchValue, order, meta.mergeKey)
    let merged: Json[]
    if (foundOriginal && !foundPatch) merged = originalValue
    else if (!foundOriginal && foundPatch) merged = removeDirectives(patchValue)[0] as Json[]
    else if (foundOriginal && foundPatch) merged = mergeSliceHandler(originalValue, patchValue, meta.items, meta.merge, meta.mergeKey, false)
    else continue
    const [patchItems, serverOnly] = meta.mergeKey === '' ? partitionPrimitives(merged, order) : partitionMaps(merged, order, meta.mergeKey)
    const kind = sliceElementType(originalValue, patchValue)
    original[field] = normalizeElementOrder(patchItems, serverOnly, order, originalValue, meta.mergeKey, kind)
    delete patch[field]
  }
}

function validatePatchWithSetOrderList(patchList: Json[], order: Json[], mergeKey: string): void {
  if (order.length === 0 || patchList.length === 0) return
  const nonDelete = mergeKey === '' ? patchList : extractToDeleteItems(patchList)[0]
  let p = 0
  let s = 0
  while (p < nonDelete.length && s < order.length) {
    const item = nonDelete[p] as Json
    if (isObject(item) && Object.hasOwn(item, DIRECTIVE)) {
      p++
      continue
    }
    if (mergeKeyValueEqual(item, order[s] as Json, mergeKey)) p++
    s++
  }
  if (p < nonDelete.length && s >= order.length) {
    throw new StrategicPatchError(`The order in patch list:\n${goV(patchList)}\n doesn't match ${SET_ORDER} list:\n${goV(order)}\n`)
  }
}

function mergeKeyValueEqual(left: Json, right: Json, mergeKey: string): boolean {
  if (mergeKey === '') return left === right
  if (!isObject(left)) throw errBadArgType('map[string]interface {}', left)
  if (!isObject(right)) throw errBadArgType('map[string]interface {}', right)
  if (!Object.hasOwn(left, mergeKey)) throw errNoMergeKey(left, mergeKey)
  if (!Object.hasOwn(right, mergeKey)) throw errNoMergeKey(right, mergeKey)
  return left[mergeKey] === right[mergeKey]
}

function extractToDeleteItems(list: Json[]): [Json[], Json[]] {
  const nonDelete: Json[] = []
  const toDelete: Json[] = []
  for (const v of list) {
    if (!isObject(v)) throw errBadArgType('map[string]interface {}', v)
    if (v[DIRECTIVE] === 'delete') toDelete.push(v)
    else nonDelete.push(v)
  }
  return [nonDelete, toDelete]
}

function partitionPrimitives(list: Json[], by: Json[]): [Json[], Json[]] {
  const inPatch = new Set(by)
  return [list.filter((v) => inPatch.has(v)), list.filter((v) => !inPatch.has(v))]
}

function partitionMaps(list: Json[], by: Json[], mergeKey: string): [Json[], Json[]] {
  const patch: Json[] = []
  const serverOnly: Json[] = []
  for (const v of list) {
    if (!isObject(v)) throw errBadArgType('map[string]interface {}', v)
    if (!Object.hasOwn(v, mergeKey)) throw errNoMergeKey(v, mergeKey)
    if (findByKey(by, mergeKey, v[mergeKey] as Json) >= 0) patch.push(v)
    else serverOnly.push(v)
  }
  return [patch, serverOnly]
}

/** findMapInSliceBasedOnKeyValue: the index of the first map whose `key` is `value`, or -1. */
function findByKey(list: Json[], key: string, value: Json): number {
  for (let i = 0; i < list.length; i++) {
    const v = list[i] as Json
    if (!isObject(v)) throw new StrategicPatchError(`value for key ${i} is not a map`)
    if (Object.hasOwn(v, key) && v[key] === value) return i
  }
  return -1
}

type Kind = 'map' | 'scalar'

/** sliceElementType: every element of the same JSON type, and no lists of lists. */
function sliceElementType(...slices: Json[][]): Kind {
  let prev: string | undefined
  for (const s of slices) {
    for (const v of s) {
      const cur = goType(v)
      if (prev === undefined) {
        prev = cur
        if (Array.isArray(v)) throw new StrategicPatchError('lists of lists are not supported', 422)
      } else if (prev !== cur) throw new StrategicPatchError(`list element types are not identical: ${goV(slices)}`)
    }
  }
  if (prev === undefined) throw new StrategicPatchError('no elements in any of the given slices')
  return prev === 'map[string]interface {}' ? 'map' : 'scalar'
}

function mergeSliceHandler(original: Json[], patch: Json[], items: Topology, merge: boolean, mergeKey: string, isDeleteList: boolean): Json[] {
  if (merge || isDeleteList) return mergeSlice(original, patch, items, mergeKey, isDeleteList)
  return patch
}

function mergeSlice(original: Json[], patch: Json[], items: Topology, mergeKey: string, isDeleteList: boolean): Json[] {
  if (original.length === 0 && patch.length === 0) return original
  const kind = sliceElementType(original, patch)
  let merged: Json[]
  let orig = original
  let pat = patch
  if (kind !== 'map') {
    if (isDeleteList) {
      const drop = new Set(patch)
      return original.filter((v) => !drop.has(v))
    }
    merged = deduplicateScalars([...original, ...patch])
  } else {
    if (mergeKey === '') throw new StrategicPatchError('cannot merge lists without merge key for struct')
    const replaced = patch.some((v) => isObject(v) && v[DIRECTIVE] === 'replace')
    ;[orig, pat] = mergeSliceWithSpecialElements(original, patch, mergeKey)
    merged = mergeSliceWithoutSpecialElements(replaced ? orig : original, orig, pat, mergeKey, items)
  }
  const [patchItems, serverOnly] = mergeKey === '' ? partitionPrimitives(merged, pat) : partitionMaps(merged, pat, mergeKey)
  return normalizeElementOrder(patchItems, serverOnly, pat, orig, mergeKey, kind)
}

/** Go's deduplicateScalars, which moves the last element into each duplicate's place. */
function deduplicateScalars(s: Json[]): Json[] {
  let length = s.length - 1
  for (let i = 0; i < length; i++) {
    for (let j = i + 1; j <= length; j++) {
      if (s[i] === s[j]) {
        s[j] = s[length] as Json
        s.length = length
        length--
        j--
      }
    }
  }
  return s
}

/**
 * Handles the `$patch` items of a list of maps. Like Go's `append(s[:i], s[i+1:]...)`, a deletion
 * shifts the items of `original` in place (the caller's view keeps its length and sees the shift):
 * upstream's orderings depend on it. Returns the working items (a fresh array) and the patch
 * without special items.
 */
function mergeSliceWithSpecialElements(original: Json[], patch: Json[], mergeKey: string): [Json[], Json[]] {
  const rest: Json[] = []
  let len = original.length
  let replace = false
  for (const v of patch) {
    const m = v as JsonObject
    if (!Object.hasOwn(m, DIRECTIVE)) {
      rest.push(v)
      continue
    }
    const directive = m[DIRECTIVE]
    if (directive === 'delete') {
      if (!Object.hasOwn(m, mergeKey)) throw errNoMergeKey(m, mergeKey)
      const value = m[mergeKey] as Json
      for (let i = findByKey(original.slice(0, len), mergeKey, value); i >= 0; i = findByKey(original.slice(0, len), mergeKey, value)) {
        for (let k = i; k < len - 1; k++) original[k] = original[k + 1] as Json
        len--
      }
    } else if (directive === 'replace') replace = true
    else if (directive === 'merge') throw new StrategicPatchError('merging lists cannot yet be specified in the patch')
    else throw errBadPatchType(directive, m)
  }
  return replace ? [rest, []] : [original.slice(0, len), rest]
}

/**
 * Merges the patch items into `working` by key, appending new ones. `backing` is the caller's
 * list: as with Go's append into a slice shortened by deletions, what lands below its length is
 * visible there.
 */
function mergeSliceWithoutSpecialElements(backing: Json[], working: Json[], patch: Json[], mergeKey: string, items: Topology): Json[] {
  const out = [...working]
  for (const v of patch) {
    const m = v as JsonObject
    if (!Object.hasOwn(m, mergeKey)) throw errNoMergeKey(m, mergeKey)
    const i = findByKey(out, mergeKey, m[mergeKey] as Json)
    if (i >= 0) out[i] = mergeMap(out[i] as JsonObject, m, items)
    else out.push(v)
  }
  for (let i = 0; i < Math.min(out.length, backing.length); i++) backing[i] = out[i] as Json
  return out
}

/** normalizeElementOrder: the patch items in the patch's order, the server-only items in the live order, interleaved. */
function normalizeElementOrder(patch: Json[], serverOnly: Json[], patchOrder: Json[], serverOrder: Json[], mergeKey: string, kind: Kind): Json[] {
  const p = normalizeSliceOrder(patch, patchOrder, mergeKey, kind)
  const s = normalizeSliceOrder(serverOnly, serverOrder, mergeKey, kind)
  return mergeSortedSlice(s, p, serverOrder, mergeKey, kind)
}

function indexOf(list: Json[], v: Json, mergeKey: string, kind: Kind): number {
  const val = (x: Json): Json => (kind === 'map' ? (isObject(x) ? (x[mergeKey] ?? null) : null) : x)
  const want = val(v)
  for (let i = 0; i < list.length; i++) if (val(list[i] as Json) === want) return i
  return -1
}

function mergeSortedSlice(left: Json[], right: Json[], serverOrder: Json[], mergeKey: string, kind: Kind): Json[] {
  const out: Json[] = []
  let i = 0
  let j = 0
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++] as Json)
    else if (j >= right.length) out.push(left[i++] as Json)
    else {
      const li = indexOf(serverOrder, left[i] as Json, mergeKey, kind)
      const ri = indexOf(serverOrder, right[j] as Json, mergeKey, kind)
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++] as Json)
      else out.push(right[j++] as Json)
    }
  }
  return out
}

function normalizeSliceOrder(toSort: Json[], order: Json[], mergeKey: string, kind: Kind): Json[] {
  let items = [...toSort]
  let toDelete: Json[] = []
  if (kind === 'map') {
    for (const list of [items, order]) {
      for (const item of list) {
        if (!isObject(item)) throw errBadArgType('map[string]interface {}', item)
        if (!Object.hasOwn(item, mergeKey)) throw errNoMergeKey(item, mergeKey)
      }
    }
    ;[items, toDelete] = extractToDeleteItems(items)
  }
  // Go's sort.SliceStable with upstream's comparator, which is not an ordering when an item is
  // missing from `order`: the algorithm has to be Go's for the result to be the same.
  sliceStable(items, (a, b) => {
    const ia = indexOf(order, a, mergeKey, kind)
    if (ia >= 0) {
      const ib = indexOf(order, b, mergeKey, kind)
      if (ib >= 0) return ia < ib
    }
    return true
  })
  return [...items, ...toDelete]
}

/** Go's sort.SliceStable (insertion sort in blocks of 20, then SymMerge), in place. */
function sliceStable<T>(data: T[], less: (a: T, b: T) => boolean): void {
  const n = data.length
  const lessAt = (i: number, j: number): boolean => less(data[i] as T, data[j] as T)
  const swap = (i: number, j: number): void => {
    const x = data[i] as T
    data[i] = data[j] as T
    data[j] = x
  }
  const insertionSort = (a: number, b: number): void => {
    for (let i = a + 1; i < b; i++) for (let j = i; j > a && lessAt(j, j - 1); j--) swap(j, j - 1)
  }
  const swapRange = (a: number, b: number, count: number): void => {
    for (let i = 0; i < count; i++) swap(a + i, b + i)
  }
  const rotate = (a: number, m: number, b: number): void => {
    let i = m - a
    let j = b - m
    while (i !== j) {
      if (i > j) {
        swapRange(m - i, m, j)
        i -= j
      } else {
        swapRange(m - i, m + j - i, i)
        j -= i
      }
    }
    swapRange(m - i, m, i)
  }
  const symMerge = (a: number, m: number, b: number): void => {
    if (m - a === 1) {
      let i = m
      let j = b
      while (i < j) {
        const h = (i + j) >>> 1
        if (lessAt(h, a)) i = h + 1
        else j = h
      }
      for (let k = a; k < i - 1; k++) swap(k, k + 1)
      return
    }
    if (b - m === 1) {
      let i = a
      let j = m
      while (i < j) {
        const h = (i + j) >>> 1
        if (!lessAt(m, h)) i = h + 1
        else j = h
      }
      for (let k = m; k > i; k--) swap(k, k - 1)
      return
    }
    const mid = (a + b) >>> 1
    const nn = mid + m
    let start: number
    let r: number
    if (m > mid) {
      start = nn - b
      r = mid
    } else {
      start = a
      r = m
    }
    const p = nn - 1
    while (start < r) {
      const c = (start + r) >>> 1
      if (!lessAt(p - c, c)) start = c + 1
      else r = c
    }
    const end = nn - start
    if (start < m && m < end) rotate(start, m, end)
    if (a < start && start < mid) symMerge(a, start, mid)
    if (mid < end && end < b) symMerge(mid, end, b)
  }
  let blockSize = 20
  let a = 0
  let b = blockSize
  while (b <= n) {
    insertionSort(a, b)
    a = b
    b += blockSize
  }
  insertionSort(a, n)
  while (blockSize < n) {
    a = 0
    b = 2 * blockSize
    while (b <= n) {
      symMerge(a, a + blockSize, b)
      a = b
      b += 2 * blockSize
    }
    const m = a + blockSize
    if (m < n) symMerge(a, m, n)
    blockSize *= 2
  }
}
