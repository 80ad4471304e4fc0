/**
 * `/openapi/v2` in protobuf, the form client-go's discovery asks for (`OpenAPISchema()`, which
 * kubectl's client-side validation reads: `kubectl apply` of a `v1 List`). kube-openapi
 * (pkg/handler/handler.go `ToProtoBinary`) parses the JSON document with gnostic
 * (`openapi_v2.ParseDocument`) and marshals the `openapi.v2.Document` message; this writes the
 * same message from the same JSON, with the field numbers of gnostic-models
 * openapiv2/OpenAPIv2.proto, for the parts of Swagger 2.0 the sandbox's document uses: info,
 * paths (operations, body/query/path parameters, responses), definitions, security.
 * Vendor extensions (`x-kubernetes-*`) are `NamedAny`s holding their value as YAML, as gnostic's
 * `NewAny` keeps them.
 */
import YAML from 'yaml'

type Json = Record<string, unknown>

/** Protocol buffers' wire format: fields appended in the order given (gnostic's marshal is in field-number order). */
class Message {
  readonly #parts: Buffer[] = []

  #tag(field: number, wire: number): void {
    this.#varint(field * 8 + wire)
  }

  #varint(n: number): void {
    const bytes: number[] = []
    let v = BigInt(n)
    if (v < 0n) v += 1n << 64n
    do {
      let b = Number(v & 0x7fn)
      v >>= 7n
      if (v > 0n) b |= 0x80
      bytes.push(b)
    } while (v > 0n)
    this.#parts.push(Buffer.from(bytes))
  }

  string(field: number, v: unknown): this {
    if (typeof v !== 'string' || v === '') return this
    return this.bytes(field, Buffer.from(v, 'utf8'))
  }

  strings(field: number, v: unknown): this {
    if (Array.isArray(v)) for (const s of v) if (typeof s === 'string') this.bytes(field, Buffer.from(s, 'utf8'))
    return this
  }

  bool(field: number, v: unknown): this {
    if (v !== true) return this
    this.#tag(field, 0)
    this.#varint(1)
    return this
  }

  int64(field: number, v: unknown): this {
    if (typeof v !== 'number' || v === 0) return this
    this.#tag(field, 0)
    this.#varint(Math.trunc(v))
    return this
  }

  double(field: number, v: unknown): this {
    if (typeof v !== 'number' || v === 0) return this
    this.#tag(field, 1)
    const b = Buffer.alloc(8)
    b.writeDoubleLE(v)
    this.#parts.push(b)
    return this
  }

  message(field: number, m: Message | undefined): this {
    if (m === undefined) return this
    return this.bytes(field, m.encode())
  }

  bytes(field: number, b: Buffer): this {
    this.#tag(field, 2)
    this.#varint(b.length)
    this.#parts.push(b)
    return this
  }

  encode(): Buffer {
    return Buffer.concat(this.#parts)
  }
}

const isMap = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `Any`: the value as YAML (field 2, `yaml`). */
function any(v: unknown): Message {
  return new Message().string(2, YAML.stringify(v))
}

/** `repeated NamedAny vendor_extension` for every `x-` key. */
function extensions(m: Message, field: number, o: Json): void {
  for (const [k, v] of Object.entries(o)) if (k.startsWith('x-')) m.message(field, new Message().string(1, k).message(2, any(v)))
}

function schema(s: Json): Message {
  const m = new Message()
  m.string(1, s.$ref).string(2, s.format).string(3, s.title).string(4, s.description)
  if (s.default !== undefined) m.message(5, any(s.default))
  m.double(6, s.multipleOf).double(7, s.maximum).bool(8, s.exclusiveMaximum).double(9, s.minimum).bool(10, s.exclusiveMinimum)
  m.int64(11, s.maxLength).int64(12, s.minLength).string(13, s.pattern).int64(14, s.maxItems).int64(15, s.minItems).bool(16, s.uniqueItems)
  m.int64(17, s.maxProperties).int64(18, s.minProperties).strings(19, s.required)
  if (Array.isArray(s.enum)) for (const e of s.enum) m.message(20, any(e))
  if (typeof s.additionalProperties === 'boolean') m.message(21, new Message().bool(2, s.additionalProperties))
  else if (isMap(s.additionalProperties)) m.message(21, new Message().message(1, schema(s.additionalProperties)))
  if (typeof s.type === 'string') m.message(22, new Message().string(1, s.type))
  else if (Array.isArray(s.type)) m.message(22, new Message().strings(1, s.type))
  if (isMap(s.items)) m.message(23, new Message().message(1, schema(s.items)))
  else if (Array.isArray(s.items)) m.message(23, s.items.filter(isMap).reduce((items, i) => items.message(1, schema(i)), new Message()))
  if (Array.isArray(s.allOf)) for (const a of s.allOf) if (isMap(a)) m.message(24, schema(a))
  if (isMap(s.properties)) m.message(25, named(s.properties, schema))
  m.string(26, s.discriminator).bool(27, s.readOnly)
  if (s.example !== undefined) m.message(30, any(s.example))
  extensions(m, 31, s)
  return m
}

/** A map of named values (`Properties`, `Definitions`, …): `repeated Named<X> additional_properties = 1`. */
function named(o: Json, value: (v: Json) => Message): Message {
  const m = new Message()
  for (const [k, v] of Object.entries(o)) if (isMap(v)) m.message(1, new Message().string(1, k).message(2, value(v)))
  return m
}

/** `ParametersItem`: a reference, or a body parameter, or a query or path one (`NonBodyParameter`). */
function parameter(p: Json): Message {
  if (typeof p.$ref === 'string') return new Message().message(2, new Message().string(1, p.$ref).string(2, p.description))
  if (p.in === 'body') {
    const body = new Message().string(1, p.description).string(2, p.name).string(3, p.in).bool(4, p.required)
    if (isMap(p.schema)) body.message(5, schema(p.schema))
    extensions(body, 6, p)
    return new Message().message(1, new Message().message(1, body))
  }
  // The query (3) and formData (2) sub-schemas have allow_empty_value at 5, which shifts their later fields by one from the header (1) and path (4) ones.
  const which = SUB_SCHEMAS[String(p.in)] ?? 4
  const query = which === 3 || which === 2
  const at = (n: number) => (query && n >= 5 ? n + 1 : n)
  const sub = new Message().bool(1, p.required).string(2, p.in).string(3, p.description).string(4, p.name)
  if (query) sub.bool(5, p.allowEmptyValue)
  sub.string(at(5), p.type).string(at(6), p.format).string(at(8), p.collectionFormat)
  if (p.default !== undefined) sub.message(at(9), any(p.default))
  sub.double(at(10), p.maximum).bool(at(11), p.exclusiveMaximum).double(at(12), p.minimum).bool(at(13), p.exclusiveMinimum)
  sub.int64(at(14), p.maxLength).int64(at(15), p.minLength).string(at(16), p.pattern).int64(at(17), p.maxItems).int64(at(18), p.minItems).bool(at(19), p.uniqueItems)
  if (Array.isArray(p.enum)) for (const e of p.enum) sub.message(at(20), any(e))
  sub.double(at(21), p.multipleOf)
  extensions(sub, at(22), p)
  return new Message().message(1, new Message().message(2, new Message().message(which, sub)))
}

/** NonBodyParameter's oneof, by `in`. */
const SUB_SCHEMAS: Record<string, number> = { header: 1, formData: 2, query: 3, path: 4 }

function operation(o: Json): Message {
  const m = new Message().strings(1, o.tags).string(2, o.summary).string(3, o.description).string(5, o.operationId).strings(6, o.produces).strings(7, o.consumes)
  if (Array.isArray(o.parameters)) for (const p of o.parameters) if (isMap(p)) m.message(8, parameter(p))
  if (isMap(o.responses)) {
    const responses = new Message()
    for (const [code, r] of Object.entries(o.responses)) {
      if (!isMap(r)) continue
      const response = new Message().string(1, r.description)
      if (isMap(r.schema)) response.message(2, new Message().message(1, schema(r.schema)))
      extensions(response, 5, r)
      responses.message(1, new Message().string(1, code).message(2, new Message().message(1, response)))
    }
    m.message(9, responses)
  }
  m.strings(10, o.schemes).bool(11, o.deprecated)
  if (Array.isArray(o.security)) for (const s of o.security) if (isMap(s)) m.message(12, securityRequirement(s))
  extensions(m, 13, o)
  return m
}

const METHODS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 }

function pathItem(item: Json): Message {
  const m = new Message().string(1, item.$ref)
  for (const [method, field] of Object.entries(METHODS)) if (isMap(item[method])) m.message(field, operation(item[method]))
  if (Array.isArray(item.parameters)) for (const p of item.parameters) if (isMap(p)) m.message(9, parameter(p))
  extensions(m, 10, item)
  return m
}

function securityRequirement(s: Json): Message {
  const m = new Message()
  for (const [k, v] of Object.entries(s)) m.message(1, new Message().string(1, k).message(2, new Message().strings(1, v)))
  return m
}

/** `SecurityDefinitionsItem`: the API-key kind (2) is the one Kubernetes declares (BearerToken). */
function securityDefinition(d: Json): Message {
  if (d.type !== 'apiKey') return new Message()
  const key = new Message().string(1, d.type).string(2, d.name).string(3, d.in).string(4, d.description)
  extensions(key, 5, d)
  return new Message().message(2, key)
}

/** The `openapi.v2.Document` of a Swagger 2.0 document. */
export function openapiV2Protobuf(doc: Json): Buffer {
  const m = new Message().string(1, doc.swagger)
  if (isMap(doc.info)) {
    const info = new Message().string(1, doc.info.title).string(2, doc.info.version).string(3, doc.info.description)
    extensions(info, 7, doc.info)
    m.message(2, info)
  }
  m.string(3, doc.host).string(4, doc.basePath).strings(5, doc.schemes).strings(6, doc.consumes).strings(7, doc.produces)
  if (isMap(doc.paths)) {
    const paths = new Message()
    extensions(paths, 1, doc.paths)
    for (const [p, item] of Object.entries(doc.paths)) if (!p.startsWith('x-') && isMap(item)) paths.message(2, new Message().string(1, p).message(2, pathItem(item)))
    m.message(8, paths)
  }
  if (isMap(doc.definitions)) m.message(9, named(doc.definitions, schema))
  if (Array.isArray(doc.security)) for (const s of doc.security) if (isMap(s)) m.message(12, securityRequirement(s))
  if (isMap(doc.securityDefinitions)) m.message(13, named(doc.securityDefinitions, securityDefinition))
  extensions(m, 16, doc)
  return m.encode()
}

/** kube-openapi handler.go's media types: asked for under either name, answered under the second. */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf'
const PROTOBUF_SUBTYPES = ['com.github.proto-openapi.spec.v2@v1.0+protobuf', 'com.github.proto-openapi.spec.v2.v1.0+protobuf']

/**
 * The form `/openapi/v2` answers an Accept header with (handler.go: goautoneg's clauses sorted by
 * q, then by specificity; the first that JSON or protobuf matches), or undefined: 406.
 */
export function openapiV2Format(accept: string | undefined): 'json' | 'protobuf' | undefined {
  const clauses = (accept === undefined || accept.trim() === '' ? '*/*' : accept)
    .split(',')
    .map((c, i) => {
      const [range = '', ...params] = c.split(';').map((x) => x.trim())
      const [type = '', subtype = ''] = range.split('/')
      const q = params.map((p) => /^q=([0-9.]+)$/.exec(p)?.[1]).find((x) => x !== undefined)
      return { type, subtype, q: q === undefined ? 1 : Number(q), i }
    })
    .filter((c) => c.q > 0 && c.type !== '')
    .sort((a, b) => b.q - a.q || specificity(b) - specificity(a) || a.i - b.i)
  for (const c of clauses) {
    if (c.type !== 'application' && c.type !== '*') continue
    if (c.subtype === 'json' || c.subtype === '*') return 'json'
    if (PROTOBUF_SUBTYPES.includes(c.subtype)) return 'protobuf'
  }
  return undefined
}

const specificity = (c: { type: string; subtype: string }): number => (c.type === '*' ? 0 : c.subtype === '*' ? 1 : 2)
