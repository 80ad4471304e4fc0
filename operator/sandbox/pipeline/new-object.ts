/** What a new object gets from the server: uid, creationTimestamp, generation, initial status, a name from generateName, and the name's validation per kind (ValidateObjectMeta's name functions). */
import { rbacNameProblem } from '../../kube/builtin/rbac.ts'
import { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain } from '../../kube/names.ts'
import { randomUUID } from 'node:crypto'
import { invalidObject } from '../errors.ts'
import { invalid as invalidCause } from '../../kube/builtin/field.ts'
import type { Json, KubeObject, ResourceType } from '../types.ts'

import { ServerState } from './state.ts'
import { getPath } from './objects.ts'

/** The validation messages for an object name (ValidateObjectMeta's name function per kind); empty when valid. */
export function nameProblems(type: ResourceType, name: string): string[] {
  if (type.group === 'rbac.authorization.k8s.io') {
    const p = rbacNameProblem(name)
    return p === undefined ? [] : [p]
  }
  // Namespaces and StatefulSets (room for the pods' ordinal suffix) are DNS labels, Services DNS-1035 labels.
  if (type.kind === 'Namespace' && type.group === '') return isDNS1123Label(name)
  if (type.kind === 'StatefulSet' && type.group === 'apps') return isDNS1123Label(name)
  if (type.kind === 'Service' && type.group === '') return isDNS1035Label(name)
  return isDNS1123Subdomain(name)
}

const generateAlphabet = 'bcdfghjklmnpqrstvwxz2456789'

/** A pod's QoS class from its containers' resources (simplified: Guaranteed needs equal cpu and memory). */
export function qosClass(pod: KubeObject): string {
  const containers = (getPath(pod, 'spec.containers') as { resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } }[] | undefined) ?? []
  let any = false
  let guaranteed = containers.length > 0
  for (const c of containers) {
    const req = c.resources?.requests ?? {}
    const lim = c.resources?.limits ?? {}
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) any = true
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || (req[r] !== undefined && req[r] !== lim[r])) guaranteed = false
    }
  }
  return guaranteed ? 'Guaranteed' : any ? 'Burstable' : 'BestEffort'
}

function initialStatus(type: ResourceType, obj: KubeObject): Json {
  switch (type.kind) {
    case 'Pod':
      return { phase: 'Pending', qosClass: qosClass(obj) }
    case 'Service':
      return { loadBalancer: {} }
    case 'Namespace':
      return { phase: 'Active' }
    case 'ReplicaSet':
      return { replicas: 0 }
    case 'StatefulSet':
      return { replicas: 0, availableReplicas: 0 }
    case 'HorizontalPodAutoscaler':
      return { desiredReplicas: 0 }
    case 'PodDisruptionBudget':
      return { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 }
    default:
      return {}
  }
}

/** Fields a new object gets from the server (identity, timestamps, initial status). */
export function initialise(c: ServerState, type: ResourceType, obj: KubeObject): void {
  const m = obj.metadata
  delete m.resourceVersion
  delete m.deletionTimestamp
  delete m.deletionGracePeriodSeconds
  delete (m as Record<string, unknown>).selfLink
  m.uid = randomUUID()
  m.creationTimestamp = c.now()
  if (type.generation === 'none') delete m.generation
  else m.generation = 1
  if (type.subresources.status) {
    if (type.custom) delete obj.status
    else obj.status = initialStatus(type, obj)
  }
}

/** The new object's name (generated from `generateName` when absent), validated for its kind. */
export function checkName(c: ServerState, type: ResourceType, obj: KubeObject): string {
  const m = obj.metadata
  if (!m.name) {
    if (m.generateName) {
      // Random suffix from the same alphabet as kube's rand.String; retried on collision.
      const prefix = m.generateName.length > 58 ? m.generateName.slice(0, 58) : m.generateName
      for (let attempt = 0; attempt < 10; attempt++) {
        let suffix = ''
        for (let i = 0; i < 5; i++) suffix += generateAlphabet[Math.floor(Math.random() * generateAlphabet.length)]
        const name = prefix + suffix
        if (!c.live(type, m.namespace, name)) {
          m.name = name
          break
        }
      }
    } else {
      throw invalidObject(type, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }])
    }
  }
  const name = m.name ?? ''
  const problems = nameProblems(type, name)
  if (problems.length > 0) throw invalidObject(type, name, problems.map((p) => invalidCause('metadata.name', JSON.stringify(name), p)))
  return name
}
