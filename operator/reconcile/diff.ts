/**
 * Whether a live object already is what we render: the comparison that decides whether a
 * reconcile sends an apply at all. It answers the question server-side apply would: "would
 * applying `desired` change `live`?"
 *
 * Two ways an apply changes an object:
 * 1. a field we render has another value live (drift, or a new render) — found by comparing the
 *    normalised desired object with the normalised projection of the live one (normalize.ts);
 * 2. a field we applied before is no longer rendered (a removed annotation, env var, the PDB's
 *    field…) — the apply would remove it. The projection cannot see that (it keeps only what we
 *    render), so it is read from our own managedFields entry: every field our manager owns that
 *    the desired object lacks.
 *
 * Fields and list items of other managers (a foreign annotation, a sidecar container injected by
 * a webhook) are not differences: our apply would leave them where they are.
 * `apiVersion` and `kind` are the object's identity, not content (list items may omit them), so
 * they are not compared.
 */
import jsonpatch from 'fast-json-patch'
import type { Operation } from 'fast-json-patch'
import { isMap, jsonEqual, keySegment, listMapKeys, normalize, projectOnto, sameKey, type JsonMap } from './normalize.ts'

/** The field manager of the operator's server-side applies. */
export const FIELD_MANAGER = 'memcached-operator'

/** The result of {@link diffObject}. */
export interface DiffResult {
  /** True when an apply of `desired` would change nothing in `live`. */
  equal: boolean
  /**
   * What would change, as JSON patch operations from the live projection to the desired object
   * (`replace` drifted values, `add` missing ones, `remove` fields we applied before and no longer
   * render). For people and logs: list-map items are addressed by key
   * (`/spec/template/spec/containers/[name="memcached"]/image`), so it is not meant to be applied.
   */
  patch: Operation[]
  /** The changed fields in the API server's field-path syntax, `.spec.template.spec.containers[name="memcached"].image`. */
  fields: string[]
}

/** Options of {@link diffObject}. */
export interface DiffOptions {
  /** Whose managedFields entry tells what was applied before (default {@link FIELD_MANAGER}). */
  manager?: string
}

/**
 * Compares a desired object with the live one. A missing live object (undefined) differs from
 * everything.
 */
export function diffObject(desired: JsonMap, live: JsonMap | undefined, opts: DiffOptions = {}): DiffResult {
  if (live === undefined) return { equal: false, patch: [{ op: 'add', path: '', value: comparable(desired) }], fields: ['.'] }
  const want = comparable(desired)
  const have = comparable(projectOnto(desired, live) as JsonMap)
  const patch: Operation[] = jsonpatch.compare(have, want)
  for (const segments of ownedNotDesired(desired, live, opts.manager ?? FIELD_MANAGER)) {
    patch.push({ op: 'remove', path: toPointer(segments) })
  }
  return { equal: patch.length === 0, patch, fields: patch.map((op) => readablePath(op.path)) }
}

/** The normalised object without its identity fields. */
function comparable(obj: JsonMap): JsonMap {
  const { apiVersion: _a, kind: _k, ...rest } = obj
  return (normalize(rest) as JsonMap | undefined) ?? {}
}

/**
 * The fieldsV1 of `manager`'s Apply entry on the main resource, if any. The controller's cache keeps
 * it as JSON text (controller.ts `childSummary`); the API server's object form is read as well.
 */
export function appliedFields(live: JsonMap, manager: string): JsonMap | undefined {
  const meta = live.metadata
  if (!isMap(meta) || !Array.isArray(meta.managedFields)) return undefined
  for (const entry of meta.managedFields) {
    if (!isMap(entry) || entry.manager !== manager || entry.operation !== 'Apply') continue
    if (entry.subresource !== undefined && entry.subresource !== '') continue
    const fields: unknown = typeof entry.fieldsV1 === 'string' ? JSON.parse(entry.fieldsV1) : entry.fieldsV1
    return isMap(fields) ? fields : undefined
  }
  return undefined
}

/**
 * Fields (as path segments) that `manager` applied and `desired` no longer has: the fields the
 * next apply would remove (unless another manager also owns them; then the apply only drops our
 * ownership, which is still a change worth making once).
 */
export function ownedNotDesired(desired: JsonMap, live: JsonMap, manager: string): string[][] {
  const fields = appliedFields(live, manager)
  const out: string[][] = []
  if (fields) walkOwned(fields, desired, [], [], out)
  return out
}

// fieldsV1 keys: `f:<field>`, `k:<key JSON>` (list-map item), `v:<JSON>` (set item), `i:<n>`
// (an index, only below atomic lists, which we own whole), `.` (the node itself).
function walkOwned(fields: JsonMap, desired: unknown, path: readonly string[], segments: readonly string[], out: string[][]): void {
  for (const [k, child] of Object.entries(fields)) {
    if (k.startsWith('f:')) {
      const name = k.slice(2)
      const has = isMap(desired) && Object.hasOwn(desired, name)
      // A node we own only through its children (no ".") is reported child by child.
      const descend = isMap(child) && Object.keys(child).length > 0 && (has || !Object.hasOwn(child, '.'))
      if (descend) walkOwned(child, has ? desired[name] : undefined, [...path, name], [...segments, name], out)
      else if (!has) out.push([...segments, name])
    } else if (k.startsWith('k:')) {
      const key = parseJson(k.slice(2))
      if (!isMap(key)) continue
      const names = Object.keys(key)
      const keys = listMapKeys(path) ?? names
      const item = Array.isArray(desired) ? desired.find((x): x is JsonMap => isMap(x) && sameKey(keys, x, key)) : undefined
      const segment = keySegment(names, key)
      if (item === undefined) out.push([...segments, segment])
      else if (isMap(child)) walkOwned(child, item, path, [...segments, segment], out)
    } else if (k.startsWith('v:')) {
      const value = parseJson(k.slice(2))
      if (!Array.isArray(desired) || !desired.some((x) => jsonEqual(x, value))) out.push([...segments, `[${k.slice(2)}]`])
    }
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** A JSON pointer (RFC 6901) of path segments. */
function toPointer(segments: readonly string[]): string {
  return segments.map((s) => `/${s.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}

/**
 * A JSON pointer of {@link DiffResult.patch} in the API server's field-path syntax:
 * `/spec/template/spec/containers/[name="x"]/args/2` → `.spec.template.spec.containers[name="x"].args[2]`.
 * Numeric segments are indexes (only atomic lists keep indexes after normalisation; a map key made
 * only of digits, rare in the kinds we manage, reads as an index too).
 */
export function readablePath(pointer: string): string {
  if (pointer === '') return '.'
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((s) => (s.startsWith('[') ? s : /^(0|[1-9][0-9]*)$/.test(s) ? `[${s}]` : `.${s}`))
    .join('')
}
