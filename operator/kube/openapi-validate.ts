/**
 * A built-in object checked against upstream's OpenAPI definitions of its kind (the 1.34
 * `swagger.json` in `openapi/kubernetes-1.34.json`), as kube-apiserver's two readers of a request
 * body meet it:
 *
 * - decoding JSON into the kind's Go type (sigs.k8s.io/json, a fork of encoding/json): the first
 *   value of the wrong JSON type, in the order of the document, is `json: cannot unmarshal number
 *   into Go struct field ConfigMap.data of type string` (decode.go `UnmarshalTypeError`: the
 *   innermost struct, the path of JSON field names from the root, the Go type); a value a custom
 *   unmarshaler refuses (a Quantity, an IntOrString, a Time) stops decoding with that
 *   unmarshaler's own error; fields the type lacks are reported for `fieldValidation`
 *   (`unknownFields`);
 * - converting a server-side apply configuration to a typed value (structured-merge-diff
 *   typed/validate.go): `.data.size: expected string, got &value.valueUnstructured{Value:3}`,
 *   `.spec.tpye: field not declared in schema`, list items named by their keys (openapi-apply.ts).
 *
 * Go type names the schema does not carry (`v1.Protocol`, `v1.ResourceList`) come from
 * `openapi/go-types.json`, generated from the Go sources by test/support/go-field-types.ts.
 */
import { readFileSync } from 'node:fs'
import { quantityOf } from './quantity.ts'

export type Schema = Record<string, unknown>

interface Builtins {
  definitions: Record<string, Schema>
  /** `group/version/kind` → definition name. */
  byGvk: Map<string, string>
  /** definition name → field → Go type, where the schema's type does not name it. */
  goTypes: Record<string, Record<string, string>>
}

let builtins: Builtins | undefined

/** Upstream's definitions, read once. */
export function builtinDefinitions(): Builtins {
  if (builtins) return builtins
  const read = (file: string) => JSON.parse(readFileSync(new URL(`./openapi/${file}`, import.meta.url), 'utf8')) as unknown
  const doc = read('kubernetes-1.34.json') as { definitions: Record<string, Schema> }
  const byGvk = new Map<string, string>()
  for (const [name, s] of Object.entries(doc.definitions)) {
    for (const g of (s['x-kubernetes-group-version-kind'] ?? []) as { group: string; version: string; kind: string }[]) byGvk.set(`${g.group}/${g.version}/${g.kind}`, name)
  }
  builtins = { definitions: doc.definitions, byGvk, goTypes: read('go-types.json') as Builtins['goTypes'] }
  return builtins
}

/** The definition name of a built-in kind, or undefined. */
export function definitionNameOf(group: string, version: string, kind: string): string | undefined {
  return builtinDefinitions().byGvk.get(`${group}/${version}/${kind}`)
}

/** The definition of a built-in kind, or undefined. */
export function definitionOf(group: string, version: string, kind: string): Schema | undefined {
  const name = definitionNameOf(group, version, kind)
  return name === undefined ? undefined : builtinDefinitions().definitions[name]
}

const resolved = new WeakMap<Schema, Schema>()

/** A schema with its `$ref`s followed. */
export function resolve(s: Schema): Schema {
  if (typeof s.$ref !== 'string') return s
  const hit = resolved.get(s)
  if (hit !== undefined) return hit
  let cur = s
  for (let i = 0; i < 8 && typeof cur.$ref === 'string'; i++) cur = builtinDefinitions().definitions[refName(cur.$ref)] ?? {}
  resolved.set(s, cur)
  return cur
}

export const refName = (ref: string): string => ref.slice(ref.lastIndexOf('/') + 1)

export const QUANTITY = 'io.k8s.apimachinery.pkg.api.resource.Quantity'
/** Definitions whose Go type unmarshals itself: the decoder hands them their raw JSON. */
export const SELF_DECODING = new Set([QUANTITY, 'io.k8s.apimachinery.pkg.util.intstr.IntOrString', 'io.k8s.apimachinery.pkg.apis.meta.v1.Time', 'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime', 'io.k8s.apimachinery.pkg.runtime.RawExtension', 'io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1'])

/** The JSON type of a decoded value, as encoding/json names it in `UnmarshalTypeError.Value`. */
export function jsonKind(v: unknown): 'null' | 'bool' | 'number' | 'string' | 'array' | 'object' {
  if (v === null || v === undefined) return 'null'
  if (typeof v === 'boolean') return 'bool'
  if (typeof v === 'number') return 'number'
  if (typeof v === 'string') return 'string'
  return Array.isArray(v) ? 'array' : 'object'
}

/** The Go type a schema stands for, as reflect.Type.String() prints it (pointers dropped: the decoder reports the element). */
function goTypeOf(s: Schema): string {
  if (typeof s.$ref === 'string') {
    const parts = refName(s.$ref).split('.')
    return `${parts.at(-2)}.${parts.at(-1)}`
  }
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
      return `[]${goTypeOf((s.items ?? {}) as Schema)}`
    case 'object':
      return isSchema(s.additionalProperties) ? `map[string]${goTypeOf(s.additionalProperties)}` : 'map[string]interface {}'
  }
  return 'interface {}'
}

/** A list's or map's element type when its own Go type names it (`[]v1.Capability` → `v1.Capability`); else the element's schema names it. */
function elementGoType(container: string | undefined): string | undefined {
  if (container === undefined) return undefined
  if (container.startsWith('[]')) return container.slice(2)
  if (container.startsWith('map[')) return container.slice(container.indexOf(']') + 1)
  return undefined
}

export const isSchema = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v)
export const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Where the decoder is: the struct it fills and the JSON field names from the root (decode.go errorContext); stacks, pushed and popped. */
interface Context {
  struct: string
  fields: string[]
  /** Every key and index down to the value, for {@link decodeProblem}'s path. */
  trail: (string | number)[]
}

/** A decoding error: the decoder's message and the path of the value (`data.size`, `spec.ports[0].protocol`). */
export interface DecodeProblem {
  path: string
  message: string
}

class Fatal {
  readonly problem: DecodeProblem
  constructor(problem: DecodeProblem) {
    this.problem = problem
  }
}

/** What decoding found: the first type error, unless a custom unmarshaler failed first; how many fields the kind lacks. */
interface Decoding {
  typeError?: DecodeProblem
  undeclared: number
}

/**
 * The error decoding `obj` into its kind's Go type fails with (the text after `cannot be handled
 * as a <Kind>: `), or undefined when it decodes; unknown fields are not errors here. `skip` leaves
 * out values known to be checked already.
 */
export function decodeError(group: string, version: string, kind: string, obj: Record<string, unknown>, skip?: (v: object) => boolean): string | undefined {
  return decodeProblem(group, version, kind, obj, skip)?.message
}

/** {@link decodeError} with the path of the value it is about. */
export function decodeProblem(group: string, version: string, kind: string, obj: Record<string, unknown>, skip?: (v: object) => boolean): DecodeProblem | undefined {
  return decoding(group, version, kind, obj, skip)?.problem
}

/**
 * Decoding as {@link decodeProblem} does, with the number of fields the kind does not declare
 * that the same walk met: where it is 0 (and nothing failed), {@link unknownFields} finds nothing.
 * When decoding fails the count covers what was walked before it stopped. Undefined for a kind
 * without a schema.
 */
export function decoding(group: string, version: string, kind: string, obj: Record<string, unknown>, skip?: (v: object) => boolean): { problem?: DecodeProblem; undeclared: number } | undefined {
  const name = definitionNameOf(group, version, kind)
  if (name === undefined) return undefined
  const state: Decoding = { undeclared: 0 }
  try {
    decodeStruct(name, builtinDefinitions().definitions[name]!, obj, { struct: name.slice(name.lastIndexOf('.') + 1), fields: [], trail: [] }, state, skip)
  } catch (e) {
    if (e instanceof Fatal) return { problem: e.problem, undeclared: state.undeclared }
    throw e
  }
  return state.typeError === undefined ? { undeclared: state.undeclared } : { problem: state.typeError, undeclared: state.undeclared }
}

/** `named`: the Go type where go-types.json names it; otherwise the schema's. */
function typeError(state: Decoding, ctx: Context, value: string, schema: Schema, named: string | undefined): void {
  if (state.typeError !== undefined) return
  const goType = named ?? goTypeOf(schema)
  const message = ctx.fields.length === 0 ? `json: cannot unmarshal ${value} into Go value of type ${goType}` : `json: cannot unmarshal ${value} into Go struct field ${ctx.struct}.${ctx.fields.join('.')} of type ${goType}`
  state.typeError = { path: pathOf(ctx.trail), message }
}

/** A `$ref`'s target as decoding needs it, worked out once per referring schema. */
interface RefTarget {
  name: string
  def: Schema
  /** A Go type that decodes itself (Quantity, IntOrString, Time, …, or a definition without a type). */
  self: boolean
  struct: string
  props: Record<string, Schema>
  goTypes: Record<string, string> | undefined
}

const refTargets = new WeakMap<Schema, RefTarget>()

function refTarget(schema: Schema): RefTarget {
  let t = refTargets.get(schema)
  if (t === undefined) {
    const name = refName(schema.$ref as string)
    const def = resolve(schema)
    // A definition without a type is a Go type that decodes itself from any JSON (apiextensions' JSON, JSONSchemaPropsOrBool, …).
    t = { name, def, self: SELF_DECODING.has(name) || def.type === undefined, struct: name.slice(name.lastIndexOf('.') + 1), props: (def.properties ?? {}) as Record<string, Schema>, goTypes: builtinDefinitions().goTypes[name] }
    refTargets.set(schema, t)
  }
  return t
}

function decodeStruct(defName: string, def: Schema, obj: Record<string, unknown>, ctx: Context, state: Decoding, skip?: (v: object) => boolean, target?: RefTarget): void {
  const props = target?.props ?? ((def.properties ?? {}) as Record<string, Schema>)
  const goTypes = target ? target.goTypes : builtinDefinitions().goTypes[defName]
  const struct = target?.struct ?? defName.slice(defName.lastIndexOf('.') + 1)
  const outer = ctx.struct
  for (const key of Object.keys(obj)) {
    if (!Object.hasOwn(props, key)) {
      state.undeclared++
      continue
    }
    ctx.struct = struct
    ctx.fields.push(key)
    ctx.trail.push(key)
    decodeValue(props[key]!, goTypes?.[key], obj[key], ctx, state, skip)
    ctx.fields.pop()
    ctx.trail.pop()
  }
  ctx.struct = outer
}

/** One value into a field described by `schema`, of Go type `named` where the schema does not name it (decode.go `value`, `literalStore`, `array`, `object`). */
function decodeValue(schema: Schema, named: string | undefined, v: unknown, ctx: Context, state: Decoding, skip?: (v: object) => boolean): void {
  const kind = jsonKind(v)
  if (kind === 'null') return
  if (typeof v === 'object' && skip?.(v as object)) return
  if (typeof schema.$ref === 'string') {
    const target = refTarget(schema)
    if (target.self) return selfDecoding(target.name, v, ctx)
    if (kind !== 'object') return typeError(state, ctx, kind, schema, named)
    return decodeStruct(target.name, target.def, v as Record<string, unknown>, ctx, state, skip, target)
  }
  switch (schema.type) {
    case 'string':
      if (kind !== 'string') typeError(state, ctx, kind, schema, named)
      else if (schema.format === 'byte' && !isBase64(v as string) && state.typeError === undefined) state.typeError = { path: pathOf(ctx.trail), message: base64Error(v as string) }
      return
    case 'boolean':
      if (kind !== 'bool') typeError(state, ctx, kind, schema, named)
      return
    case 'integer': {
      if (kind !== 'number') return typeError(state, ctx, kind, schema, named)
      const n = v as number
      const bound = schema.format === 'int64' ? 2 ** 63 : 2 ** 31
      if (!Number.isInteger(n) || n < -bound || n >= bound) typeError(state, ctx, `number ${JSON.stringify(n)}`, schema, named)
      return
    }
    case 'number':
      if (kind !== 'number') typeError(state, ctx, kind, schema, named)
      return
    case 'array': {
      if (kind !== 'array') return typeError(state, ctx, kind, schema, named)
      const items = (schema.items ?? {}) as Schema
      const elem = elementGoType(named)
      const list = v as unknown[]
      for (let i = 0; i < list.length; i++) {
        ctx.trail.push(i)
        decodeValue(items, elem, list[i], ctx, state, skip)
        ctx.trail.pop()
      }
      return
    }
    case 'object': {
      if (kind !== 'object') return typeError(state, ctx, kind, schema, named)
      const additional = schema.additionalProperties
      if (!isSchema(additional)) return
      const elem = elementGoType(named)
      const map = v as Record<string, unknown>
      for (const k of Object.keys(map)) {
        ctx.trail.push(k)
        decodeValue(additional, elem, map[k], ctx, state, skip)
        ctx.trail.pop()
      }
      return
    }
  }
}

/** Quantity strings that parsed (`100m`, `64Mi` recur in every pod): bounded, cleared when full. */
const goodQuantities = new Set<string>()

/**
 * The UnmarshalJSON of a type that decodes itself; its error ends decoding, and is not given the
 * field's context (it is not the fork's UnmarshalTypeError): resource.Quantity (quantity.go),
 * intstr.IntOrString (intstr.go: a string, else encoding/json into an int32), metav1.Time and
 * MicroTime (encoding/json into a string first). RawExtension and FieldsV1 keep any JSON.
 */
function selfDecoding(name: string, v: unknown, ctx: Context): void {
  const kind = jsonKind(v)
  const fail = (message: string) => new Fatal({ path: pathOf(ctx.trail), message })
  if (name === QUANTITY) {
    if (typeof v === 'string' && goodQuantities.has(v)) return
    try {
      quantityOf(typeof v === 'string' || typeof v === 'number' ? v : JSON.stringify(v))
    } catch (e) {
      throw fail(e instanceof Error ? e.message : String(e))
    }
    if (typeof v === 'string') {
      if (goodQuantities.size >= 10_000) goodQuantities.clear()
      goodQuantities.add(v)
    }
    return
  }
  if (name.endsWith('.IntOrString')) {
    if (kind === 'string') return
    if (kind === 'number') {
      const n = v as number
      if (Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31) return
      throw fail(`json: cannot unmarshal number ${JSON.stringify(n)} into Go value of type int32`)
    }
    throw fail(`json: cannot unmarshal ${kind} into Go value of type int32`)
  }
  if (name.endsWith('.Time') || name.endsWith('.MicroTime')) {
    if (kind !== 'string') throw fail(`json: cannot unmarshal ${kind} into Go value of type string`)
  }
}

const isBase64 = (s: string): boolean => base64Problem(s) === undefined

function base64Error(s: string): string {
  return `illegal base64 data at input byte ${base64Problem(s) ?? 0}`
}

const B64 = /[A-Za-z0-9+/]/

/** The offset encoding/base64's StdEncoding.Decode reports a `CorruptInputError` at (base64.go `decodeQuantum`), or undefined. */
function base64Problem(src: string): number | undefined {
  let si = 0
  for (;;) {
    let j = 0
    for (; j < 4; j++) {
      if (si === src.length) {
        if (j === 0) return undefined
        return si - j
      }
      const c = src[si++]!
      if (B64.test(c)) continue
      if (c === '\n' || c === '\r') {
        j--
        continue
      }
      if (c !== '=') return si - 1
      if (j === 0 || j === 1) return si - 1
      if (j === 2) {
        while (si < src.length && (src[si] === '\n' || src[si] === '\r')) si++
        if (si === src.length) return src.length
        if (src[si] !== '=') return si - 1
        si++
      }
      while (si < src.length && (src[si] === '\n' || src[si] === '\r')) si++
      return si < src.length ? si : undefined
    }
  }
}

/**
 * The fields of `obj` its kind does not declare, in the order of the document
 * (`spec.template.spec.containers[0].imagee`), as strict decoding reports them (sigs.k8s.io/json
 * `UnmarshalStrictError`). `remove` deletes them (what decoding without strictness leaves).
 * Free-form objects (RawExtension, FieldsV1) keep everything. Undefined for a kind without a schema.
 */
export function unknownFields(group: string, version: string, kind: string, obj: Record<string, unknown>, remove: boolean, skip?: (v: object) => boolean): string[] | undefined {
  const schema = definitionOf(group, version, kind)
  if (!schema) return undefined
  const out: string[] = []
  walkUnknown(schema, obj, [], (o, key, path) => {
    if (remove) delete o[key]
    out.push(path)
  }, skip)
  return out
}

function walkUnknown(schema: Schema, value: unknown, trail: (string | number)[], unknown: (obj: Record<string, unknown>, key: string, path: string) => void, skip?: (v: object) => boolean): void {
  if (typeof value !== 'object' || value === null || refIs(schema, QUANTITY) || skip?.(value)) return
  const s = resolve(schema)
  if (Array.isArray(value)) {
    const items = s.items as Schema | undefined
    if (!items || s.type !== 'array') return
    for (let i = 0; i < value.length; i++) {
      trail.push(i)
      walkUnknown(items, value[i], trail, unknown, skip)
      trail.pop()
    }
    return
  }
  const obj = value as Record<string, unknown>
  const props = s.properties as Record<string, Schema> | undefined
  const additional = isSchema(s.additionalProperties) ? s.additionalProperties : undefined
  if (!props && !additional) return
  for (const k of Object.keys(obj)) {
    const sub = props ? (Object.hasOwn(props, k) ? props[k] : undefined) : additional
    trail.push(k)
    if (sub) walkUnknown(sub, obj[k], trail, unknown, skip)
    else unknown(obj, k, pathOf(trail))
    trail.pop()
  }
}

const refIs = (s: Schema, name: string): boolean => typeof s.$ref === 'string' && refName(s.$ref) === name

/** `spec.template.spec.containers[0].imagee` */
export function pathOf(trail: readonly (string | number)[]): string {
  let out = ''
  for (const x of trail) out = typeof x === 'number' ? `${out}[${x}]` : out === '' ? x : `${out}.${x}`
  return out
}
