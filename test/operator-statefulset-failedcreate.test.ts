/**
 * A StatefulSet whose pods are refused (here by a ResourceQuota) says why only in Warning Events
 * `FailedCreate` on itself (kubernetes pkg/controller/statefulset/stateful_pod_control.go): the
 * CR's Degraded condition carries that cause, as it carries a Deployment's ReplicaFailure, and
 * clears once the pods exist.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { failedCreateCause, failedCreateSummary } from '../operator/reconcile/workload-events.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Condition = { type: string; status: string; reason: string; message: string }

t.test('pods refused by a quota: Degraded ReplicaFailure with the StatefulSet controller\'s message, cleared when the quota goes', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const c = bed.client
  c.learnKinds([{ apiVersion: 'v1', kind: 'ResourceQuota', resource: 'resourcequotas' }])
  await c.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'quota' } })
  await c.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'no-pods', namespace: 'quota' }, spec: { hard: { pods: '0' } } } as KubeObject)
  await eventually('the quota controller counted', async () => ((await c.get({ apiVersion: 'v1', kind: 'ResourceQuota', namespace: 'quota', name: 'no-pods' })).status ? true : undefined))
  await c.create({ ...MC, metadata: { name: 'cache', namespace: 'quota' }, spec: { size: 2, workload: { kind: 'StatefulSet' } } })
  const condition = async (type: string) => ((((await c.get({ ...MC, namespace: 'quota', name: 'cache' })).status ?? {}) as { conditions?: Condition[] }).conditions ?? []).find((x) => x.type === type)
  const degraded = await eventually('Degraded ReplicaFailure', async () => {
    const d = await condition('Degraded')
    return d?.reason === 'ReplicaFailure' ? d : undefined
  })
  t.equal(degraded.status, 'True')
  t.match(degraded.message, /^pods cannot be created: create Pod cache-0 in StatefulSet cache failed error: pods "cache-0" is forbidden: exceeded quota: no-pods, requested: pods=1, used: pods=0, limited: pods=0$/)
  t.match(await condition('Ready'), { status: 'False', reason: 'ReplicaFailure' })
  const events = (await c.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'quota', fieldSelector: 'involvedObject.kind=StatefulSet,reason=FailedCreate' })).items
  t.ok(events.length > 0, 'the sandbox\'s StatefulSet controller records FailedCreate on the StatefulSet, as upstream')

  await c.delete({ apiVersion: 'v1', kind: 'ResourceQuota', namespace: 'quota', name: 'no-pods' })
  await eventually('Ready once the pods exist', async () => ((await condition('Ready'))?.status === 'True' ? true : undefined), 30_000)
  t.match(await condition('Degraded'), { status: 'False', reason: 'AsExpected' })
})

t.test('failedCreateCause: the latest Event\'s message, only for a StatefulSet short of pods', async (t) => {
  const event = (message: string, at: string, extra: Record<string, unknown> = {}) => failedCreateSummary({ apiVersion: 'v1', kind: 'Event', metadata: { name: message, namespace: 'n', creationTimestamp: '2026-01-01T00:00:00Z' }, involvedObject: { name: 's', uid: 'u' }, message, lastTimestamp: at, ...extra } as KubeObject)
  const events = [event('old', '2026-01-01T00:00:01Z'), event('new', '2026-01-01T00:05:00Z'), event('series', '', { lastTimestamp: null, eventTime: '2026-01-01T00:03:00.000000Z' })]
  const set = (replicas: number, have: number, kind = 'StatefulSet') => ({ kind, metadata: { uid: 'u' }, spec: { replicas }, status: { replicas: have } })
  t.equal(failedCreateCause(set(3, 1), () => events), 'new')
  t.equal(events[2]!.lastSeen, Date.parse('2026-01-01T00:03:00Z'), 'eventTime when lastTimestamp is empty')
  t.equal(failedCreateCause(set(3, 3), () => events), undefined, 'every pod exists: history')
  t.equal(failedCreateCause(set(3, 1, 'Deployment'), () => events), undefined, 'a Deployment has ReplicaFailure')
  t.equal(failedCreateCause(set(3, 1), () => []), undefined)
  t.equal(failedCreateCause(undefined, () => events), undefined)
})
