/**
 * Validation of merged values against the chart's values.schema.json, with ajv. The schema is
 * written in the structural subset a CRD accepts (it is also the CRD's spec schema); for rendering
 * it is made stricter: a field the schema does not declare is reported ("unknown field") where the
 * API server would silently prune it, because a typo in a CR should not pass unnoticed.
 */
import { Ajv, type ErrorObject } from 'ajv'
import { isPlainMap, type Values } from './values.ts'

/** A JSON Schema node as written in values.schema.json. */
export type SchemaNode = { [keyword: string]: unknown }

/** Validates values and returns every problem as `spec.path: message`, or an empty list. */
export type ValuesValidator = (values: Values) => string[]

const JSON_TYPE = (v: unknown): string => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'object' ? 'object' : typeof v)

/** Compiles the chart schema; throws on an invalid schema (a chart bug, reported by `lint`). */
export function compileValuesSchema(schema: SchemaNode): ValuesValidator {
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true })
  for (const keyword of ['x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string', 'x-kubernetes-map-type', 'x-kubernetes-embedded-resource', 'x-kubernetes-list-map-keys']) {
    ajv.addKeyword({ keyword })
  }
  ajv.addKeyword({
    keyword: 'x-kubernetes-list-type',
    // The API server rejects duplicate items of a set and duplicate keys of a list-map.
    validate: function listType(kind: string, data: unknown, parent?: SchemaNode): boolean {
      if (!Array.isArray(data) || kind === 'atomic') return true
      const keys = kind === 'map' ? ((parent?.['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []) : []
      const seen = new Set<string>()
      for (const item of data) {
        const id = kind === 'map' && isPlainMap(item) ? JSON.stringify(keys.map((k) => item[k])) : JSON.stringify(item)
        if (seen.has(id)) {
          ;(listType as unknown as { errors: Partial<ErrorObject>[] }).errors = [{ message: `must not contain duplicate ${kind === 'map' ? `keys (${keys.join(', ')})` : 'items'}: ${id}` }]
          return false
        }
        seen.add(id)
      }
      return true
    },
    errors: true,
  })
  ajv.addKeyword({
    // What the structural subset cannot say (a value that is a string or a map) is said here; `crd` drops it.
    keyword: 'x-memcached-operator-types',
    validate: function types(allowed: string[], data: unknown): boolean {
      if (allowed.includes(JSON_TYPE(data))) return true
      ;(types as unknown as { errors: Partial<ErrorObject>[] }).errors = [{ message: `must be ${allowed.map((t) => `a${/^[aeiou]/.test(t) ? 'n' : ''} ${t}`).join(' or ')}` }]
      return false
    },
    errors: true,
  })
  const validate = ajv.compile(strictCopy(schema) as SchemaNode)
  return (values) => (validate(values) ? [] : formatErrors(validate.errors ?? [], values))
}

/** A copy of the schema in which objects with declared properties reject undeclared ones. */
function strictCopy(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strictCopy)
  if (!isPlainMap(node)) return node
  const out: SchemaNode = {}
  for (const [k, v] of Object.entries(node)) out[k] = k === 'properties' && isPlainMap(v) ? Object.fromEntries(Object.entries(v).map(([p, s]) => [p, strictCopy(s)])) : strictCopy(v)
  if (isPlainMap(node.properties) && node.additionalProperties === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true) {
    out.additionalProperties = false
  }
  return out
}

/** `/tolerations/0/effect` → `spec.tolerations[0].effect`; odd keys are bracketed: `spec.podLabels["a.b/c"]`. */
export function specPath(pointer: string, extra?: string): string {
  const parts = pointer === '' ? [] : pointer.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (extra !== undefined) parts.push(extra)
  let out = 'spec'
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : /^[A-Za-z_][A-Za-z0-9_]*$/.test(p) ? `.${p}` : `[${JSON.stringify(p)}]`
  return out
}

function valueAt(values: unknown, pointer: string): unknown {
  let node = values
  for (const p of pointer === '' ? [] : pointer.slice(1).split('/')) {
    const key = p.replace(/~1/g, '/').replace(/~0/g, '~')
    node = node !== null && typeof node === 'object' && Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined
  }
  return node
}

function got(value: unknown): string {
  if (value === undefined || (typeof value === 'object' && value !== null)) return ''
  const s = JSON.stringify(value)
  return ` (got ${s.length > 60 ? `${s.slice(0, 57)}...` : s})`
}

function formatErrors(errors: ErrorObject[], values: Values): string[] {
  // anyOf over [integer, string] (int-or-string) reports each branch; say it once.
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath))
  const out: string[] = []
  for (const e of errors) {
    if (anyOfPaths.has(e.instancePath) && e.schemaPath.includes('/anyOf/')) continue
    const at = valueAt(values, e.instancePath)
    let line: string
    switch (e.keyword) {
      case 'required':
        line = `${specPath(e.instancePath, String(e.params.missingProperty))}: is required`
        break
      case 'additionalProperties':
        line = `${specPath(e.instancePath, String(e.params.additionalProperty))}: unknown field`
        break
      case 'enum':
        line = `${specPath(e.instancePath)}: must be one of ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}${got(at)}`
        break
      case 'anyOf':
        line = `${specPath(e.instancePath)}: must be an integer or a string${got(at)}`
        break
      case 'type':
        line = `${specPath(e.instancePath)}: must be ${String(e.params.type).replace(',', ' or ')}${got(at)}`
        break
      default:
        line = `${specPath(e.instancePath)}: ${e.message ?? e.keyword}${got(at)}`
    }
    if (!out.includes(line)) out.push(line)
  }
  return out
}
