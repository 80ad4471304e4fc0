/** The scale subresource: get, update and patch of an autoscaling/v1 Scale mapped onto the object's replicas (CRDs name the paths). */
import jsonpatch from 'fast-json-patch'
import type { Operation } from 'fast-json-patch'
import { isObject } from '../../kube/json.ts'
import { StatusError, badRequest, conflict, invalid, unsupportedMediaType } from '../errors.ts'
import { formatLabelSelector } from '../../kube/labels.ts'
import { StoredObject } from '../store.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import { type Reply, jsonPatchType, mergePatchType, strategicPatchType, patchTypeOf, isDryRun } from './reply.ts'
import { parseJson } from './decode.ts'
import { writeUpdate } from './writes.ts'
import { ServerState } from './state.ts'
import { mergePatch, getPath, setPath } from './objects.ts'

function scaleOf(type: ResourceType, stored: StoredObject): Record<string, unknown> {
  const scale = type.subresources.scale
  const obj = stored.obj
  const specReplicas = scale ? getPath(obj, scale.specReplicasPath) : undefined
  const statusReplicas = scale ? getPath(obj, scale.statusReplicasPath) : undefined
  const status: Record<string, unknown> = { replicas: typeof statusReplicas === 'number' ? statusReplicas : 0 }
  if (scale?.labelSelectorPath) {
    const sel = getPath(obj, scale.labelSelectorPath)
    const text = typeof sel === 'string' ? sel : type.custom ? '' : formatLabelSelector(sel)
    if (text !== '') status.selector = text
  }
  const meta: Record<string, unknown> = { name: obj.metadata.name }
  if (obj.metadata.namespace) meta.namespace = obj.metadata.namespace
  meta.uid = obj.metadata.uid
  meta.resourceVersion = obj.metadata.resourceVersion
  meta.creationTimestamp = obj.metadata.creationTimestamp
  return { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: meta, spec: { replicas: typeof specReplicas === 'number' ? specReplicas : 0 }, status }
}

/** A GET of the scale subresource. */
export function getScale(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  return { status: 200, body: scaleOf(type, c.mustLive(type, req)) }
}

/** A PUT of the scale subresource: the replicas written to the object's spec. */
export function updateScale(c: ServerState, type: ResourceType, req: ApiRequest, body: unknown): Reply {
  const live = c.mustLive(type, req)
  const scale = type.subresources.scale
  if (!isObject(body) || !scale) throw badRequest('the body of the request is not a Scale object')
  const replicas = getPath(body, 'spec.replicas')
  const name = live.name
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
    throw invalid('autoscaling', 'Scale', name, [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0` }])
  }
  const rv = getPath(body, 'metadata.resourceVersion')
  if (typeof rv === 'string' && rv !== '' && rv !== live.obj.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
  const next = live.copy()
  setPath(next as unknown as Record<string, unknown>, scale.specReplicasPath, replicas)
  const reply = writeUpdate(c, type, req, live, next, { patch: true, subresource: 'scale' })
  if (reply.status !== 200) return reply
  const after = c.live(type, req.namespace, name)
  if (isDryRun(req) || !after) {
    const obj = reply.body as KubeObject
    return { status: 200, body: scaleOf(type, new StoredObject(obj, 0)) }
  }
  return { status: 200, body: scaleOf(type, after) }
}

/** A PATCH of the scale subresource (JSON or merge patch of the Scale). */
export function patchScale(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const pt = patchTypeOf(req.contentType)
  if (pt === undefined || pt === 'apply') throw unsupportedMediaType([jsonPatchType, mergePatchType, strategicPatchType])
  const live = c.mustLive(type, req)
  const current = scaleOf(type, live) as unknown as KubeObject
  const body = typeof req.body === 'string' ? parseJson(req.body) : req.body
  let patched: unknown
  if (pt === 'json') {
    if (!Array.isArray(body)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
    try {
      patched = jsonpatch.applyPatch(current, body as Operation[], true, true, true).newDocument
    } catch (e) {
      throw new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', { causes: [{ reason: 'UnexpectedServerResponse', message: e instanceof Error ? e.message.split('\n')[0] ?? '' : String(e) }] })
    }
  } else patched = mergePatch(current, body)
  return updateScale(c, type, req, patched)
}
