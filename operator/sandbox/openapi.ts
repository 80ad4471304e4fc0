/**
 * `/openapi/v2` and `/openapi/v3/<group-version>` with the schemas a real 1.34 server publishes,
 * for `kubectl explain`, kubectl's check that the server validates fields itself (the
 * `fieldValidation` parameter of each PATCH operation), and kubectl's client-side apply, which
 * builds a strategic merge patch from these schemas' `x-kubernetes-patch-*` extensions wherever
 * the PATCH operation accepts one (built-in kinds) and a JSON merge patch elsewhere (custom
 * resources).
 *
 * Built-in kinds come from upstream's own definitions, committed in `../kube/openapi/kubernetes-1.34.json`
 * (see its `source`), reachable from the kinds the sandbox serves. Custom resources are built from
 * their CRD's structural schema as apiextensions-apiserver does
 * (pkg/controller/openapi/builder/builder.go: `buildKubeNative`, `buildListSchema`, definition
 * names by `util.ToRESTFriendlyName`; pkg/controller/openapi/v2/conversion.go for v2).
 *
 * Documents are built on demand and kept until the served kinds of their group/version change.
 */
import { createHash } from 'node:crypto'
import { builtinDefinitions } from '../kube/openapi-validate.ts'
import type { Registry } from './registry.ts'
import type { ResourceType } from './types.ts'

type Schema = Record<string, unknown>

const load = builtinDefinitions

const OBJECT_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta'
const LIST_META = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta'
const STATUS = 'io.k8s.apimachinery.pkg.apis.meta.v1.Status'
const DELETE_OPTIONS = 'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions'
const PATCH = 'io.k8s.apimachinery.pkg.apis.meta.v1.Patch'
const SCALE = 'io.k8s.api.autoscaling.v1.Scale'
// apiextensions-apiserver swaggerPartialObjectMetadataDescriptions / …ListDescriptions.
const METADATA_DESCRIPTION = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
const LIST_METADATA_DESCRIPTION = 'Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds'

/** `cache.example.com/v1alpha1/Memcached` → `com.example.cache.v1alpha1.Memcached` (kube-openapi util.ToRESTFriendlyName). */
export function definitionName(group: string, version: string, kind: string): string {
  return [...group.split('.').reverse(), version, kind].filter((p) => p !== '').join('.')
}

/** The definition name of a served kind or its list kind, or undefined when the kind has no schema. */
function nameOf(t: ResourceType, list: boolean): string | undefined {
  const kind = list ? t.listKind : t.kind
  if (t.custom) return definitionName(t.group, t.version, kind)
  return load().byGvk.get(`${t.group}/${t.version}/${kind}`)
}

/** The TypeMeta properties as upstream's definitions carry them (any built-in kind has both). */
function typeMeta(): { apiVersion: Schema; kind: Schema } {
  const props = load().definitions['io.k8s.api.apps.v1.Deployment']?.properties as Record<string, Schema>
  return { apiVersion: props.apiVersion as Schema, kind: props.kind as Schema }
}

const ref = (name: string): Schema => ({ $ref: `#/definitions/${name}` })

/** OpenAPI v2's restrictions on a CRD's schema (openapi/v2 ToStructuralOpenAPIV2). */
function toV2(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(toV2)
  if (typeof s !== 'object' || s === null) return s
  const out: Schema = {}
  for (const [k, v] of Object.entries(s)) {
    if (k === 'allOf' || k === 'oneOf' || k === 'anyOf' || k === 'not') continue
    out[k] = k === 'properties' || k === 'definitions' ? Object.fromEntries(Object.entries(v as Schema).map(([p, ps]) => [p, toV2(ps)])) : k === 'enum' || k === 'default' || k === 'example' ? v : toV2(v)
  }
  if (out.nullable === true || out['x-kubernetes-preserve-unknown-fields'] === true) {
    if (out.nullable === true) delete out.type
    delete out.nullable
    delete out.items
    delete out.properties
  }
  if (out.type === 'array' && out.items === undefined) delete out.type
  const props = out.properties as Record<string, Schema> | undefined
  if (props && Array.isArray(out.required)) {
    const required = (out.required as string[]).filter((f) => (s as Schema & { properties?: Record<string, Schema> }).properties?.[f]?.nullable !== true)
    if (required.length === 0) delete out.required
    else out.required = required
  }
  return out
}

/** A custom resource's schema and its list's, in v2 form (`#/definitions/` references). */
function customDefinitions(t: ResourceType, v2: boolean): Record<string, Schema> {
  const name = definitionName(t.group, t.version, t.kind)
  const gvk = (kind: string) => [{ group: t.group, version: t.version, kind }]
  let schema: Schema
  const given = t.openAPIV3Schema
  if (!given || (v2 && given['x-kubernetes-preserve-unknown-fields'] === true)) schema = { type: 'object' }
  else {
    schema = structuredClone((v2 ? toV2(given) : given) as Schema)
    const props = { ...((schema.properties as Record<string, Schema> | undefined) ?? {}) }
    const tm = typeMeta()
    props.apiVersion = tm.apiVersion
    props.kind = tm.kind
    props.metadata = { ...ref(OBJECT_META), description: METADATA_DESCRIPTION }
    schema.properties = props
  }
  schema['x-kubernetes-group-version-kind'] = gvk(t.kind)
  const tm = typeMeta()
  const list: Schema = {
    description: `${t.listKind} is a list of ${t.kind}`,
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: tm.apiVersion,
      items: { description: `List of ${t.resource}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md`, type: 'array', items: ref(name) },
      kind: tm.kind,
      metadata: { ...ref(LIST_META), description: LIST_METADATA_DESCRIPTION },
    },
    'x-kubernetes-group-version-kind': gvk(t.listKind),
  }
  return { [name]: schema, [definitionName(t.group, t.version, t.listKind)]: list }
}

/** Adds `names` and every definition they reference (transitively) from the built-ins. */
function closure(into: Record<string, Schema>, names: Iterable<string>): void {
  const defs = load().definitions
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(visit)
    else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref' && typeof x === 'string') add(x.slice(x.lastIndexOf('/') + 1))
        else visit(x)
      }
    }
  }
  const add = (name: string): void => {
    if (into[name] || !defs[name]) return
    into[name] = defs[name]
    visit(defs[name])
  }
  // References from the custom resources' schemas already there (ObjectMeta, ListMeta) first.
  for (const s of Object.values(into)) visit(s)
  for (const n of names) add(n)
}

/** A parameter of an operation, in the document's version. */
interface Param {
  name: string
  in: 'query' | 'path'
  type: 'string' | 'boolean' | 'integer'
  description: string
  required?: boolean
}

const PARAMS: Record<string, Param> = {
  name: { name: 'name', in: 'path', type: 'string', required: true, description: 'name of the object' },
  namespace: { name: 'namespace', in: 'path', type: 'string', required: true, description: 'object name and auth scope, such as for teams and projects' },
  pretty: { name: 'pretty', in: 'query', type: 'string', description: "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)." },
  dryRun: { name: 'dryRun', in: 'query', type: 'string', description: 'When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed' },
  fieldManager: { name: 'fieldManager', in: 'query', type: 'string', description: 'fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.' },
  fieldValidation: { name: 'fieldValidation', in: 'query', type: 'string', description: 'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore, - Warn, - Strict.' },
  force: { name: 'force', in: 'query', type: 'boolean', description: 'Force is going to "force" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.' },
  labelSelector: { name: 'labelSelector', in: 'query', type: 'string', description: 'A selector to restrict the list of returned objects by their labels. Defaults to everything.' },
  fieldSelector: { name: 'fieldSelector', in: 'query', type: 'string', description: 'A selector to restrict the list of returned objects by their fields. Defaults to everything.' },
  limit: { name: 'limit', in: 'query', type: 'integer', description: 'limit is a maximum number of responses to return for a list call.' },
  continue: { name: 'continue', in: 'query', type: 'string', description: 'The continue option should be set when retrieving more results from the server.' },
  resourceVersion: { name: 'resourceVersion', in: 'query', type: 'string', description: 'resourceVersion sets a constraint on what resource versions a request may be served from.' },
  watch: { name: 'watch', in: 'query', type: 'boolean', description: 'Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.' },
  propagationPolicy: { name: 'propagationPolicy', in: 'query', type: 'string', description: "Whether and how garbage collection will be performed. Acceptable values are: 'Orphan', 'Background', 'Foreground'." },
}

const LIST_PARAMS = ['continue', 'fieldSelector', 'labelSelector', 'limit', 'resourceVersion', 'watch']
const WRITE_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation']

/** One operation before it is written out in v2 or v3 form. */
interface Op {
  method: 'get' | 'put' | 'post' | 'patch' | 'delete'
  action: string
  id: string
  description: string
  query: string[]
  /** Request body: the schema name and its media types. */
  body?: { schema: string; types: string[] }
  /** 200 (and 201/202 where upstream lists them) answer schema. */
  answer: string
  created?: boolean
  gvk: { group: string; version: string; kind: string }
}

interface PathItem {
  path: string
  params: string[]
  ops: Op[]
}

const JSON_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf']
const WATCH_TYPES = ['application/json;stream=watch', 'application/vnd.kubernetes.protobuf;stream=watch']

/**
 * Operation IDs as kube-openapi names them: `patchAppsV1NamespacedDeployment`,
 * `listCacheExampleComV1alpha1MemcachedForAllNamespaces` (a `.k8s.io` suffix is dropped).
 */
function opName(verb: string, t: ResourceType, suffix: string, namespaced: boolean, all = false): string {
  const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1)
  const group = (t.group === '' ? 'core' : t.group.replace(/\.k8s\.io$/, '')).split(/[.-]/).map(cap).join('')
  return `${verb}${group}${cap(t.version)}${namespaced ? 'Namespaced' : ''}${t.kind}${suffix}${all ? 'ForAllNamespaces' : ''}`
}

/** The paths upstream serves for a kind: the collection, the object, `/status` and `/scale`. */
function pathsOf(t: ResourceType): PathItem[] {
  const kindName = nameOf(t, false)
  const listName = nameOf(t, true)
  if (!kindName) return []
  const prefix = t.group === '' ? `/api/${t.version}` : `/apis/${t.group}/${t.version}`
  const ns = t.namespaced
  const collection = ns ? `${prefix}/namespaces/{namespace}/${t.resource}` : `${prefix}/${t.resource}`
  const gvk = { group: t.group, version: t.version, kind: t.kind }
  const patchTypes = ['application/json-patch+json', 'application/merge-patch+json', ...(t.custom ? [] : ['application/strategic-merge-patch+json']), 'application/apply-patch+yaml']
  const can = (v: string) => t.verbs.includes(v)
  const items: PathItem[] = []
  const coll: Op[] = []
  if (can('list') && listName) coll.push({ method: 'get', action: 'list', id: opName('list', t, '', ns), description: `list or watch objects of kind ${t.kind}`, query: LIST_PARAMS, answer: listName, gvk })
  if (can('create')) coll.push({ method: 'post', action: 'post', id: opName('create', t, '', ns), description: `create a ${t.kind}`, query: WRITE_PARAMS, body: { schema: kindName, types: ['*/*'] }, answer: kindName, created: true, gvk })
  if (can('deletecollection')) coll.push({ method: 'delete', action: 'deletecollection', id: opName('deletecollection', t, '', ns), description: `delete collection of ${t.kind}`, query: [...LIST_PARAMS.filter((p) => p !== 'watch'), 'dryRun', 'propagationPolicy'], body: { schema: DELETE_OPTIONS, types: ['*/*'] }, answer: STATUS, gvk })
  if (coll.length > 0) items.push({ path: collection, params: ns ? ['namespace', 'pretty'] : ['pretty'], ops: coll })
  const obj: Op[] = []
  if (can('get')) obj.push({ method: 'get', action: 'get', id: opName('read', t, '', ns), description: `read the specified ${t.kind}`, query: [], answer: kindName, gvk })
  if (can('update')) obj.push({ method: 'put', action: 'put', id: opName('replace', t, '', ns), description: `replace the specified ${t.kind}`, query: WRITE_PARAMS, body: { schema: kindName, types: ['*/*'] }, answer: kindName, created: true, gvk })
  if (can('patch')) obj.push({ method: 'patch', action: 'patch', id: opName('patch', t, '', ns), description: `partially update the specified ${t.kind}`, query: [...WRITE_PARAMS, 'force'], body: { schema: PATCH, types: patchTypes }, answer: kindName, created: true, gvk })
  if (can('delete')) obj.push({ method: 'delete', action: 'delete', id: opName('delete', t, '', ns), description: `delete a ${t.kind}`, query: ['dryRun', 'propagationPolicy'], body: { schema: DELETE_OPTIONS, types: ['*/*'] }, answer: STATUS, gvk })
  if (obj.length > 0) items.push({ path: `${collection}/{name}`, params: ns ? ['name', 'namespace', 'pretty'] : ['name', 'pretty'], ops: obj })
  const sub = (what: 'status' | 'scale', schema: string, g: Op['gvk']): PathItem => ({
    path: `${collection}/{name}/${what}`,
    params: ns ? ['name', 'namespace', 'pretty'] : ['name', 'pretty'],
    ops: [
      { method: 'get', action: 'get', id: opName('read', t, what === 'status' ? 'Status' : 'Scale', ns), description: `read ${what} of the specified ${t.kind}`, query: [], answer: schema, gvk: g },
      { method: 'put', action: 'put', id: opName('replace', t, what === 'status' ? 'Status' : 'Scale', ns), description: `replace ${what} of the specified ${t.kind}`, query: WRITE_PARAMS, body: { schema, types: ['*/*'] }, answer: schema, created: true, gvk: g },
      { method: 'patch', action: 'patch', id: opName('patch', t, what === 'status' ? 'Status' : 'Scale', ns), description: `partially update ${what} of the specified ${t.kind}`, query: [...WRITE_PARAMS, 'force'], body: { schema: PATCH, types: patchTypes }, answer: schema, created: true, gvk: g },
    ],
  })
  if (t.subresources.status) items.push(sub('status', kindName, gvk))
  if (t.subresources.scale) items.push(sub('scale', SCALE, { group: 'autoscaling', version: 'v1', kind: 'Scale' }))
  if (ns && can('list') && listName) items.push({ path: `${prefix}/${t.resource}`, params: ['pretty'], ops: [{ method: 'get', action: 'list', id: opName('list', t, '', false, true), description: `list or watch objects of kind ${t.kind}`, query: LIST_PARAMS, answer: listName, gvk }] })
  return items
}

/** The definitions a set of kinds needs (their own, their lists', the operations', transitively). */
function definitionsFor(types: ResourceType[], v2: boolean): Record<string, Schema> {
  const out: Record<string, Schema> = {}
  for (const t of types) if (t.custom) Object.assign(out, customDefinitions(t, v2))
  const names = new Set<string>([STATUS, DELETE_OPTIONS, PATCH])
  for (const t of types) {
    if (t.custom) continue
    for (const n of [nameOf(t, false), nameOf(t, true)]) if (n) names.add(n)
  }
  if (types.some((t) => t.subresources.scale)) names.add(SCALE)
  closure(out, names)
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

/**
 * Types whose v3 schema is a `oneOf` of plain types where v2 says `string` (their
 * `OpenAPIV3OneOfTypes`: apimachinery util/intstr and api/resource); `kubectl explain` then names
 * them `<IntOrString>` and `<Quantity>`.
 */
const V3_ONE_OF: Record<string, string[]> = {
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': ['integer', 'string'],
  'io.k8s.apimachinery.pkg.api.resource.Quantity': ['string', 'number'],
}

function oneOf(s: Schema, types: string[]): Schema {
  const { type: _type, ...rest } = s
  return { ...rest, oneOf: types.map((t) => ({ type: t })) }
}

/** `#/definitions/X` → `#/components/schemas/X`, a reference with siblings wrapped in `allOf` (as kube-openapi's v3 builder writes them). */
function toV3Refs(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(toV3Refs)
  if (typeof s !== 'object' || s === null) return s
  const o = s as Schema
  const out: Schema = {}
  for (const [k, v] of Object.entries(o)) {
    if (k === '$ref' && typeof v === 'string') continue
    out[k] = k === 'enum' || k === 'default' || k === 'example' ? v : k === 'properties' ? Object.fromEntries(Object.entries(v as Schema).map(([p, ps]) => [p, toV3Refs(ps)])) : toV3Refs(v)
  }
  if (typeof o.$ref === 'string') {
    const target = `#/components/schemas/${o.$ref.slice(o.$ref.lastIndexOf('/') + 1)}`
    if (Object.keys(out).length === 0) return { $ref: target }
    return { allOf: [{ $ref: target }], ...out }
  }
  return out
}

function v2Param(name: string): Schema {
  const p = PARAMS[name]!
  return { uniqueItems: true, type: p.type, description: p.description, name: p.name, in: p.in, ...(p.required ? { required: true } : {}) }
}

function v3Param(name: string): Schema {
  const p = PARAMS[name]!
  return { name: p.name, in: p.in, description: p.description, ...(p.required ? { required: true } : {}), schema: { type: p.type, uniqueItems: true } }
}

function v2Paths(items: PathItem[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {}
  for (const item of items) {
    const entry: Schema = { parameters: item.params.map(v2Param) }
    for (const op of item.ops) {
      const params = op.query.map(v2Param)
      if (op.body) params.unshift({ name: 'body', in: 'body', ...(op.method === 'delete' ? {} : { required: true }), schema: ref(op.body.schema) })
      const responses: Schema = { '200': { description: 'OK', schema: ref(op.answer) } }
      if (op.created) responses['201'] = { description: 'Created', schema: ref(op.answer) }
      if (op.method === 'post' || op.method === 'delete') responses['202'] = { description: 'Accepted', schema: ref(op.answer) }
      responses['401'] = { description: 'Unauthorized' }
      entry[op.method] = {
        description: op.description,
        consumes: op.body ? op.body.types : ['*/*'],
        produces: op.action === 'list' ? [...JSON_TYPES, ...WATCH_TYPES] : JSON_TYPES,
        schemes: ['https'],
        operationId: op.id,
        parameters: params,
        responses,
        'x-kubernetes-action': op.action,
        'x-kubernetes-group-version-kind': op.gvk,
      }
    }
    paths[item.path] = entry
  }
  return paths
}

function v3Paths(items: PathItem[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {}
  const content = (schema: string, types: string[]) => Object.fromEntries(types.map((mt) => [mt, { schema: { $ref: `#/components/schemas/${schema}` } }]))
  for (const item of items) {
    const entry: Schema = { parameters: item.params.map(v3Param) }
    for (const op of item.ops) {
      const responses: Schema = { '200': { description: 'OK', content: content(op.answer, op.action === 'list' ? [...JSON_TYPES, ...WATCH_TYPES] : JSON_TYPES) } }
      if (op.created) responses['201'] = { description: 'Created', content: content(op.answer, JSON_TYPES) }
      if (op.method === 'post' || op.method === 'delete') responses['202'] = { description: 'Accepted', content: content(op.answer, JSON_TYPES) }
      responses['401'] = { description: 'Unauthorized' }
      entry[op.method] = {
        description: op.description,
        operationId: op.id,
        parameters: op.query.map(v3Param),
        ...(op.body ? { requestBody: { content: content(op.body.schema, op.body.types), ...(op.method === 'delete' ? {} : { required: true }) } } : {}),
        responses,
        'x-kubernetes-action': op.action,
        'x-kubernetes-group-version-kind': op.gvk,
      }
    }
    paths[item.path] = entry
  }
  return paths
}

/** A document as served: its JSON and the hash that names it in `/openapi/v3`. */
export interface Served {
  json: string
  hash: string
}

/** Documents kept for the kinds they were built from (a CRD change replaces its types). */
const cache = new WeakMap<Registry, Map<string, { types: ResourceType[]; doc: Served }>>()

function cached(registry: Registry, key: string, types: ResourceType[], build: () => Schema): Served {
  let byKey = cache.get(registry)
  if (!byKey) cache.set(registry, (byKey = new Map()))
  const hit = byKey.get(key)
  if (hit && hit.types.length === types.length && hit.types.every((t, i) => t === types[i])) return hit.doc
  const json = JSON.stringify(build())
  // kube-openapi handler3: the upper-case hex of the document's SHA-512, first 128 bits.
  const doc = { json, hash: createHash('sha512').update(json).digest('hex').slice(0, 32).toUpperCase() }
  byKey.set(key, { types, doc })
  return doc
}

/** `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`, or undefined when not served. */
export function openapiV3GroupVersion(registry: Registry, group: string, version: string): Served | undefined {
  const types = registry.all().filter((t) => t.group === group && t.version === version)
  if (types.length === 0) return undefined
  return cached(registry, `v3 ${group}/${version}`, types, () => {
    const schemas = Object.fromEntries(Object.entries(definitionsFor(types, false)).map(([n, s]) => [n, V3_ONE_OF[n] ? oneOf(s, V3_ONE_OF[n]) : toV3Refs(s)]))
    return {
      openapi: '3.0.0',
      info: { title: 'Kubernetes', version: 'v1.34.0' },
      paths: v3Paths(types.flatMap(pathsOf)),
      components: { schemas, securitySchemes: { BearerToken: { type: 'apiKey', description: 'Bearer Token authentication', name: 'authorization', in: 'header' } } },
      security: [{ BearerToken: [] }],
    }
  })
}

/** `/openapi/v3`: each group/version and where its document is, named by its hash. */
export function openapiV3Root(registry: Registry): Schema {
  const paths: Record<string, unknown> = {}
  for (const g of registry.groups()) {
    for (const v of g.versions) {
      const key = g.group === '' ? `api/${v.version}` : `apis/${g.group}/${v.version}`
      const doc = openapiV3GroupVersion(registry, g.group, v.version)
      if (doc) paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${doc.hash}` }
    }
  }
  return { paths }
}

/** `/openapi/v2`: every served kind in one Swagger 2.0 document. */
export function openapiV2(registry: Registry): Served {
  const types = registry.all()
  return cached(registry, 'v2', types, () => ({
    swagger: '2.0',
    info: { title: 'Kubernetes', version: 'v1.34.0' },
    paths: v2Paths(types.flatMap(pathsOf)),
    definitions: definitionsFor(types, true),
    securityDefinitions: { BearerToken: { description: 'Bearer Token authentication', type: 'apiKey', name: 'authorization', in: 'header' } },
    security: [{ BearerToken: [] }],
  }))
}
