/**
 * Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds, driven by
 * the same topology as apply: lists that apply merges by key (`patchStrategy: merge`) merge by
 * their first key (the `patchMergeKey`); sets (finalizers) merge as unions; every other list is
 * replaced. Maps and structs always merge (strategic merge ignores `+mapType=atomic`).
 *
 * Directives: `$patch: replace|delete|merge` on maps and list items, `$retainKeys`,
 * `$deleteFromPrimitiveList/<field>`. `$setElementOrder/<field>` is accepted and ignored: merged
 * lists keep the live order with new items appended, which is what a patch without it gives.
 */
import type { Json, JsonObject, KubeObject, Topology } from '../types.ts'
import { clone, deepEqual, isObject } from './json.ts'
import { childTopology, itemTopology } from './walk.ts'

/** A malformed strategic merge patch (the server answers 400/422 with this message). */
export class StrategicPatchError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'StrategicPatchError'
  }
}

/**
 * Applies a strategic merge patch to `live` and returns the patched object (fresh; `live` is not
 * modified). `null` deletes a field.
 */
export function strategicMergePatch(live: KubeObject, patch: unknown, topology: Topology): KubeObject {
  if (!isObject(patch)) throw new StrategicPatchError('strategic merge patch must be a JSON object')
  const out = patchObject(live as unknown as JsonObject, patch, topology)
  return (out ?? {}) as unknown as KubeObject
}

const DELETE_FROM = '$deleteFromPrimitiveList/'
const SET_ORDER = '$setElementOrder/'

function patchObject(original: JsonObject | undefined, patch: JsonObject, t: Topology): JsonObject | undefined {
  const directive = patch.$patch
  if (directive === 'delete') return undefined
  if (directive === 'replace') return stripDirectives(patch) as JsonObject
  if (directive !== undefined && directive !== 'merge') throw new StrategicPatchError(`Unknown patch type: ${String(directive)}`)
  const out: JsonObject = original === undefined ? {} : clone(original)
  const deletions: [string, Json][] = []
  for (const k of Object.keys(patch)) {
    const pv = patch[k] as Json
    if (k === '$patch' || k === '$retainKeys' || k.startsWith(SET_ORDER)) continue
    if (k.startsWith(DELETE_FROM)) {
      deletions.push([k.slice(DELETE_FROM.length), pv])
      continue
    }
    if (pv === null) {
      delete out[k]
      continue
    }
    const v = patchValue(out[k], pv, childTopology(t, k))
    if (v === undefined) delete out[k]
    else out[k] = v
  }
  for (const [field, values] of deletions) {
    const cur = out[field]
    if (!Array.isArray(cur) || !Array.isArray(values)) continue
    out[field] = cur.filter((x) => !values.some((d) => deepEqual(d, x)))
  }
  const retain = patch.$retainKeys
  if (Array.isArray(retain)) {
    for (const k of Object.keys(out)) if (!retain.includes(k)) delete out[k]
  }
  return out
}

function patchValue(original: Json | undefined, pv: Json, t: Topology): Json | undefined {
  if (isObject(pv)) return patchObject(isObject(original) ? original : undefined, pv, t)
  if (Array.isArray(pv) && t.type === 'list' && t.listType !== 'atomic') {
    const cur = Array.isArray(original) ? original : []
    return t.listType === 'map' ? mergeByKey(cur, pv, t) : mergePrimitives(cur, pv)
  }
  return clone(pv)
}

function mergePrimitives(cur: Json[], patch: Json[]): Json[] {
  const out = [...cur]
  for (const v of patch) if (!out.some((x) => deepEqual(x, v))) out.push(v)
  return out
}

function mergeByKey(cur: Json[], patch: Json[], t: Topology): Json[] {
  const key = t.type === 'list' ? t.keys?.[0] : undefined
  if (key === undefined) return patch.map(stripDirectives)
  const it = itemTopology(t)
  if (patch.some((p) => isObject(p) && p.$patch === 'replace')) {
    return patch.filter((p) => !(isObject(p) && p.$patch === 'replace')).map(stripDirectives)
  }
  const out: Json[] = cur.map((x) => clone(x))
  for (const p of patch) {
    if (!isObject(p)) throw new StrategicPatchError(`unable to find api field in struct for the merge key ${JSON.stringify(key)}`)
    const kv = p[key]
    if (kv === undefined) throw new StrategicPatchError(`map: ${JSON.stringify(p)} does not contain declared merge key: ${key}`)
    const i = out.findIndex((x) => isObject(x) && deepEqual(x[key], kv))
    if (p.$patch === 'delete') {
      if (i >= 0) out.splice(i, 1)
      continue
    }
    if (i >= 0) {
      const merged = patchObject(out[i] as JsonObject, p, it)
      if (merged === undefined) out.splice(i, 1)
      else out[i] = merged
    } else {
      const added = patchObject(undefined, p, it)
      if (added !== undefined) out.push(added)
    }
  }
  return out
}

/** A patch value with its directives and nulls removed (content that is added as is). */
function stripDirectives(v: Json): Json {
  if (Array.isArray(v)) return v.map(stripDirectives)
  if (!isObject(v)) return v
  const out: JsonObject = {}
  for (const k of Object.keys(v)) {
    if (k.startsWith('$')) continue
    const x = v[k] as Json
    if (x !== null) out[k] = stripDirectives(x)
  }
  return out
}
