/**
 * Validation of merged values against the chart's values.schema.json, with ajv. The schema is
 * written in the structural subset a CRD accepts (it is also the CRD's spec schema); for rendering
 * it is made stricter: a field the schema does not declare is reported ("unknown field") where the
 * API server would silently prune it, because a typo in a CR should not pass unnoticed.
 */
import type { ErrorObject, ValidateFunction } from 'ajv'
import { mkdirSync, readFileSync, realpathSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import { hasRules, validateRules, type RuleSchema } from '../kube/cel/rules.ts'
import { lazyRequire as require } from './lazy-require.ts'
import { isPlainMap, type Values } from './values.ts'

/** A JSON Schema node as written in values.schema.json. */
export type SchemaNode = { [keyword: string]: unknown }

/**
 * Validates values and returns every problem as `spec.path: message`, or an empty list. `given`
 * is what the spec and overrides set, without the chart's defaults: the schema's
 * `x-kubernetes-validations` rules judge it, as the API server judges the spec of a CR.
 */
export type ValuesValidator = (values: Values, given?: Values) => string[]

/**
 * Where compiled validators are kept between runs (override with MEMCACHED_OPERATOR_CACHE_DIR), or
 * undefined when that directory cannot be trusted. Its files are run as code, so it must be a
 * directory of this user's that no one else can write to: the default is one per user in the
 * temporary directory, created 0700, and a directory someone else made or can write is not used.
 */
function cacheDir(): string | undefined {
  const uid = process.getuid?.()
  const dir = process.env.MEMCACHED_OPERATOR_CACHE_DIR || join(tmpdir(), `memcached-operator-cache-${uid ?? 'user'}`)
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const st = statSync(realpathSync(dir))
    // Group-writable only for the user's own group (umask 002 systems give every user one).
    const writableByOthers = (st.mode & 0o002) !== 0 || ((st.mode & 0o020) !== 0 && st.gid !== process.getgid?.())
    if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || writableByOthers) return undefined
    return dir
  } catch {
    // A read-only file system (the operator's image without a writable /tmp): no cache.
    return undefined
  }
}

/**
 * ajv's standalone code for the schema, from the cache or compiled now (loading ajv costs more than
 * the rest of `render`). A cached file starts with a comment that holds the whole key it was
 * compiled for (ajv's version and the schema), and is used only for that key: its name, a 32-bit
 * checksum of the key, may be shared by two keys, which then only costs a compile. A checksum, not
 * a cryptographic hash: node:crypto would weigh on the start of every `render` (its modules are a
 * fifth of the start-up snapshot), and the name is no defence anyway (the directory is).
 */
function validatorSource(schema: SchemaNode): string {
  const ajvVersion = (require('ajv/package.json') as { version: string }).version
  const dir = cacheDir()
  // The schema as compiled, so that a change of the rules in forValidation is a new key too.
  const compiled = forValidation(schema) as SchemaNode
  const key = `${ajvVersion}\0${JSON.stringify(compiled)}`
  const header = `// ${JSON.stringify(key)}\n`
  const file = dir && join(dir, `values-${crc32(key).toString(16).padStart(8, '0')}.cjs`)
  if (file) {
    try {
      const cached = readFileSync(file, 'utf8')
      if (cached.startsWith(header)) return cached.slice(header.length)
    } catch {
      // Not cached yet: compile below.
    }
  }
  const { Ajv } = require('ajv') as typeof import('ajv')
  const standalone = (require('ajv/dist/standalone') as { default: (ajv: unknown, fn: unknown) => string }).default
  const ajv = new Ajv({ allErrors: true, strict: true, strictTypes: false, allowUnionTypes: true, code: { source: true } })
  ajv.addVocabulary(K8S_KEYWORDS)
  const source = standalone(ajv, ajv.compile(compiled))
  if (file) {
    try {
      // Write then rename, so that a concurrent reader never sees half a file.
      const tmp = `${file}.${process.pid}.tmp`
      writeFileSync(tmp, header + source, { mode: 0o600 })
      renameSync(tmp, file)
    } catch {
      // The directory went away or filled up: the validator is simply not cached.
    }
  }
  return source
}

/** Compiles the chart schema; throws on an invalid schema (a chart bug, reported by `lint`). */
export function compileValuesSchema(schema: SchemaNode): ValuesValidator {
  const mod: { exports: unknown } = { exports: {} }
  new Function('require', 'module', 'exports', validatorSource(schema))(require, mod, mod.exports)
  const validate = mod.exports as ValidateFunction
  const rules = hasRules(schema)
  return (values, given) => {
    const errors = validate(values) ? [] : (validate.errors ?? [])
    const problems = formatErrors(errors, values)
    const duplicates = duplicateKeys(schema, values, '')
    problems.push(...duplicates)
    if (!rules || given === undefined) return problems
    // Rules run where the schema found nothing: a node holding a schema error, or above one, is
    // not judged by its rules (the API server runs none once a value has the wrong type), so a
    // rule never reads a value of a type it does not expect.
    const bad = errors.map((e) => e.instancePath)
    const blocked = (pointer: string) => duplicates.length > 0 || bad.some((b) => b === pointer || b.startsWith(`${pointer}/`))
    const failed = validateRules(schema as RuleSchema, given, undefined, 'spec', blocked).errors.map((f) => `${f.field}: ${f.detail}`)
    return [...problems, ...failed]
  }
}

/** Keywords of Kubernetes' OpenAPI dialect: known to ajv, checked by the API server or below. */
const K8S_KEYWORDS = [
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-map-type',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-list-type',
  'x-kubernetes-validations',
]

/**
 * The schema as ajv validates it at render time: objects with declared properties reject
 * undeclared ones, a `set` list has unique items, and `x-memcached-operator-types` (what the
 * structural subset cannot say) becomes a plain JSON Schema `type`. Such a node keeps unknown
 * fields in the CRD only because a structural schema cannot say "a string or this object": as an
 * object it is closed like any other (`spec.image.tagg` is an unknown field), whereas a node that
 * keeps unknown fields on purpose (a pass-through of a Kubernetes type) stays open.
 */
function forValidation(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(forValidation)
  if (!isPlainMap(node)) return node
  const out: SchemaNode = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === 'x-memcached-operator-types') out.type = v
    else out[k] = k === 'properties' && isPlainMap(v) ? Object.fromEntries(Object.entries(v).map(([p, c]) => [p, forValidation(c)])) : forValidation(v)
  }
  const open = node['x-kubernetes-preserve-unknown-fields'] === true && node['x-memcached-operator-types'] === undefined
  if (isPlainMap(node.properties) && node.additionalProperties === undefined && !open) {
    out.additionalProperties = false
  }
  if (node['x-kubernetes-list-type'] === 'set') out.uniqueItems = true
  return out
}

/** List-maps with two items of the same key, which the API server rejects. */
function duplicateKeys(schema: unknown, data: unknown, pointer: string): string[] {
  if (!isPlainMap(schema) || data === null || typeof data !== 'object') return []
  const out: string[] = []
  if (Array.isArray(data)) {
    const keys = schema['x-kubernetes-list-type'] === 'map' ? ((schema['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []) : undefined
    if (keys) {
      const seen = new Set<string>()
      for (const item of data) {
        const id = JSON.stringify(keys.map((k) => (isPlainMap(item) ? item[k] : undefined)))
        if (seen.has(id)) out.push(`${specPath(pointer)}: must not contain duplicate keys (${keys.join(', ')}): ${id}`)
        seen.add(id)
      }
    }
    data.forEach((item, i) => out.push(...duplicateKeys(schema.items, item, `${pointer}/${i}`)))
    return out
  }
  const props = isPlainMap(schema.properties) ? schema.properties : undefined
  for (const key of Object.keys(data)) {
    const child = props && Object.hasOwn(props, key) ? props[key] : schema.additionalProperties
    out.push(...duplicateKeys(child, (data as Record<string, unknown>)[key], `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`))
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
