/**
 * Field errors as apimachinery's field package makes them (`field.Invalid`, `Required`, `Forbidden`,
 * `NotSupported`, `Duplicate`), and bad values printed as Go prints them in those errors.
 */
import type { FieldCause } from '../object.ts'

export function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** `field.Invalid`: `value` is already rendered (see {@link goValue}). */
export function invalid(field: string, value: string, detail: string): FieldCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${value}: ${detail}` }
}

/** `field.Required`, with an optional detail. */
export function required(field: string, detail = ''): FieldCause {
  return { reason: 'FieldValueRequired', field, message: detail === '' ? 'Required value' : `Required value: ${detail}` }
}

/** `field.Forbidden`. */
export function forbiddenField(field: string, detail: string): FieldCause {
  return { reason: 'FieldValueForbidden', field, message: `Forbidden: ${detail}` }
}

/** `field.NotSupported`: `Unsupported value: "x": supported values: "a", "b"`. */
export function notSupported(field: string, value: string, supported: string[]): FieldCause {
  return { reason: 'FieldValueNotSupported', field, message: `Unsupported value: ${value}: supported values: ${supported.map((s) => q(s)).join(', ')}` }
}

/** `field.Duplicate`. */
export function duplicate(field: string, value: string): FieldCause {
  return { reason: 'FieldValueDuplicate', field, message: `Duplicate value: ${value}` }
}

/** Go's `%q`-like quoting, which for plain strings is JSON's. */
export const q = (s: string): string => JSON.stringify(s)

/**
 * A bad value as apimachinery (1.34) prints it in a field error (field/errors.go `ErrorBody`):
 * numbers and booleans plainly, strings quoted, anything else as Go's `json.Marshal` writes it
 * (map keys sorted, `<`, `>`, `&` escaped). Structs must be passed with their fields in Go order.
 */
export function goValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (typeof v === 'string') return q(v)
  return goJson(v)
}

/** Marks an object whose keys are a Go struct's fields in declaration order (not sorted by {@link goJson}). */
const goStruct = Symbol('goStruct')

/** Go's `json.Marshal`: map keys sorted, HTML characters escaped, nil as `null`. */
export function goJson(v: unknown): string {
  const text = JSON.stringify(v ?? null, (_k, x: unknown) => (isObj(x) && !Object.hasOwn(x, goStruct) ? Object.fromEntries(Object.keys(x).sort().map((k) => [k, x[k]])) : x)) ?? 'null'
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** A Go struct value for {@link goJson}: its keys keep their order. */
export function struct(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.defineProperty({ ...fields }, goStruct, { value: true, enumerable: false })
}

/** A label map (`map[string]string`) as Go marshals it; absent is `null`. */
export function goMap(m: unknown): string {
  return goJson(isObj(m) ? m : null)
}
