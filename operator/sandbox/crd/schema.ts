/**
 * A CRD's structural OpenAPI v3 schema applied to custom resources the way kube-apiserver does:
 * pruning of unknown fields, dropping of non-nullable nulls, `default`s, and validation with the
 * exact field paths and messages of kube-openapi's validator as apiextensions-apiserver renders
 * them (`field.ErrorList`).
 *
 * The schema is walked here rather than compiled with ajv: ajv reports JSON pointers and its own
 * messages, does not know `nullable`, `x-kubernetes-int-or-string`, embedded resources or list
 * types, and runs its checks in a different order — translating back would cost more than the
 * walk and still get paths like `spec.items[0].name` and the `Invalid value: …` prefixes wrong.
 */
import type { FieldCause, Json, JsonObject } from '../types.ts'

/** One node of a CRD's `openAPIV3Schema` (the parts the sandbox honours). */
export interface Schema {
  type?: string
  format?: string
  nullable?: boolean
  description?: string
  properties?: Record<string, Schema>
  additionalProperties?: Schema | boolean
  items?: Schema
  required?: string[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  multipleOf?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  enum?: Json[]
  minItems?: number
  maxItems?: number
  minProperties?: number
  maxProperties?: number
  default?: Json
  allOf?: Schema[]
  anyOf?: Schema[]
  oneOf?: Schema[]
  not?: Schema
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-embedded-resource'?: boolean
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-map-type'?: 'atomic' | 'granular'
  'x-kubernetes-validations'?: { rule?: string; message?: string; messageExpression?: string; reason?: string; fieldPath?: string; optionalOldSelf?: boolean }[]
}

/** The fields of ObjectMeta; anything else under `metadata` is dropped like the real decoder does. */
const objectMetaFields = new Set([
  'name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion', 'generation', 'creationTimestamp',
  'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'ownerReferences', 'finalizers', 'managedFields',
])

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function child(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`
}

// ---------------------------------------------------------------------------------------------
// Pruning

/**
 * Removes fields the schema does not declare (structural pruning), in place. The root's
 * apiVersion/kind/metadata and those of embedded resources are kept; `metadata` keeps only
 * ObjectMeta's fields. Returns the pruned paths (`spec.foo`, `spec.items[0].bar`) in the order met.
 */
export function pruneObject(obj: JsonObject, schema: Schema): string[] {
  const pruned: string[] = []
  pruneResource(obj, schema, '', pruned)
  return pruned
}

function pruneResource(obj: JsonObject, schema: Schema, path: string, pruned: string[]): void {
  const meta = obj['metadata']
  if (isObject(meta)) {
    for (const k of Object.keys(meta)) {
      if (!objectMetaFields.has(k)) {
        delete meta[k]
        pruned.push(child(child(path, 'metadata'), k))
      }
    }
  }
  const props = schema.properties ?? {}
  for (const k of Object.keys(obj)) {
    if (k === 'apiVersion' || k === 'kind' || k === 'metadata') continue
    const s = props[k]
    if (s) pruneValue(obj[k], s, child(path, k), pruned)
    else if (!schema['x-kubernetes-preserve-unknown-fields']) {
      delete obj[k]
      pruned.push(child(path, k))
    }
  }
}

function pruneValue(value: unknown, schema: Schema, path: string, pruned: string[]): void {
  if (Array.isArray(value)) {
    if (schema.items) value.forEach((v, i) => pruneValue(v, schema.items as Schema, `${path}[${i}]`, pruned))
    return
  }
  if (!isObject(value)) return
  if (schema['x-kubernetes-embedded-resource']) {
    pruneResource(value, schema, path, pruned)
    return
  }
  if (schema.properties) {
    for (const k of Object.keys(value)) {
      // Own keys only: `__proto__` or `constructor` in a body are ordinary keys, not the schema's prototype.
      const s = Object.hasOwn(schema.properties, k) ? schema.properties[k] : undefined
      if (s) pruneValue(value[k], s, child(path, k), pruned)
      else if (!schema['x-kubernetes-preserve-unknown-fields']) {
        delete value[k]
        pruned.push(child(path, k))
      }
    }
    return
  }
  const ap = schema.additionalProperties
  if (typeof ap === 'object') {
    for (const k of Object.keys(value)) pruneValue(value[k], ap, child(path, k), pruned)
    return
  }
  if (ap === true || schema['x-kubernetes-preserve-unknown-fields'] || schema['x-kubernetes-int-or-string']) return
  // A declared object without properties: everything inside is unknown.
  if (schema.type === 'object') {
    for (const k of Object.keys(value)) {
      delete value[k]
      pruned.push(child(path, k))
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Null dropping and defaulting

function isNonNullableNull(v: unknown, s: Schema): boolean {
  return v === null && !s.nullable
}

/** Drops nulls of non-nullable fields without a default (`PruneNonNullableNullsWithoutDefaults`). */
export function dropNulls(value: unknown, schema: Schema): void {
  if (Array.isArray(value)) {
    if (schema.items) for (const v of value) dropNulls(v, schema.items)
    return
  }
  if (!isObject(value)) return
  const ap = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined
  for (const k of Object.keys(value)) {
    const s = schema.properties?.[k] ?? ap
    if (!s) continue
    if (isNonNullableNull(value[k], s) && s.default === undefined) delete value[k]
    else dropNulls(value[k], s)
  }
}

/** Applies schema `default`s in place, top-down, so defaults inside a defaulted object apply too. */
export function applyDefaults(value: unknown, schema: Schema): void {
  if (Array.isArray(value)) {
    const items = schema.items
    if (!items) return
    for (let i = 0; i < value.length; i++) {
      if (items.default !== undefined && isNonNullableNull(value[i], items)) value[i] = structuredClone(items.default)
      applyDefaults(value[i], items)
    }
    return
  }
  if (!isObject(value)) return
  if (schema.properties) {
    for (const [k, s] of Object.entries(schema.properties)) {
      if (s.default === undefined) continue
      if (!(k in value) || isNonNullableNull(value[k], s)) value[k] = structuredClone(s.default)
    }
  }
  const ap = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined
  for (const k of Object.keys(value)) {
    const s = schema.properties?.[k] ?? ap
    if (!s) continue
    if (s === ap && s.default !== undefined && isNonNullableNull(value[k], s)) value[k] = structuredClone(s.default)
    applyDefaults(value[k], s)
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering values the way Go's fmt and apimachinery's field.Error do

/**
 * Go's `%v` of a float64: strconv's shortest 'g', which switches to exponent form when the
 * exponent is below -4 or at least 6 (`1e+06`, `1.5e-05`) — how kube-openapi prints bounds.
 */
export function goFloat(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN'
  if (n === 0) return Object.is(n, -0) ? '-0' : '0'
  const exp = Number(n.toExponential().split('e')[1])
  if (exp < -4 || exp >= 6) {
    const [mant, e] = n.toExponential().split('e') as [string, string]
    const sign = e.startsWith('-') ? '-' : '+'
    const digits = e.replace(/^[-+]/, '').padStart(2, '0')
    return `${mant}e${sign}${digits}`
  }
  return String(n)
}

/** Go's `%#v` of a decoded JSON value (maps sorted by key), as field.Error prints non-scalars. */
export function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)'
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v)
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharpV).join(', ')}}`
  const o = v as Record<string, unknown>
  const keys = Object.keys(o).sort()
  return `map[string]interface {}{${keys.map((k) => `${JSON.stringify(k)}:${goSharpV(o[k])}`).join(', ')}}`
}

/** How field.Error renders a bad value after `Invalid value: `. */
export function badValue(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : goFloat(v)
  if (typeof v === 'boolean') return String(v)
  return goSharpV(v)
}

/** field.Invalid */
export function invalid(field: string, value: unknown, detail: string): FieldCause {
  return { reason: 'FieldValueInvalid', message: `Invalid value: ${badValue(value)}${detail ? `: ${detail}` : ''}`, field }
}
/** field.Required */
export function required(field: string, detail = ''): FieldCause {
  return { reason: 'FieldValueRequired', message: `Required value${detail ? `: ${detail}` : ''}`, field }
}
/** field.NotSupported */
export function notSupported(field: string, value: unknown, supported: string[]): FieldCause {
  const detail = supported.length > 0 ? `: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}` : ''
  return { reason: 'FieldValueNotSupported', message: `Unsupported value: ${badValue(value)}${detail}`, field }
}
/** field.Forbidden */
export function forbidden(field: string, detail: string): FieldCause {
  return { reason: 'FieldValueForbidden', message: `Forbidden: ${detail}`, field }
}
/** field.Duplicate */
export function duplicate(field: string, value: unknown): FieldCause {
  return { reason: 'FieldValueDuplicate', message: `Duplicate value: ${badValue(value)}`, field }
}

// ---------------------------------------------------------------------------------------------
// Validation

/** The JSON type name kube-openapi infers for a decoded value (integers decode as int64). */
function jsonType(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  if (typeof v === 'object') return 'object'
  return typeof v // string, boolean
}

const patternCache = new WeakMap<Schema, RegExp | null>()
function patternOf(s: Schema): RegExp | null {
  let re = patternCache.get(s)
  if (re === undefined) {
    try {
      re = new RegExp(s.pattern as string, 'u')
    } catch {
      re = null
    }
    patternCache.set(s, re)
  }
  return re
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/
const formatChecks: Record<string, (s: string) => boolean> = {
  'date-time': (s) => rfc3339.test(s) && !Number.isNaN(Date.parse(s)),
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s)),
  uuid: (s) => /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i.test(s),
  byte: (s) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s),
  ipv4: (s) => /^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(s),
  hostname: (s) => s.length <= 255 && /^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*\.?$/.test(s),
}

function typeNames(s: Schema): string[] {
  if (s['x-kubernetes-int-or-string']) return ['integer', 'string']
  return s.type ? [s.type] : []
}

/**
 * Validates a value against a schema node, appending kube-openapi's errors in its order for one
 * node: type, string, format, number, items, enum, object (properties, then required).
 */
function validateNode(v: unknown, s: Schema, path: string, out: FieldCause[]): void {
  const types = typeNames(s)
  const name = path === '' ? '' : path
  if (v === null || v === undefined) {
    if (types.length > 0 && !s.nullable) typeInvalid(out, path, 'null', `${name} in body must be of type ${types.join(',')}: "null"`)
    enumCheck(v, s, path, out)
    return
  }
  const t = jsonType(v)
  if (types.length > 0) {
    const ok = types.includes(t) || (t === 'integer' && types.includes('number'))
    if (!ok) typeInvalid(out, path, t, `${name} in body must be of type ${types.join(',')}: ${JSON.stringify(t)}`)
  }
  if (typeof v === 'string') {
    const len = [...v].length
    if (s.maxLength !== undefined && len > s.maxLength) {
      out.push({ reason: 'FieldValueTooLong', message: `Too long: may not be more than ${s.maxLength} bytes`, field: path })
    }
    if (s.minLength !== undefined && len < s.minLength) out.push(invalid(path, v, `${name} in body should be at least ${s.minLength} chars long`))
    if (s.pattern !== undefined) {
      const re = patternOf(s)
      if (re && !re.test(v)) out.push(invalid(path, v, `${name} in body should match '${s.pattern}'`))
    }
    const check = s.format ? formatChecks[s.format] : undefined
    if (check && !check(v)) typeInvalid(out, path, v, `${name} in body must be of type ${s.format}: ${JSON.stringify(v)}`)
  }
  if (typeof v === 'number') numberChecks(v, s, path, name, out)
  if (Array.isArray(v)) {
    if (s.items) v.forEach((item, i) => validateNode(item, s.items as Schema, `${path}[${i}]`, out))
    if (s.minItems !== undefined && v.length < s.minItems) out.push(invalid(path, v.length, `${name} in body should have at least ${s.minItems} items`))
    if (s.maxItems !== undefined && v.length > s.maxItems) {
      out.push({ reason: 'FieldValueTooMany', message: `Too many: ${v.length}: must have at most ${s.maxItems} items`, field: path })
    }
  }
  enumCheck(v, s, path, out)
  for (const sub of s.allOf ?? []) validateNode(v, sub, path, out)
  alternatives(v, s, path, out)
  if (isObject(v)) objectChecks(v, s, path, name, out)
}

/**
 * anyOf / oneOf / not. kube-openapi reports these as plain errors, not field errors, so
 * apiextensions renders them against a nil path: `<nil>: Invalid value: "": "spec.x" must …`,
 * followed by the errors of the closest alternative.
 */
function alternatives(v: unknown, s: Schema, path: string, out: FieldCause[]): void {
  const composite = (message: string): FieldCause => ({ reason: 'FieldValueInvalid', message: `Invalid value: "": ${message}`, field: '<nil>' })
  const run = (sub: Schema) => {
    const errs: FieldCause[] = []
    validateNode(v, sub, path, errs)
    return errs
  }
  const closest = (results: FieldCause[][]) => results.reduce((a, b) => (b.length < a.length ? b : a))
  if (s.anyOf && s.anyOf.length > 0) {
    const results = s.anyOf.map(run)
    if (!results.some((r) => r.length === 0)) out.push(composite(`${JSON.stringify(path)} must validate at least one schema (anyOf)`), ...closest(results))
  }
  if (s.oneOf && s.oneOf.length > 0) {
    const results = s.oneOf.map(run)
    const valid = results.filter((r) => r.length === 0).length
    if (valid === 0) out.push(composite(`${JSON.stringify(path)} must validate one and only one schema (oneOf)`), ...closest(results))
    else if (valid > 1) out.push(composite(`${JSON.stringify(path)} must validate one and only one schema (oneOf). Found ${valid} valid alternatives`))
  }
  if (s.not && run(s.not).length === 0) out.push(composite(`${JSON.stringify(path)} must not validate the schema (not)`))
}

function typeInvalid(out: FieldCause[], path: string, value: unknown, detail: string): void {
  out.push({ reason: 'FieldValueTypeInvalid', message: `Invalid value: ${badValue(value)}: ${detail}`, field: path })
}

function numberChecks(v: number, s: Schema, path: string, name: string, out: FieldCause[]): void {
  // An integer is compared against an integral bound and printed as one (ExceedsMinimumInt).
  const bound = (b: number) => (Number.isInteger(v) ? String(Math.trunc(b)) : goFloat(b))
  if (s.multipleOf !== undefined && s.multipleOf > 0) {
    const q = v / s.multipleOf
    if (Math.abs(q - Math.round(q)) > 1e-9) out.push(invalid(path, v, `${name} in body should be a multiple of ${goFloat(s.multipleOf)}`))
  }
  if (s.maximum !== undefined) {
    if (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum) {
      out.push(invalid(path, v, `${name} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${bound(s.maximum)}`))
    }
  }
  if (s.minimum !== undefined) {
    if (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum) {
      out.push(invalid(path, v, `${name} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${bound(s.minimum)}`))
    }
  }
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const bb = b as unknown[]
    return a.length === bb.length && a.every((x, i) => jsonEqual(x, bb[i]))
  }
  const ao = a as Record<string, unknown>
  const bo = b as Record<string, unknown>
  const ak = Object.keys(ao)
  return ak.length === Object.keys(bo).length && ak.every((k) => k in bo && jsonEqual(ao[k], bo[k]))
}

function enumCheck(v: unknown, s: Schema, path: string, out: FieldCause[]): void {
  if (!s.enum || s.enum.length === 0) return
  if (s.enum.some((e) => jsonEqual(e, v))) return
  out.push(notSupported(path, v, s.enum.map((e) => (typeof e === 'string' ? e : JSON.stringify(e)))))
}

function objectChecks(v: JsonObject, s: Schema, path: string, name: string, out: FieldCause[]): void {
  const n = Object.keys(v).length
  if (s.minProperties !== undefined && n < s.minProperties) {
    out.push(invalid(path, n, `${name} in body should have at least ${s.minProperties} properties`))
    return
  }
  if (s.maxProperties !== undefined && n > s.maxProperties) {
    out.push({ reason: 'FieldValueTooMany', message: `Too many: ${n}: must have at most ${s.maxProperties} items`, field: path })
    return
  }
  const props = s.properties ?? {}
  const ap = s.additionalProperties
  if (typeof ap === 'object') {
    for (const [k, val] of Object.entries(v)) if (!Object.hasOwn(props, k)) validateNode(val, ap, child(path, k), out)
  }
  const embedded = s['x-kubernetes-embedded-resource'] === true
  for (const [k, ps] of Object.entries(props)) {
    if (embedded && k === 'metadata') continue
    if (Object.hasOwn(v, k)) validateNode(v[k], ps, child(path, k), out)
  }
  for (const k of s.required ?? []) if (!Object.hasOwn(v, k)) out.push(required(child(path, k)))
  if (embedded) embeddedChecks(v, path, out)
  listTypeChecks(v, s, path, out)
}

/** ValidateEmbeddedResource: apiVersion and kind are required, metadata is ObjectMeta. */
function embeddedChecks(v: JsonObject, path: string, out: FieldCause[]): void {
  if (typeof v['apiVersion'] !== 'string' || v['apiVersion'] === '') out.push(required(child(path, 'apiVersion'), 'must not be empty'))
  if (typeof v['kind'] !== 'string' || v['kind'] === '') out.push(required(child(path, 'kind'), 'must not be empty'))
  const meta = v['metadata']
  if (isObject(meta) && typeof meta['name'] === 'string' && meta['name'] !== '') {
    out.push(...validateDNSSubdomain(child(child(path, 'metadata'), 'name'), meta['name']))
  }
}

function listTypeChecks(v: JsonObject, s: Schema, path: string, out: FieldCause[]): void {
  for (const [k, ps] of Object.entries(s.properties ?? {})) {
    const list = v[k]
    if (!Array.isArray(list)) continue
    const lt = ps['x-kubernetes-list-type']
    const p = child(path, k)
    if (lt === 'set') {
      const seen: unknown[] = []
      list.forEach((item, i) => {
        if (seen.some((x) => jsonEqual(x, item))) out.push(duplicate(`${p}[${i}]`, item))
        else seen.push(item)
      })
    } else if (lt === 'map') {
      const keys = ps['x-kubernetes-list-map-keys'] ?? []
      const seen = new Set<string>()
      list.forEach((item, i) => {
        if (!isObject(item)) return
        const kv: Record<string, unknown> = {}
        for (const key of keys) if (key in item) kv[key] = item[key]
        const id = JSON.stringify(keys.map((key) => item[key] ?? null))
        if (seen.has(id)) out.push(duplicate(`${p}[${i}]`, kv))
        else seen.add(id)
      })
    }
  }
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/

/** IsDNS1123Subdomain, one cause per failed rule, as apimachinery words them. */
export function validateDNSSubdomain(field: string, value: string): FieldCause[] {
  const out: FieldCause[] = []
  if (value.length > 253) out.push(invalid(field, value, 'must be no more than 253 characters'))
  if (!dns1123Subdomain.test(value)) {
    out.push(invalid(field, value, "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"))
  }
  return out
}

/**
 * Validates a custom resource against its version's schema: the name (a DNS subdomain, as for
 * every CR), then the schema from the root. Root apiVersion/kind/metadata are not re-checked by
 * the schema beyond what it declares for them.
 */
export function validateObject(obj: JsonObject, schema: Schema): FieldCause[] {
  const out: FieldCause[] = []
  const meta = obj['metadata']
  if (isObject(meta) && typeof meta['name'] === 'string' && meta['name'] !== '') {
    out.push(...validateDNSSubdomain('metadata.name', meta['name']))
  }
  validateNode(obj, schema, '', out)
  return out
}
