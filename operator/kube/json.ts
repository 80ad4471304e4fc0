/**
 * Small helpers over plain JSON values: deep equality, cloning, type tests. They exist so that
 * the apply algorithms never need `structuredClone` (slow) or a JSON round trip.
 */
import type { Json, JsonObject } from './object.ts'

/** True for a plain JSON object (not null, not an array). */
export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/**
 * Sets `out[k] = v` as an own property whatever the key: an assignment to `__proto__` would set
 * the object's prototype instead (JSON.parse, and Go, make it a member like any other).
 */
export function setMember(out: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true })
  else out[k] = v
}

/** A deep copy of a JSON value; `undefined` object members are left out. */
export function clone<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length)
    for (let i = 0; i < v.length; i++) out[i] = clone(v[i])
    return out as T
  }
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k]
    if (x !== undefined) setMember(out, k, clone(x))
  }
  return out as T
}

/**
 * What a client's JSON would reach the server as: the value sent through `JSON.stringify` and
 * parsed back. Plain JSON values (the common case) are copied directly; anything else (a `toJSON`,
 * a class instance, a non-finite number, a hole or `undefined` in an array) takes the round trip.
 */
export function wireCopy(v: unknown): unknown {
  try {
    return plainCopy(v)
  } catch (e) {
    if (e !== notPlain) throw e
    return JSON.parse(JSON.stringify(v)) as unknown
  }
}

const notPlain = new Error('not plain JSON')

function plainCopy(v: unknown): unknown {
  if (typeof v === 'string' || typeof v === 'boolean' || v === null) return v
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw notPlain
    return v === 0 ? 0 : v
  }
  if (typeof v !== 'object') throw notPlain
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length)
    for (let i = 0; i < v.length; i++) {
      if (!(i in v) || v[i] === undefined) throw notPlain
      out[i] = plainCopy(v[i])
    }
    return out
  }
  const proto = Object.getPrototypeOf(v) as unknown
  if ((proto !== Object.prototype && proto !== null) || typeof (v as { toJSON?: unknown }).toJSON === 'function') throw notPlain
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k]
    if (x === undefined || typeof x === 'function' || typeof x === 'symbol') continue
    setMember(out, k, plainCopy(x))
  }
  return out
}

/**
 * A deep copy without `null` object members: a null in an applied configuration removes the
 * field, the way the API server's typed conversion drops nil pointers.
 */
export function cloneDropNull<T>(v: T): T {
  if (typeof v !== 'object' || v === null) return v
  if (Array.isArray(v)) {
    const out = new Array<unknown>(v.length)
    for (let i = 0; i < v.length; i++) out[i] = cloneDropNull(v[i])
    return out as T
  }
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k]
    if (x !== undefined && x !== null) setMember(out, k, cloneDropNull(x))
  }
  return out as T
}

/**
 * Semantic JSON equality: object member order does not matter, array order does; a member that is
 * `undefined` counts as absent.
 */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b)) return false
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  let na = 0
  for (const k in ao) {
    const x = ao[k]
    if (x === undefined) continue
    na++
    if (!deepEqual(x, bo[k])) return false
  }
  let nb = 0
  for (const k in bo) if (bo[k] !== undefined) nb++
  return na === nb
}

/** The JSON value at `path` (field names) inside `v`, or undefined. */
export function getPath(v: unknown, path: readonly string[]): Json | undefined {
  let cur: unknown = v
  for (const p of path) {
    if (!isObject(cur)) return undefined
    cur = cur[p]
  }
  return cur as Json | undefined
}

/** Compact JSON of an object with its members sorted by name (the spelling of list-map keys). */
export function sortedJson(o: Record<string, Json>): string {
  const keys = Object.keys(o).sort()
  let s = '{'
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string
    if (i > 0) s += ','
    s += JSON.stringify(k) + ':' + JSON.stringify(o[k])
  }
  return s + '}'
}
