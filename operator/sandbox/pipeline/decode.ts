/** Decoding a request body into the kind's object: apiVersion and kind checked, namespace from the URL, empty metadata dropped, and the decoding errors each handler words its own way (apiserver endpoints/handlers create.go, update.go, patch.go). */
import { parse as parseYaml } from 'yaml'
import { isObject } from '../../kube/json.ts'
import { StatusError, badRequest, methodNotAllowed, unsupportedMediaType } from '../errors.ts'
import { groupVersion } from '../registry.ts'
import { goJson, goValue } from '../../kube/builtin/field.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import { applyPatchType, patchTypeOf } from './reply.ts'

/**
 * What the round trip through ObjectMeta does to metadata on a real server: its maps and lists are
 * `omitempty`, so `labels: {}`, `annotations: {}`, `finalizers: []`, `ownerReferences: []` vanish.
 * Built-ins go through Go types when a body is decoded; custom resources through
 * apiextensions-apiserver's schema/objectmeta Coerce, on decoding and on encoding for storage.
 * A merge patch such as kubectl diff's `{"metadata":{"annotations":{}}}` thus stores nothing.
 */
function dropEmptyMetadata(m: KubeObject['metadata']): void {
  for (const k of ['labels', 'annotations'] as const) {
    const v = m[k]
    if (isObject(v) && Object.keys(v).length === 0) delete m[k]
  }
  for (const k of ['finalizers', 'ownerReferences'] as const) {
    const v = m[k]
    if (Array.isArray(v) && v.length === 0) delete m[k]
  }
}

/**
 * What of a write decoding judges: a /status write of a built-in kind takes all but the status
 * and metadata from the stored object, which was checked when written against the kind's fixed
 * schema; only those two can hold a bad value or an unknown field, and they come last in
 * document order.
 */
export function decodedPart(type: ResourceType, req: ApiRequest, obj: KubeObject): KubeObject {
  return !type.custom && req.subresource === 'status' ? ({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata, status: obj.status } as KubeObject) : obj
}

/**
 * `fieldValidation=Strict` refusing unknown fields, as each handler words it: a create or an
 * update fails to decode (handlers/create.go, update.go `transformDecodeError`: 400 `<Kind> in
 * version "<v>" cannot be handled as a <Kind>: strict decoding error: …`); a patch fails after
 * applying (handlers/patch.go: 422 `errors.NewInvalid(schema.GroupKind{}, "", …)` on the field
 * `patch`, whose value is the patched object's JSON for JSON and merge patches, and Go's `%+v` of
 * the patch for a strategic merge patch).
 */
export function strictDecodingError(type: ResourceType, req: ApiRequest, obj: KubeObject, pruned: string[]): StatusError {
  return decodingError(type, req, obj, `strict decoding error: ${pruned.map((p) => `unknown field "${p}"`).join(', ')}`)
}

/**
 * An object that does not decode into its kind's Go type, worded by the handler that decoded it
 * (create.go / update.go `transformDecodeError`, patch.go `errors.NewInvalid` on `patch`); an
 * apply meets it converting the merged object (fieldmanager structuredmerge.go: `failed to convert
 * new object (…) to proper version: …`, a plain error, so 500).
 */
function decodingError(type: ResourceType, req: ApiRequest, obj: KubeObject, detail: string): StatusError {
  if (patchTypeOf(req.contentType) === 'apply' && req.verb === 'patch') {
    const name = obj.metadata.name ?? ''
    return new StatusError(500, '', `failed to convert new object (${type.namespaced ? (req.namespace ?? '') : ''}/${name}; ${type.group}/${type.version}, Kind=${type.kind}) to proper version: ${detail}`)
  }
  if (req.verb !== 'patch') return badRequest(`${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: ${detail}`)
  const strategic = (req.contentType ?? '').split(';')[0]?.trim() === 'application/strategic-merge-patch+json'
  const message = `Invalid value: ${goValue(strategic ? goPrint(req.body) : goJson(obj))}: ${detail}`
  return new StatusError(422, 'Invalid', ` "" is invalid: patch: ${message}`, { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] })
}

/** Go's `%+v` of a decoded JSON value (`map[a:1 b:[x y]]`, keys sorted, nil as `<nil>`). */
function goPrint(v: unknown): string {
  if (v === null || v === undefined) return '<nil>'
  if (Array.isArray(v)) return `[${v.map(goPrint).join(' ')}]`
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `map[${Object.keys(o).sort().map((k) => `${k}:${goPrint(o[k])}`).join(' ')}]`
  }
  return String(v)
}

/** A JSON patch body, or a 400 that says why it does not parse. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (e) {
    throw badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/** The apply body: YAML (or JSON, which is YAML) text, or an already parsed object. */
export function parseApplyBody(body: unknown): KubeObject {
  let value: unknown = body
  if (typeof body === 'string') {
    // Most clients (client-node, controllers) send JSON, which is YAML; JSON.parse is far cheaper.
    const first = body.trimStart()[0]
    if (first === '{') {
      try {
        return JSON.parse(body) as KubeObject
      } catch {
        // Not JSON after all: flow-style YAML; the YAML parser below decides.
      }
    }
    try {
      value = parseYaml(body, { version: '1.1', uniqueKeys: true })
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`)
    }
  } else if (body instanceof Uint8Array) {
    throw unsupportedMediaType([applyPatchType])
  }
  if (!isObject(value)) throw badRequest('error decoding YAML: the apply patch is not an object')
  return structuredCloneJson(value) as KubeObject
}

function structuredCloneJson(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v))
}

/** The request's body as an object with metadata, or a 400. */
export function bodyObject(req: ApiRequest): KubeObject {
  const body = req.body
  if (!isObject(body)) throw badRequest('the body of the request is not a JSON object')
  const obj = body as KubeObject
  if (!isObject(obj.metadata)) obj.metadata = {}
  return obj
}

/** Puts apiVersion and kind first and checks that they match the endpoint. */
export function stamp(type: ResourceType, obj: KubeObject): KubeObject {
  const gv = groupVersion(type.group, type.version)
  if (obj.apiVersion !== undefined && obj.apiVersion !== '' && obj.apiVersion !== gv)
    throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${gv})`)
  if (obj.kind !== undefined && obj.kind !== '' && obj.kind !== type.kind) throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${type.kind})`)
  const { apiVersion: _a, kind: _k, metadata, ...rest } = obj
  dropEmptyMetadata(metadata)
  return { apiVersion: gv, kind: type.kind, metadata, ...rest }
}

/** The object's namespace from the URL: refused when the body names another, dropped for a cluster-scoped kind. */
export function checkNamespace(type: ResourceType, obj: KubeObject, req: ApiRequest): string {
  if (!type.namespaced) {
    delete obj.metadata.namespace
    return ''
  }
  const ns = req.namespace
  if (!ns) throw methodNotAllowed()
  if (obj.metadata.namespace && obj.metadata.namespace !== ns) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
  obj.metadata.namespace = ns
  return ns
}

/**
 * Decoding into the kind's Go type, which fails on a value of the wrong JSON type or a quantity
 * that does not parse before anything else (defaulting included) looks at the object. A body
 * decoded from protobuf into a built-in kind's type (the sandbox's controllers') was made by
 * that type: nothing in it can fail.
 */
export function decodes(type: ResourceType, req: ApiRequest, obj: KubeObject): void {
  if (req.typed === true && !type.custom) return
  const undecodable = type.decodeError?.(decodedPart(type, req, obj))
  if (undecodable) throw decodingError(type, req, obj, undecodable)
}
