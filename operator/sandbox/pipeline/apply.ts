/** Server-side apply: the configuration checked, merged by the structured-merge-diff engine with conflicts reported per field, then admitted and stored as any write (apiserver endpoints/handlers/patch.go applyPatcher). */
import { isObject } from '../../kube/json.ts'
import { StatusError, badRequest, conflict, invalidObject, invalidOptions, notFound } from '../errors.ts'
import { groupVersion } from '../registry.ts'
import { admitNamespaceLifecycle } from '../admission/namespace.ts'
import { invalid as invalidCause } from '../../kube/builtin/field.ts'
import { uidChange } from '../../kube/builtin/validation.ts'
import { applyErrorText } from '../../kube/openapi-apply.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import { nameProblems, initialise } from './new-object.ts'
import { type Reply, headerMap, isDryRun } from './reply.ts'
import { parseApplyBody, stamp } from './decode.ts'
import { defaultObject, admit } from './admission.ts'
import { commitNew, commitUpdate } from './writes.ts'
import { type ApplyConflict, type ApplyCall, type WriteEngine, ServerState } from './state.ts'
import { sameObject, resetFieldsOf, statusKeepsAnnotations, setGeneration } from './objects.ts'

function applyConflict(conflicts: ApplyConflict[], message: string): StatusError {
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}" using ${c.apiVersion}`, field: c.field }))
  return new StatusError(409, 'Conflict', message, { causes })
}

/** A server-side apply (`PATCH` with `application/apply-patch+yaml`): creates or updates, with field ownership. */
export function apply(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const manager = req.query.get('fieldManager')
  if (!manager) throw invalidOptions('PatchOptions', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }])
  if (manager.length > 128) throw invalidOptions('PatchOptions', [{ reason: 'FieldValueTooLong', field: 'fieldManager', message: `Too long: may not be more than 128 bytes` }])
  const force = req.query.get('force') === 'true'
  const cfg = parseApplyBody(req.body)
  const gv = groupVersion(type.group, type.version)
  if (cfg.apiVersion !== gv) throw badRequest(`Incorrect version specified in apply patch. Specified patch version: ${String(cfg.apiVersion ?? '')}, expected: ${gv}`)
  if (cfg.kind !== type.kind) throw badRequest(`Incorrect kind specified in apply patch. Specified patch kind: ${String(cfg.kind ?? '')}, expected: ${type.kind}`)
  if (!isObject(cfg.metadata)) cfg.metadata = {}
  if (cfg.metadata.managedFields !== undefined && cfg.metadata.managedFields !== null) throw badRequest('metadata.managedFields must be nil')
  delete cfg.metadata.managedFields
  const name = req.name ?? ''
  if (cfg.metadata.name !== undefined && cfg.metadata.name !== name) throw badRequest(`the name of the object (${cfg.metadata.name}) does not match the name on the URL (${name})`)
  cfg.metadata.name = name
  if (type.namespaced) {
    if (cfg.metadata.namespace !== undefined && cfg.metadata.namespace !== req.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    cfg.metadata.namespace = req.namespace ?? ''
  }
  const subresource = req.subresource === 'status' ? 'status' : undefined
  const live = c.live(type, req.namespace, name)
  // A resourceVersion in the configuration is a precondition, as for every other write.
  const rvPre = cfg.metadata.resourceVersion
  if (live && typeof rvPre === 'string' && rvPre !== '' && rvPre !== live.obj.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
  if (!live) {
    if (subresource) throw notFound(type.group, type.resource, name)
    const ns = type.namespaced ? (req.namespace ?? '') : ''
    admitNamespaceLifecycle(type, cfg, ns, c.namespace(ns))
    const problems = nameProblems(type, name)
    if (problems.length > 0) throw invalidObject(type, name, problems.map((p) => invalidCause('metadata.name', JSON.stringify(name), p)))
  }
  const call: ApplyCall = { manager, force, topology: type.topology, apiVersion: gv, resetFields: resetFieldsOf(type, subresource), defaulter: (o) => defaultObject(c, type, o, live?.obj) }
  if (subresource) call.subresource = subresource
  // structured-merge-diff names the object as `<namespace>/<name>; <group>/<version>, Kind=<kind>`.
  const typedName = `${type.namespaced ? (req.namespace ?? '') : ''}/${name}; ${type.group}/${type.version}, Kind=${type.kind}`
  if (type.prune) {
    // A field the CRD schema does not declare fails the typed conversion of the patch; the
    // server answers with that raw error (HTTP 500, no reason), whatever fieldValidation says
    // (kubernetes/kubernetes#139253).
    // A built-in kind's configuration is also typed: a value of the wrong type fails the same way.
    const errors = type.applyErrors ? type.applyErrors(cfg) : type.prune(structuredClone(cfg)).slice(0, 1).map((p) => `.${p}: field not declared in schema`)
    if (errors.length > 0) throw new StatusError(500, '', `failed to create typed patch object (${typedName}): ${applyErrorText(errors)}`)
  }
  let result: ReturnType<WriteEngine['apply']>
  try {
    result = c.engine.apply(live?.copy(), cfg, call)
  } catch (e) {
    if (e instanceof StatusError) throw e
    // The engine's typing errors (duplicate list-map keys, missing key fields) carry path and detail.
    const typed = e as { path?: unknown; detail?: unknown; message?: unknown }
    const what = typeof typed.path === 'string' && typeof typed.detail === 'string' ? `${typed.path}: ${typed.detail}` : String(typed.message ?? e)
    throw new StatusError(500, '', `failed to create typed patch object (${typedName}): ${what}`)
  }
  if (!result.ok) throw applyConflict(result.conflicts, result.message)
  // An apply that creates takes a server-generated uid whatever the configuration says (#initialise;
  // registry/generic/registry/store.go `Update` fills the system fields on its create path); one
  // to an existing object may not change it.
  if (live && !subresource) {
    const changed = uidChange(cfg.metadata.uid, live.obj.metadata.uid)
    if (changed.length > 0) throw invalidObject(type, name, changed)
  }
  const obj = stamp(type, result.object)
  if (!live) {
    initialise(c, type, obj)
    defaultObject(c, type, obj, undefined)
    const warnings = admit(c, type, obj, req, undefined)
    if (isDryRun(req)) return { status: 201, body: obj, headers: headerMap(undefined, warnings) ?? {} }
    return c.objectReply(type, 201, commitNew(c, type, obj), headerMap(undefined, warnings))
  }
  if (!result.changed) return c.objectReply(type, 200, live)
  const old = live.obj
  let next: KubeObject
  if (subresource === 'status') {
    next = live.copyWithoutStatus()
    if (obj.status !== undefined) next.status = obj.status
    if (obj.metadata.managedFields) next.metadata.managedFields = obj.metadata.managedFields
    statusKeepsAnnotations(type, next, obj)
  } else {
    next = obj
    const m = next.metadata
    m.uid = old.metadata.uid ?? ''
    m.creationTimestamp = old.metadata.creationTimestamp ?? ''
    if (old.metadata.deletionTimestamp) m.deletionTimestamp = old.metadata.deletionTimestamp
    if (old.metadata.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds
    if (type.subresources.status) {
      if (old.status === undefined) delete next.status
      else next.status = old.status
    }
    if (old.metadata.deletionTimestamp) {
      const had = new Set(old.metadata.finalizers ?? [])
      if ((m.finalizers ?? []).some((f) => !had.has(f)))
        throw invalidObject(type, name, [{ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: 'Forbidden: no new finalizers can be added if the object is being deleted' }])
    }
  }
  next.metadata.resourceVersion = old.metadata.resourceVersion ?? ''
  const warnings = admit(c, type, next, req, old)
  setGeneration(type, old, next, subresource)
  if (sameObject(next, old, true)) return c.objectReply(type, 200, live)
  return commitUpdate(c, type, req, live, next, warnings)
}
