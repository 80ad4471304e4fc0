/** Deletion: preconditions, propagation policies as finalizers, namespaces terminating with their contents, graceful pod termination, deletecollection. */
import { deepEqual, isObject } from '../../kube/json.ts'
import { conflict, deleteSuccess, forbidden, invalidOptions } from '../errors.ts'
import { groupVersion, tableOf } from '../registry.ts'
import { StoredObject } from '../store.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import { type Reply, isDryRun, isCRD, internalRequest } from './reply.ts'
import { trackServiceIP, syncQuotas } from './admission.ts'
import { storedMatches, filterOf } from './filter.ts'

import { ServerState } from './state.ts'
import { sameObject } from './objects.ts'
import { rfc3339 } from '../../kube/time.ts'

/** A DELETE of one object: its preconditions and propagation policy, then the deletion. */
export function deleteOne(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const live = c.mustLive(type, req)
  const opts = isObject(req.body) ? req.body : {}
  const pre = isObject(opts.preconditions) ? opts.preconditions : {}
  if (typeof pre.uid === 'string' && pre.uid !== live.obj.metadata.uid)
    throw conflict(type.group, type.resource, live.name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${live.obj.metadata.uid ?? ''}`)
  if (typeof pre.resourceVersion === 'string' && pre.resourceVersion !== live.obj.metadata.resourceVersion)
    throw conflict(type.group, type.resource, live.name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${live.obj.metadata.resourceVersion ?? ''}`)
  if (type.group === '' && type.kind === 'Namespace' && (live.name === 'default' || live.name === 'kube-system'))
    throw forbidden('', 'namespaces', live.name, 'this namespace may not be deleted')
  const policy = req.query.get('propagationPolicy') ?? (typeof opts.propagationPolicy === 'string' ? opts.propagationPolicy : undefined) ?? (opts.orphanDependents === true ? 'Orphan' : undefined)
  if (policy !== undefined && policy !== 'Background' && policy !== 'Foreground' && policy !== 'Orphan')
    throw invalidOptions('DeleteOptions', [{ reason: 'FieldValueNotSupported', field: 'propagationPolicy', message: `Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"` }])
  return deleteObject(c, type, req, live, policy)
}

function deleteObject(c: ServerState, type: ResourceType, req: ApiRequest, live: StoredObject, policy: string | undefined): Reply {
  const old = live.obj
  let finalizers = [...(old.metadata.finalizers ?? [])]
  if (policy === 'Foreground') finalizers = [...finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion'), 'foregroundDeletion']
  else if (policy === 'Orphan') finalizers = [...finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion'), 'orphan']
  else if (policy === 'Background') finalizers = finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion')
  const dry = isDryRun(req)
  if (type.group === '' && type.kind === 'Namespace' && finalizers.length > 0 && !old.metadata.deletionTimestamp && !dry) return terminateNamespace(c, live, finalizers)
  const grace = podGracePeriod(c, type, req, old)
  if (grace > 0) return deletePodGracefully(c, type, live, finalizers, grace, dry)
  if (finalizers.length === 0 && !old.metadata.deletionTimestamp) {
    if (dry) return deletedReply(c, type, live)
    const removed = removeNow(c, type, live.namespace, live.name)
    return deletedReply(c, type, removed ?? live)
  }
  if (finalizers.length === 0) {
    // Already deleting and the policy dropped the last finalizer.
    if (dry) return deletedReply(c, type, live)
    const removed = removeNow(c, type, live.namespace, live.name)
    return deletedReply(c, type, removed ?? live)
  }
  const next = live.copy()
  const first = !old.metadata.deletionTimestamp
  if (first) {
    next.metadata.deletionTimestamp = c.now()
    next.metadata.deletionGracePeriodSeconds = 0
    if (type.generation !== 'none') next.metadata.generation = (old.metadata.generation ?? 0) + 1
  }
  next.metadata.finalizers = finalizers
  if (!first && sameObject(next, old, true)) return c.objectReply(type, 200, live)
  if (dry) return { status: 200, body: next }
  return c.objectReply(type, 200, c.store.put(tableOf(type), next))
}

/**
 * A namespace whose metadata.finalizers keep it: it becomes `Terminating` (creates in it are
 * refused from now on), the namespace controller's work is done at once (its contents deleted,
 * `spec.finalizers` emptied), and it stays until its finalizers are removed.
 */
function terminateNamespace(c: ServerState, live: StoredObject, finalizers: string[]): Reply {
  const next = live.copy()
  next.metadata.deletionTimestamp = c.now()
  next.metadata.deletionGracePeriodSeconds = 0
  next.metadata.finalizers = finalizers
  next.status = { ...(isObject(next.status) ? next.status : {}), phase: 'Terminating' }
  c.store.put('/namespaces', next)
  deleteContents(c, live.name)
  const cur = c.live(c.namespaceType(), '', live.name) ?? live
  const finalized = cur.copy()
  finalized.spec = { ...(isObject(finalized.spec) ? finalized.spec : {}), finalizers: [] }
  return c.objectReply(c.namespaceType(), 200, c.store.put('/namespaces', finalized))
}

/** The namespace controller's job, done synchronously: every object in the namespace is deleted. */
function deleteContents(c: ServerState, namespace: string): void {
  c.emptying.add(namespace)
  try {
    for (const t of c.registry.all()) {
      if (!t.namespaced || t.version !== c.storageVersionOf(t)) continue
      for (const o of [...c.store.list(tableOf(t), namespace)]) deleteObject(c, t, internalRequest(), o, undefined)
    }
  } finally {
    c.emptying.delete(namespace)
  }
}

/**
 * The grace period of a pod deletion when graceful termination is simulated (podTerminationMs):
 * a scheduled pod gets `gracePeriodSeconds` (query or DeleteOptions), else its
 * terminationGracePeriodSeconds, else 30; 0 means delete now (unscheduled pods, grace 0, or
 * simulation off).
 */
function podGracePeriod(c: ServerState, type: ResourceType, req: ApiRequest, old: KubeObject): number {
  if (c.podTerminationMs <= 0 || type.group !== '' || type.resource !== 'pods') return 0
  const spec = isObject(old.spec) ? old.spec : {}
  if (typeof spec.nodeName !== 'string' || spec.nodeName === '') return 0
  const body = isObject(req.body) ? req.body : {}
  const q = req.query.get('gracePeriodSeconds')
  const asked = q !== null ? Number(q) : typeof body.gracePeriodSeconds === 'number' ? body.gracePeriodSeconds : undefined
  if (asked !== undefined && Number.isFinite(asked)) return Math.max(0, asked)
  if (old.metadata.deletionTimestamp) return old.metadata.deletionGracePeriodSeconds ?? 0
  return typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30
}

/**
 * A pod being terminated: deletionTimestamp = now + grace, deletionGracePeriodSeconds = grace,
 * and after podTerminationMs the simulated kubelet's final delete (grace 0) removes it, or leaves
 * it to its finalizers.
 */
function deletePodGracefully(c: ServerState, type: ResourceType, live: StoredObject, finalizers: string[], grace: number, dry: boolean): Reply {
  const old = live.obj
  if (old.metadata.deletionTimestamp && deepEqual(old.metadata.finalizers ?? [], finalizers)) return c.objectReply(type, 200, live)
  const next = live.copy()
  if (!old.metadata.deletionTimestamp) {
    next.metadata.deletionTimestamp = rfc3339(new Date(Date.now() + grace * 1000))
    next.metadata.deletionGracePeriodSeconds = grace
  }
  if (finalizers.length > 0) next.metadata.finalizers = finalizers
  else delete next.metadata.finalizers
  if (dry) return { status: 200, body: next }
  const stored = c.store.put(tableOf(type), next)
  if (!old.metadata.deletionTimestamp) {
    const uid = old.metadata.uid
    const timer = setTimeout(() => {
      const cur = c.live(type, live.namespace, live.name)
      if (!cur || cur.obj.metadata.uid !== uid || !cur.obj.metadata.deletionTimestamp) return
      if ((cur.obj.metadata.finalizers ?? []).length === 0) removeNow(c, type, live.namespace, live.name)
      else {
        const last = cur.copy()
        last.metadata.deletionGracePeriodSeconds = 0
        c.store.put(tableOf(type), last)
      }
    }, c.podTerminationMs)
    timer.unref()
  }
  return c.objectReply(type, 200, stored)
}

function deletedReply(c: ServerState, type: ResourceType, removed: StoredObject): Reply {
  // Pods and ServiceAccounts answer with the deleted object; everything else with a Status.
  if (type.group === '' && (type.resource === 'pods' || type.resource === 'serviceaccounts')) return c.objectReply(type, 200, removed)
  return { status: 200, body: deleteSuccess(type.group, type.resource, removed.name, removed.obj.metadata.uid ?? '') }
}

/** Removes an object now, with what the server does around it (namespace contents, CRD types). */
export function removeNow(c: ServerState, type: ResourceType, namespace: string, name: string): StoredObject | undefined {
  if (type.group === '' && type.kind === 'Namespace') deleteContents(c, name)
  if (isCRD(type)) {
    for (const t of c.registry.unregisterCRD(name)) {
      for (const o of [...c.store.list(tableOf(t))]) c.store.remove(tableOf(t), o.namespace, o.name)
    }
  }
  const removed = c.store.remove(tableOf(type), namespace, name)
  if (removed) {
    trackServiceIP(c, type, removed.obj, false)
    syncQuotas(c, removed.namespace)
  }
  return removed
}

/** A DELETE of a collection: each object the selectors match, deleted as one DELETE would. */
export function deleteCollection(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const filter = filterOf(type, req)
  const items = c.store.list(tableOf(type), filter.namespace).filter((o) => storedMatches(filter, o))
  const opts = isObject(req.body) ? req.body : {}
  const policy = req.query.get('propagationPolicy') ?? (typeof opts.propagationPolicy === 'string' ? opts.propagationPolicy : undefined)
  const out: string[] = []
  for (const o of [...items]) {
    const reply = deleteObject(c, type, req, o, policy)
    const after = c.live(type, o.namespace, o.name)
    out.push(after ? c.jsonFor(type, after) : reply.json ?? o.json)
  }
  const gv = groupVersion(type.group, type.version)
  return { status: 200, json: `{"kind":${JSON.stringify(type.listKind)},"apiVersion":${JSON.stringify(gv)},"metadata":{"resourceVersion":"${c.store.resourceVersion}"},"items":[${out.join(',')}]}` }
}
