/** What the operator's informers keep of each object: a reconcile's reads and no more (pods, children, Memcacheds). */
import type { KubeObject } from '../controller/client.ts'
import { FIELD_MANAGER } from './diff.ts'
import type { WorkloadLike } from './status.ts'

/** What a pod's status says that the controller keeps. */
interface PodStatusSummary {
  phase?: string
  podIP?: string
  conditions?: { type: string; status: string }[]
}

/**
 * What the controller keeps of a pod: enough for status.nodes, for status.serverList (its IP and
 * whether it is Ready: the Ready condition alone, in the pod's own shape) and for mapping it to its CR.
 */
export function podSummary(pod: KubeObject): KubeObject {
  const { name, namespace, uid, resourceVersion, labels, deletionTimestamp } = pod.metadata
  const { phase, podIP, conditions } = (pod.status ?? {}) as PodStatusSummary
  const ready = Array.isArray(conditions) ? conditions.find((c) => c.type === 'Ready') : undefined
  const status: PodStatusSummary = { ...(phase ? { phase } : {}), ...(podIP ? { podIP } : {}), ...(ready ? { conditions: [{ type: 'Ready', status: ready.status }] } : {}) }
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: { name, namespace, uid, resourceVersion, labels, ...(deletionTimestamp ? { deletionTimestamp } : {}) },
    ...(Object.keys(status).length > 0 ? { status } : {}),
  }
}

/** What of a summarised pod the status shows: its phase, its IP and whether it is Ready. */
export function podStatusKey(pod: KubeObject): string {
  const { phase, podIP, conditions } = (pod.status ?? {}) as PodStatusSummary
  return `${phase ?? ''}/${podIP ?? ''}/${conditions?.[0]?.status ?? ''}`
}

type ManagedFieldsEntry = { manager?: string; operation?: string; fieldsV1?: { 'f:spec'?: Record<string, unknown> } }

/**
 * A Memcached as cached. Of its managedFields a reconcile reads nothing; a rollout reads who set
 * spec.chartRevision (a person's pin holds the CR: fleet/rollout-waves.ts personPin), so the
 * entries that own it are kept, reduced to that field.
 */
export function memcachedSummary(o: KubeObject): KubeObject {
  const entries = o.metadata.managedFields as ManagedFieldsEntry[] | undefined
  if (!entries) return o
  const { managedFields: _, ...metadata } = o.metadata
  const pins = entries
    .filter((m) => m.fieldsV1?.['f:spec'] !== undefined && 'f:chartRevision' in m.fieldsV1['f:spec'])
    .map((m) => ({ ...(m.manager !== undefined ? { manager: m.manager } : {}), ...(m.operation !== undefined ? { operation: m.operation } : {}), fieldsV1: { 'f:spec': { 'f:chartRevision': {} } } }))
  return { ...o, metadata: pins.length > 0 ? ({ ...metadata, managedFields: pins } as KubeObject['metadata']) : metadata }
}

/**
 * A child as cached: what a reconcile reads of it. Of its managedFields only the operator's own
 * Apply entry on the main resource, with its fieldsV1 kept as JSON text (the
 * diff parses it when it runs, which a remembered apply spares; as text it takes a fraction of the
 * memory of the parsed tree); of its
 * status only what the CR's status and a kind switch read, a Deployment's or StatefulSet's replica
 * counts and conditions (status.ts `WorkloadLike`) — no rendered object carries a status, so the
 * diff never compares one.
 */
export function childSummary(o: KubeObject): KubeObject {
  const entries = o.metadata.managedFields as { manager?: string; operation?: string; subresource?: string; fieldsV1?: unknown }[] | undefined
  const { status, ...rest } = o
  const ours = (e: { manager?: string; operation?: string; subresource?: string }) => e.manager === FIELD_MANAGER && e.operation === 'Apply' && (e.subresource ?? '') === ''
  const own = entries?.flatMap<Record<string, unknown>>((e) => (ours(e) ? [{ manager: e.manager, operation: e.operation, fieldsV1: JSON.stringify(e.fieldsV1 ?? {}) }] : []))
  const out: KubeObject = own ? { ...rest, metadata: { ...o.metadata, managedFields: own } as KubeObject['metadata'] } : rest
  if ((o.kind === 'Deployment' || o.kind === 'StatefulSet') && status !== undefined) out.status = workloadStatusSummary(status as WorkloadLike['status'] & object)
  return out
}

/** The fields of a workload's status that status.ts and the kind switch read. */
export function workloadStatusSummary(s: NonNullable<WorkloadLike['status']>): WorkloadLike['status'] {
  const { observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas, conditions } = s
  return {
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(updatedReplicas !== undefined ? { updatedReplicas } : {}),
    ...(readyReplicas !== undefined ? { readyReplicas } : {}),
    ...(availableReplicas !== undefined ? { availableReplicas } : {}),
    ...(Array.isArray(conditions) ? { conditions: conditions.map(({ type, status, reason, message }) => ({ type, status, ...(reason !== undefined ? { reason } : {}), ...(message !== undefined ? { message } : {}) })) } : {}),
  }
}
