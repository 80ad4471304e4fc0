/** CRD registration: a stored CustomResourceDefinition's versions become served types, with the NamesAccepted and Established conditions written to its status. */
import { deepEqual } from '../../kube/json.ts'
import { StoredObject } from '../store.ts'
import type { ResourceType } from '../types.ts'

import { ServerState } from './state.ts'
import { resetFieldsOf } from './objects.ts'

/** Registers (or re-registers) a CRD's types and writes its status conditions. */
export function crdChanged(c: ServerState, stored: StoredObject): StoredObject {
  const adapter = c.crd
  if (!adapter) return stored
  const crd = stored.obj
  const name = crd.metadata.name ?? ''
  if (crd.metadata.deletionTimestamp) return stored
  let types: ResourceType[] = []
  let conflicts: string[] = []
  try {
    types = adapter.resourceTypes(crd)
  } catch (e) {
    conflicts = [e instanceof Error ? e.message : String(e)]
  }
  const first = types[0]
  if (first) conflicts = c.registry.nameConflicts(name, first.group, first.resource, first.kind)
  if (conflicts.length === 0 && types.length > 0) c.registry.registerCRD(name, types)
  else c.registry.unregisterCRD(name)
  const status = adapter.status(crd, conflicts)
  if (deepEqual(status, crd.status)) return stored
  const next = stored.copy()
  next.status = status
  const crdType = c.registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')
  const tracked = crdType
    ? c.engine.track(crd, next, { manager: 'kube-apiserver', topology: crdType.topology, apiVersion: 'apiextensions.k8s.io/v1', subresource: 'status', resetFields: resetFieldsOf(crdType, 'status') })
    : next
  return c.store.put('apiextensions.k8s.io/customresourcedefinitions', tracked)
}
