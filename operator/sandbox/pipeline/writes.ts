/** Storage of writes: create, update (PUT), JSON/merge/strategic patches, and the update pipeline they share (preconditions, identity, status subresource, finalizers, generation, managedFields, the no-op skip), as apiserver's registry/generic/registry/store.go. */
import { resizedPod, validateResize } from '../pod-resize.ts'
import jsonpatch from 'fast-json-patch'
import type { Operation } from 'fast-json-patch'
import { isObject } from '../../kube/json.ts'
import { StatusError, alreadyExists, badRequest, conflict, invalidObject, unsupportedMediaType } from '../errors.ts'
import { groupVersion, tableOf } from '../registry.ts'
import { StoredObject } from '../store.ts'
import { admitNamespaceLifecycle } from '../admission/namespace.ts'
import { uidChange } from '../../kube/builtin/validation.ts'
import type { ApiRequest, JsonObject, KubeObject, ResourceType } from '../types.ts'
import { initialise, checkName } from './new-object.ts'
import { type Reply, jsonPatchType, mergePatchType, strategicPatchType, applyPatchType, applyPatchCbor, patchTypeOf, headerMap, isDryRun, isCRD, managerOf } from './reply.ts'
import { removeNow } from './delete.ts'
import { parseJson, bodyObject, stamp, checkNamespace, decodes } from './decode.ts'
import { crdChanged } from './crds.ts'
import { defaultObject, trackServiceIP, admit, syncQuotas } from './admission.ts'
import { type WriteEngine, ServerState } from './state.ts'
import { sameObject, mergePatch, resetFieldsOf, statusKeepsAnnotations, setGeneration } from './objects.ts'

/** A POST: a new object decoded, named, initialised, defaulted, admitted and stored. */
export function create(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const obj = stamp(type, bodyObject(req))
  decodes(type, req, obj)
  const ns = checkNamespace(type, obj, req)
  admitNamespaceLifecycle(type, obj, ns, c.namespace(ns))
  const name = checkName(c, type, obj)
  if (c.live(type, ns, name)) throw alreadyExists(type.group, type.resource, name)
  initialise(c, type, obj)
  defaultObject(c, type, obj, undefined)
  const warnings = admit(c, type, obj, req, undefined)
  const managed = c.engine.track(undefined, obj, { manager: managerOf(req), topology: type.topology, apiVersion: obj.apiVersion, resetFields: resetFieldsOf(type, undefined) })
  if (isDryRun(req)) return { status: 201, body: managed, headers: headerMap(undefined, warnings) ?? {} }
  const stored = commitNew(c, type, managed)
  return c.objectReply(type, 201, stored, headerMap(undefined, warnings))
}

/** Stores a new object, with what follows a write (Service IPs, CRD registration, quota status). */
export function commitNew(c: ServerState, type: ResourceType, obj: KubeObject): StoredObject {
  const stored = c.store.put(tableOf(type), obj)
  trackServiceIP(c, type, obj, true)
  if (isCRD(type)) return crdChanged(c, stored)
  syncQuotas(c, stored.namespace)
  return stored
}

/** A PUT of an object or its `/status`. */
export function update(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const live = c.mustLive(type, req)
  const next = stamp(type, bodyObject(req))
  return writeUpdate(c, type, req, live, next, { patch: false, subresource: req.subresource })
}

/**
 * The update pipeline shared by PUT, non-apply patches and scale: preconditions, identity,
 * subresource rules, finalizers, defaulting, validation, generation, managedFields, no-op skip.
 */
export function writeUpdate(c: ServerState, type: ResourceType, req: ApiRequest, live: StoredObject, next: KubeObject, o: { patch: boolean; subresource: string | undefined }): Reply {
  if (o.subresource !== 'scale') decodes(type, req, next)
  const old = live.obj
  const name = live.name
  const m = next.metadata
  // managedFields sent with a write replace the stored ones (`[{}]` clears them): a change even
  // when nothing else changes.
  const sentManagedFields = m.managedFields !== undefined
  if (m.name !== undefined && m.name !== name) throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${name})`)
  if (type.namespaced && m.namespace !== undefined && m.namespace !== live.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
  // A PUT's uid is a precondition, as the registry's update makes it; a patch's is validated (uidChange).
  if (o.patch && o.subresource !== 'status') {
    const changed = uidChange(m.uid, old.metadata.uid)
    if (changed.length > 0) throw invalidObject(type, name, changed)
  } else if (m.uid !== undefined && m.uid !== '' && m.uid !== old.metadata.uid)
    throw conflict(type.group, type.resource, name, `Precondition failed: UID in precondition: ${m.uid}, UID in object meta: ${old.metadata.uid ?? ''}`)
  const rv = m.resourceVersion
  if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
  if ((rv === undefined || rv === '') && type.custom && !o.patch)
    throw invalidObject(type, name, [{ reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0: must be specified for an update' }])
  let obj: KubeObject
  if (o.subresource === 'resize') {
    // pod-resize.ts: only the containers' resources and resizePolicy change, within ValidatePodResize.
    obj = resizedPod(next, old)
    const causes = validateResize(obj, old)
    if (causes.length > 0) throw invalidObject(type, name, causes)
    if (m.managedFields !== undefined) obj.metadata.managedFields = m.managedFields
  } else if (o.subresource === 'status') {
    // /status takes only status from the request. A custom resource's stored object may hold
    // fields its CRD's schema has since dropped, which pruning removes: it gets a private copy.
    obj = type.custom ? live.copyWithoutStatus() : live.withoutStatus()
    if (next.status !== undefined) obj.status = next.status
    if (m.managedFields !== undefined) obj.metadata.managedFields = m.managedFields
    statusKeepsAnnotations(type, obj, next)
  } else {
    obj = next
    m.name = name
    if (type.namespaced) m.namespace = live.namespace
    else delete m.namespace
    m.uid = old.metadata.uid ?? ''
    m.creationTimestamp = old.metadata.creationTimestamp ?? ''
    if (old.metadata.deletionTimestamp) m.deletionTimestamp = old.metadata.deletionTimestamp
    else delete m.deletionTimestamp
    if (old.metadata.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds
    else delete m.deletionGracePeriodSeconds
    if (m.managedFields === undefined && old.metadata.managedFields !== undefined) m.managedFields = old.metadata.managedFields
    if (type.subresources.status && o.subresource !== 'scale') {
      if (old.status === undefined) delete obj.status
      else obj.status = old.status
    }
    if (old.metadata.deletionTimestamp) {
      const had = new Set(old.metadata.finalizers ?? [])
      const added = (m.finalizers ?? []).filter((f) => !had.has(f))
      if (added.length > 0)
        throw invalidObject(type, name, [{ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: 'Forbidden: no new finalizers can be added if the object is being deleted' }])
    }
    defaultObject(c, type, obj, old)
  }
  obj.metadata.resourceVersion = old.metadata.resourceVersion ?? ''
  const warnings = admit(c, type, obj, req, old)
  setGeneration(type, old, obj, o.subresource)
  if (sameObject(obj, old, sentManagedFields)) return c.objectReply(type, 200, live)
  const subresource = o.subresource === 'status' || o.subresource === 'scale' ? o.subresource : undefined
  const call: Parameters<WriteEngine['track']>[2] = { manager: managerOf(req), topology: type.topology, apiVersion: groupVersion(type.group, type.version), resetFields: resetFieldsOf(type, subresource) }
  if (subresource) call.subresource = subresource
  const managed = c.engine.track(old, obj, call)
  return commitUpdate(c, type, req, live, managed, warnings)
}

/** Stores an updated object, or removes it when it is deleting and has no finalizers left. */
export function commitUpdate(c: ServerState, type: ResourceType, req: ApiRequest, live: StoredObject, obj: KubeObject, warnings: string[]): Reply {
  const headers = headerMap(undefined, warnings)
  if (isDryRun(req)) return { status: 200, body: obj, ...(headers ? { headers } : {}) }
  // As the registry's shouldDeleteDuringUpdate: gone once deleting with no grace left and no finalizers.
  if (obj.metadata.deletionTimestamp && (obj.metadata.deletionGracePeriodSeconds ?? 0) === 0 && (obj.metadata.finalizers ?? []).length === 0) {
    // As the registry's errEmptiedFinalizers path: the object is deleted, not updated first;
    // the DELETED event carries its last stored state.
    const removed = removeNow(c, type, live.namespace, live.name)
    return c.objectReply(type, 200, removed ?? live, headers)
  }
  trackServiceIP(c, type, live.obj, false)
  const stored = c.store.put(tableOf(type), obj)
  trackServiceIP(c, type, obj, true)
  const final = isCRD(type) ? crdChanged(c, stored) : stored
  syncQuotas(c, stored.namespace)
  return c.objectReply(type, 200, final, headers)
}

/** A JSON, merge or strategic-merge PATCH (server-side apply is apply.ts). */
export function patch(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const pt = patchTypeOf(req.contentType)
  const accepted = type.custom ? [jsonPatchType, mergePatchType, applyPatchType, applyPatchCbor] : [jsonPatchType, mergePatchType, strategicPatchType, applyPatchType, applyPatchCbor]
  if (pt === undefined || (pt === 'strategic' && type.custom)) throw unsupportedMediaType(accepted)
  const live = c.mustLive(type, req)
  // A merge patch of a built-in kind's /status builds on the frozen stored object: the patch
  // copies what it changes and shares the rest (mergePatch never mutates its target), and the
  // /status write keeps only the status from the result. Anything else patches a private copy.
  const frozen = pt === 'merge' && req.subresource === 'status' && !type.custom ? live.frozen() : undefined
  const target = frozen === undefined ? live.copy() : ({ ...frozen, metadata: { ...frozen.metadata } } as KubeObject)
  const patched = patchObject(c, type, target, req, pt)
  const next = stamp(type, patched)
  return writeUpdate(c, type, req, live, next, { patch: true, subresource: req.subresource })
}

function patchObject(c: ServerState, type: ResourceType, target: KubeObject, req: ApiRequest, pt: string): KubeObject {
  // Custom resource versions share storage: patch the object as served at this endpoint's version.
  target.apiVersion = groupVersion(type.group, type.version)
  const body = typeof req.body === 'string' ? parseJson(req.body) : req.body
  let out: unknown
  if (pt === 'json') {
    if (!Array.isArray(body)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
    try {
      out = jsonpatch.applyPatch(target, body as Operation[], true, true, true).newDocument
    } catch (e) {
      throw new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {
        causes: [{ reason: 'UnexpectedServerResponse', message: e instanceof Error ? e.message.split('\n')[0] ?? '' : String(e) }],
      })
    }
  } else {
    if (!isObject(body)) throw badRequest('the body of the request is not a JSON object')
    out = pt === 'merge' ? mergePatch(target, body) : c.engine.strategicMergePatch(target, body as JsonObject, type.topology)
  }
  if (!isObject(out)) throw badRequest('the patched object is not a JSON object')
  const obj = out as KubeObject
  if (!isObject(obj.metadata)) obj.metadata = {}
  return obj
}
