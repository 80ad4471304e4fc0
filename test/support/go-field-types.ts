/**
 * Writes operator/kube/openapi/go-types.json: for each OpenAPI definition of
 * operator/kube/openapi/kubernetes-1.34.json, the Go type of each field whose type the schema
 * alone does not name (`v1.Protocol`, `v1.ResourceList`, `types.UID`), as reflect.Type.String()
 * prints it in encoding/json's UnmarshalTypeError. Read from the Go sources of k8s.io/api
 * (`<group>/<version>/types.go` under api/), k8s.io/apimachinery pkg/apis/meta/v1 (under meta/v1/)
 * and k8s.io/apiextensions-apiserver pkg/apis/apiextensions/v1 (under apiext/v1/).
 *
 * usage: node test/support/go-field-types.ts <dir> > operator/kube/openapi/go-types.json
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

type Schema = Record<string, any>

const src = process.argv[2]
if (!src) {
  process.stderr.write('usage: node test/support/go-field-types.ts <dir with api/, meta/v1/, apiext/v1/>\n')
  process.exit(2)
}
const defs = (JSON.parse(readFileSync(new URL('../../operator/kube/openapi/kubernetes-1.34.json', import.meta.url), 'utf8')) as { definitions: Record<string, Schema> }).definitions

/** Go import alias → package name (reflect prints the package name). */
const ALIASES: Record<string, string> = { metav1: 'v1', corev1: 'v1', rbacv1: 'v1', autoscalingv1: 'v1' }
const BUILTIN = new Set(['string', 'bool', 'int', 'int32', 'int64', 'float64', 'float32', 'uint8', 'uint16', 'uint32', 'uint64'])

/** Each struct of a package: its fields as [JSON name, Go type], `inline` for an embedded struct. */
function structs(dir: string): Map<string, [string, string][]> {
  const out = new Map<string, [string, string][]>()
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.go')).sort()) {
    const text = readFileSync(join(dir, f), 'utf8')
    for (const m of text.matchAll(/^type (\w+) struct \{\n([\s\S]*?)^\}/gm)) {
      const fields: [string, string][] = []
      for (const line of m[2]!.split('\n')) {
        if (line.trim().startsWith('//')) continue
        const embed = /^\s*([\w.]+)\s+`json:"([^"]*)"/.exec(line)
        if (embed && embed[2]!.includes(',inline')) {
          fields.push(['inline', embed[1]!])
          continue
        }
        const field = /^\s*(\w+)\s+([^\s`]+)\s+`json:"([^"]*)"/.exec(line)
        if (field) fields.push([field[3]!.split(',')[0]!, field[2]!])
      }
      out.set(m[1]!, fields)
    }
  }
  return out
}

/** A Go type expression of package `pkg` as reflect.Type.String() spells it (pointers dropped: the decoder reports the element). */
function reflectName(t: string, pkg: string): string {
  t = t.replace(/^\*+/, '')
  if (t === '[]byte') return '[]uint8'
  if (t.startsWith('[]')) return `[]${reflectName(t.slice(2), pkg)}`
  if (t.startsWith('map[')) {
    const end = t.indexOf(']')
    return `map[${reflectName(t.slice(4, end), pkg)}]${reflectName(t.slice(end + 1), pkg)}`
  }
  if (t === 'byte') return 'uint8'
  if (t.includes('.')) {
    const [alias, name] = t.split('.') as [string, string]
    return `${ALIASES[alias] ?? alias}.${name}`
  }
  return BUILTIN.has(t) || t === 'interface{}' ? t : `${pkg}.${t}`
}

/** What the schema alone implies (openapi-validate.ts `goTypeOf`). */
function defaultName(s: Schema): string {
  if (typeof s.$ref === 'string') return s.$ref.split('/').pop()!.split('.').slice(-2).join('.')
  switch (s.type) {
    case 'string':
      return s.format === 'byte' ? '[]uint8' : 'string'
    case 'integer':
      return s.format === 'int64' ? 'int64' : 'int32'
    case 'number':
      return 'float64'
    case 'boolean':
      return 'bool'
    case 'array':
      return `[]${defaultName(s.items ?? {})}`
    case 'object':
      return typeof s.additionalProperties === 'object' ? `map[string]${defaultName(s.additionalProperties)}` : '?'
  }
  return '?'
}

const PKG_DIRS: Record<string, string> = { 'io.k8s.apimachinery.pkg.apis.meta.v1': 'meta/v1', 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1': 'apiext/v1' }
const cache = new Map<string, Map<string, [string, string][]>>()
const out: Record<string, Record<string, string>> = {}
for (const name of Object.keys(defs).sort()) {
  const prefix = name.slice(0, name.lastIndexOf('.'))
  const structName = name.slice(name.lastIndexOf('.') + 1)
  const dir = PKG_DIRS[prefix] ?? (prefix.startsWith('io.k8s.api.') ? `api/${prefix.slice('io.k8s.api.'.length).replaceAll('.', '/')}` : undefined)
  if (dir === undefined || !existsSync(join(src, dir))) continue
  if (!cache.has(dir)) cache.set(dir, structs(join(src, dir)))
  const ss = cache.get(dir)!
  if (!ss.has(structName)) continue
  const pkg = dir.slice(dir.lastIndexOf('/') + 1)
  const flatten = (n: string): Map<string, string> => {
    const res = new Map<string, string>()
    for (const [f, ty] of ss.get(n) ?? []) {
      if (f === 'inline') for (const [k, v] of flatten(ty.split('.').pop()!)) res.set(k, v)
      else if (f !== '' && f !== '-') res.set(f, ty)
    }
    return res
  }
  const fields = flatten(structName)
  const diff: Record<string, string> = {}
  for (const [p, ps] of Object.entries((defs[name]!.properties ?? {}) as Record<string, Schema>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const ty = fields.get(p)
    if (ty === undefined) continue
    const got = reflectName(ty, pkg)
    if (got !== defaultName(ps)) diff[p] = got
  }
  if (Object.keys(diff).length > 0) out[name] = diff
}
process.stdout.write(`${JSON.stringify(out, null, 1)}\n`)
