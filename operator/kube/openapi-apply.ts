/**
 * A server-side apply configuration converted to a typed value as structured-merge-diff does it
 * (typed/validate.go, over kube-openapi schemaconv's view of upstream's definitions), with its
 * error texts and Go's printing of the values in them.
 */
import { definitionOf, isMap, isSchema, jsonKind, QUANTITY, refName, resolve, SELF_DECODING, type Schema } from './openapi-validate.ts'

/**
 * What converting a server-side apply configuration to a typed value reports (structured-merge-diff
 * typed/validate.go), one string per error: `.data.size: expected string, got
 * &value.valueUnstructured{Value:3}`. Upstream walks maps in Go's random order and stops a map at
 * its first undeclared field; here the order is the document's. Undefined for a kind without a schema.
 */
export function applyErrors(group: string, version: string, kind: string, cfg: Record<string, unknown>): string[] | undefined {
  const schema = definitionOf(group, version, kind)
  if (!schema) return undefined
  const out: string[] = []
  smdValue(schema, cfg, [], out)
  return out
}

/** structured-merge-diff `ValidationErrors.Error()`: one error alone, or `errors:` and one per line. */
export function applyErrorText(errors: readonly string[]): string {
  return errors.length === 1 ? errors[0]! : ['errors:', ...errors.map((e) => `  ${e}`)].join('\n')
}

/** What structured-merge-diff makes of a schema (kube-openapi schemaconv `convertPrimitive`, `parseSchema`), once per schema. */
interface SmdNode {
  scalar?: 'string' | 'numeric' | 'boolean' | 'untyped'
  list?: boolean
  map?: boolean
  /** A free-form map (RawExtension, FieldsV1): anything below. */
  free?: boolean
  props?: Record<string, Schema>
  additional?: Schema
  items?: Schema
  /** A list's keys, sorted: undefined for an atomic list (items named by index), [] for a set. */
  keys?: string[]
}

const smdNodes = new WeakMap<Schema, SmdNode>()

function smdNode(schema: Schema): SmdNode {
  const hit = smdNodes.get(schema)
  if (hit) return hit
  let node: SmdNode
  if (typeof schema.$ref === 'string' && SELF_DECODING.has(refName(schema.$ref))) {
    // Quantity is oneOf string/number (no type: untyped); IntOrString and Time have formats SMD leaves untyped; RawExtension and FieldsV1 are free-form maps.
    const name = refName(schema.$ref)
    node = name.endsWith('RawExtension') || name.endsWith('FieldsV1') ? { map: true, free: true } : name === QUANTITY ? { scalar: 'untyped', list: true, map: true, free: true } : { scalar: 'untyped' }
  } else {
    const s = resolve(schema)
    const props = s.properties as Record<string, Schema> | undefined
    const additional = isSchema(s.additionalProperties) ? s.additionalProperties : undefined
    switch (s.type) {
      case 'object':
        node = { map: true, ...(props ? { props } : {}), ...(additional ? { additional } : {}), free: !props && !additional }
        break
      case 'array': {
        node = { list: true, ...(s.items ? { items: s.items as Schema } : {}) }
        const keys = listKeys(s)
        if (keys) node.keys = [...keys].sort()
        break
      }
      case 'integer':
      case 'number':
        node = { scalar: 'numeric' }
        break
      case 'boolean':
        node = { scalar: 'boolean' }
        break
      case 'string':
        node = { scalar: s.format === undefined || s.format === '' || s.format === 'byte' ? 'string' : 'untyped' }
        break
      default:
        node = { scalar: 'untyped', list: true, map: true, free: true }
    }
  }
  smdNodes.set(schema, node)
  return node
}

/** A path element: a field name, an index, or a list item named by its keys or (a set's) value, spelt only for an error. */
type Segment = string | number | { item: unknown; keys: string[] }

function smdPath(trail: readonly Segment[]): string {
  let out = ''
  for (const seg of trail) {
    if (typeof seg === 'string') out += `.${seg}`
    else if (typeof seg === 'number') out += `[${seg}]`
    else if (seg.keys.length === 0) out += `[=${smdString(seg.item)}]`
    else {
      const x = seg.item as Record<string, unknown>
      const fields: string[] = []
      for (const k of seg.keys) {
        const kv = Object.hasOwn(x, k) ? x[k] : k === 'protocol' ? 'TCP' : undefined
        if (kv !== undefined) fields.push(`${k}=${smdString(kv)}`)
      }
      out += `[${fields.join(',')}]`
    }
  }
  return out
}

function smdValue(schema: Schema, v: unknown, trail: Segment[], out: string[]): void {
  if (v === null || v === undefined) return
  const node = smdNode(schema)
  const kind = jsonKind(v)
  const scalar = kind !== 'array' && kind !== 'object'
  // deduceAtom: the value's own kind when the atom allows it, else the atom's (first of map, scalar, list) to fail on.
  const use = scalar && node.scalar ? 'scalar' : kind === 'array' && node.list ? 'list' : kind === 'object' && node.map ? 'map' : node.map ? 'map' : node.scalar ? 'scalar' : 'list'
  const at = (msg: string) => out.push(`${smdPath(trail)}: ${msg}`)
  if (use === 'scalar') {
    const t = node.scalar!
    if (t === 'numeric' && kind !== 'number') at(`expected numeric (int or float), got ${goTypeName(v)}`)
    else if (t === 'string' && kind !== 'string') at(`expected string, got &value.valueUnstructured{Value:${goSharpV(v)}}`)
    else if (t === 'boolean' && kind !== 'bool') at(`expected boolean, got &{${goV(v)}}`)
    else if (t === 'untyped' && !scalar) at(`expected any scalar, got &{${goV(v)}}`)
    return
  }
  if (use === 'list') {
    if (kind !== 'array') return void at(`expected list, got &{${goV(v)}}`)
    const items = node.items
    if (!items) return
    const keys = node.keys
    const list = v as unknown[]
    for (let i = 0; i < list.length; i++) {
      const x = list[i]
      if (keys !== undefined && keys.length === 0) {
        if (isMap(x)) at(`element ${i}: associative list without keys has an element that's a map type`)
        else if (Array.isArray(x)) at(`element ${i}: not supported: associative list with lists as elements`)
        else if (x === null) at(`element ${i}: associative list without keys has an element that's an explicit null`)
        if (isMap(x) || Array.isArray(x) || x === null) continue
      } else if (keys !== undefined) {
        if (x === null || x === undefined) {
          at(`element ${i}: associative list with keys may not have a null element`)
          continue
        }
        if (!isMap(x)) {
          at(`element ${i}: associative list with keys may not have non-map elements`)
          continue
        }
        if (!keys.some((k) => Object.hasOwn(x, k) || k === 'protocol')) {
          at(`element ${i}: associative list with keys has an element that omits all key fields ${goQuoteList(keys)} (and doesn't have default values for any key fields)`)
          continue
        }
      }
      trail.push(keys === undefined ? i : { item: x, keys })
      smdValue(items, x, trail, out)
      trail.pop()
    }
    return
  }
  if (kind !== 'object') return void at(`expected map, got &{${goV(v)}}`)
  if (node.free) return
  const props = node.props
  const additional = node.additional
  const map = v as Record<string, unknown>
  for (const k of Object.keys(map)) {
    const sub = props && Object.hasOwn(props, k) ? props[k] : additional
    trail.push(k)
    if (!sub) {
      out.push(`${smdPath(trail)}: field not declared in schema`)
      trail.pop()
      return
    }
    smdValue(sub, map[k], trail, out)
    trail.pop()
  }
}

/** A list's keys: undefined for an atomic list (items named by index), [] for a set. */
function listKeys(s: Schema): string[] | undefined {
  const type = s['x-kubernetes-list-type']
  if (type === 'map') return (s['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []
  if (type === 'set') return []
  if (type === 'atomic') return undefined
  const strategy = String(s['x-kubernetes-patch-strategy'] ?? '')
  const key = s['x-kubernetes-patch-merge-key']
  if (strategy.split(',').includes('merge')) return typeof key === 'string' ? [key] : []
  return undefined
}

const goQuoteList = (xs: readonly string[]): string => `[${xs.map((x) => JSON.stringify(x)).join(' ')}]`

/** Go's `%v` of a float64 (strconv/ftoa.go 'g', shortest: an exponent from 1e6, or below 1e-4): `3`, `1.5`, `1e+06`. */
export function goFloat(n: number): string {
  if (Number.isNaN(n)) return 'NaN'
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf'
  if (n === 0) return Object.is(n, -0) ? '-0' : '0'
  const [mantissa, expText] = n.toExponential().split('e') as [string, string]
  const exp = Number(expText)
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`
  return String(n)
}

/** structured-merge-diff `value.ToString`: strings quoted, numbers as Go prints a float64. */
function smdString(v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (typeof v === 'number') return goFloat(v)
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[${v.map(smdString).join(',')}]`
  return Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k}=${smdString(x)}`).join('')
}

/** Go's `%T` of a decoded JSON value. */
function goTypeName(v: unknown): string {
  switch (jsonKind(v)) {
    case 'bool':
      return 'bool'
    case 'number':
      return 'float64'
    case 'string':
      return 'string'
    case 'array':
      return '[]interface {}'
    case 'object':
      return 'map[string]interface {}'
  }
  return '<nil>'
}

/** Go's `%#v` of a decoded JSON value (interface{}): `3`, `"x"`, `[]interface {}{"a"}`, `map[string]interface {}{"a":1}` (keys sorted). */
function goSharpV(v: unknown): string {
  if (v === null || v === undefined) return 'interface {}(nil)'
  if (typeof v === 'number') return goFloat(v)
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[]interface {}{${v.map(goSharpV).join(', ')}}`
  const o = v as Record<string, unknown>
  return `map[string]interface {}{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${goSharpV(o[k])}`).join(', ')}}`
}

/** Go's `%v` of a decoded JSON value: `3`, `x`, `[a b]`, `map[a:1]` (keys sorted), `<nil>`. */
function goV(v: unknown): string {
  if (v === null || v === undefined) return '<nil>'
  if (typeof v === 'number') return goFloat(v)
  if (typeof v === 'string' || typeof v === 'boolean') return String(v)
  if (Array.isArray(v)) return `[${v.map(goV).join(' ')}]`
  const o = v as Record<string, unknown>
  return `map[${Object.keys(o).sort().map((k) => `${k}:${goV(o[k])}`).join(' ')}]`
}
