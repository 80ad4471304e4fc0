/**
 * Why a StatefulSet's pods cannot be created. The Deployment controller copies a ReplicaSet's
 * FailedCreate into the Deployment's `ReplicaFailure` condition; the StatefulSet controller sets
 * no condition at all: it only records a Warning Event `FailedCreate` on the StatefulSet, "create
 * Pod <pod> in StatefulSet <set> failed error: <the server's refusal>" (kubernetes
 * pkg/controller/statefulset/stateful_pod_control.go, `recordPodEvent`), for a quota, a Pod
 * Security or SCC refusal, a webhook's denial. The operator reads those Events through an
 * informer narrowed by a field selector to exactly that (`involvedObject.kind=StatefulSet`,
 * `reason=FailedCreate`: fields the Event registry selects on), cached as small summaries.
 */
import type { KubeObject } from '../controller/client.ts'

/** The field selector of the informer. */
export const FAILED_CREATE_SELECTOR = 'involvedObject.kind=StatefulSet,reason=FailedCreate'

/** The index of the cached Events by their StatefulSet's uid. */
export const INVOLVED_UID_INDEX = 'involvedUid'

/** What is kept of a FailedCreate Event. */
export interface FailedCreateEvent extends KubeObject {
  involvedObject: { name: string; uid: string }
  message: string
  /** Of the last occurrence, in ms since the epoch (lastTimestamp, eventTime or creation). */
  lastSeen: number
}

/** Keeps of an Event what {@link failedCreateCause} reads. */
export function failedCreateSummary(o: KubeObject): FailedCreateEvent {
  const e = o as KubeObject & { involvedObject?: { name?: string; uid?: string }; message?: string; lastTimestamp?: string | null; eventTime?: string | null; series?: { lastObservedTime?: string } }
  const time = [e.series?.lastObservedTime, e.lastTimestamp, e.eventTime, e.metadata.creationTimestamp].map((t) => Date.parse(t ?? '')).find((t) => !Number.isNaN(t)) ?? 0
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: e.metadata.name ?? '', namespace: e.metadata.namespace ?? '', ...(e.metadata.uid ? { uid: e.metadata.uid } : {}), ...(e.metadata.resourceVersion ? { resourceVersion: e.metadata.resourceVersion } : {}) },
    involvedObject: { name: e.involvedObject?.name ?? '', uid: e.involvedObject?.uid ?? '' },
    message: e.message ?? '',
    lastSeen: time,
  }
}

/** The fields of a StatefulSet this reads. */
interface StatefulSetLike {
  kind?: string
  metadata: { uid?: string }
  spec?: { replicas?: number }
  status?: { replicas?: number }
}

/**
 * The message of the latest FailedCreate Event of `workload` while it has fewer pods than it
 * wants (`status.replicas < spec.replicas`): once every pod exists, an earlier refusal is history.
 */
export function failedCreateCause(live: object | undefined, events: (uid: string) => readonly FailedCreateEvent[]): string | undefined {
  const workload = live as StatefulSetLike | undefined
  if (workload?.kind !== 'StatefulSet' || !workload.metadata.uid) return undefined
  const want = workload.spec?.replicas ?? 1
  if ((workload.status?.replicas ?? 0) >= want) return undefined
  let latest: FailedCreateEvent | undefined
  for (const e of events(workload.metadata.uid)) if (!latest || e.lastSeen > latest.lastSeen) latest = e
  return latest?.message
}
