/**
 * A server that sheds the operator's writes (429 with Retry-After, as API Priority and Fairness
 * does) is retried, not reported: the client retries in-request (client-go rest/with_retry.go),
 * the reconcile is requeued with backoff, and the CR gets no Degraded condition, no status write
 * and no Warning event — each would be one more request to the server that asked for fewer.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { findCondition } from '../operator/reconcile/conditions.ts'
import type { Condition } from '../operator/api/memcached.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const REF = { ...MC, namespace: 'default', name: 'shed' }

const conditions = (cr: KubeObject): Condition[] | undefined => (cr.status as { conditions?: Condition[] } | undefined)?.conditions

t.test('a 429-shedding window leaves the CR not Degraded and writes no status and no event', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.apply({ ...MC, metadata: { name: 'shed', namespace: 'default' }, spec: { size: 1, memoryMB: 64 } }, { force: true })
  await eventually('the CR ready', async () => {
    const cr = await bed.client.get(REF)
    return findCondition(conditions(cr), 'Ready')?.status === 'True' && (cr.status as { observedGeneration?: number }).observedGeneration === cr.metadata.generation ? true : undefined
  })
  // Every Deployment apply is shed; Retry-After 0 keeps the test quick (the wait is honoured as given).
  bed.sandbox.faults.set({ throttleRate: 1, retryAfterS: 0, verbs: ['patch'], resources: ['deployments.apps'] })
  const before = bed.sandbox.requests.counts()
  const errorsBefore = bed.metrics.counts['reconciled:error'] ?? 0
  // A change of the pod template (not a larger memoryMB, which the pods would take in place and
  // then find no memcached to tell in the sandbox: operator-resize.test.ts).
  await bed.client.apply({ ...MC, metadata: { name: 'shed', namespace: 'default' }, spec: { size: 1, memoryMB: 64, threads: 2 } }, { force: true })
  await eventually('two reconciles failed', () => ((bed.metrics.counts['reconciled:error'] ?? 0) >= errorsBefore + 2 ? true : undefined))
  const during = bed.sandbox.requests.counts()
  const delta = (key: string, m: Record<string, number>, b: Record<string, number>): number => (m[key] ?? 0) - (b[key] ?? 0)
  t.ok(delta('429', during.byCode, before.byCode) >= 22, 'each reconcile\'s apply was retried in-request: 11 attempts (10 retries) each')
  t.equal(delta('patch memcacheds.cache.example.com/status', during.byVerbResource, before.byVerbResource), 0, 'no status write')
  t.equal(delta('create events', during.byVerbResource, before.byVerbResource) + delta('patch events', during.byVerbResource, before.byVerbResource), 0, 'no event')
  const cr = await bed.client.get(REF)
  t.not(findCondition(conditions(cr), 'Degraded')?.status, 'True', 'not Degraded')
  t.ok((bed.metrics.counts['failed:Throttled'] ?? 0) >= 2, 'counted as throttled')
  t.equal(bed.metrics.counts['failed:ApplyFailed'] ?? 0, 0, 'not as a failed apply')
  // The window ends: the requeued reconcile applies, and the status follows.
  bed.sandbox.faults.set({})
  await eventually('the change applied after the window', async () => {
    const now = await bed.client.get(REF)
    return (now.status as { observedGeneration?: number }).observedGeneration === now.metadata.generation && findCondition(conditions(now), 'Degraded')?.status === 'False' ? true : undefined
  })
  const events = await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  t.same(events.items.filter((e) => e.type === 'Warning').map((e) => e.reason), [], 'no Warning event at all')
})

t.test('a 5xx without Retry-After is not reported until such failures have lasted (SUSTAINED_FAILURE_MS)', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  // A new CR's objects are created by a uid-guarded apply: its Service's fails.
  bed.sandbox.faults.set({ errorRate: 1, verbs: ['patch'], resources: ['services'] })
  const errorsBefore = bed.metrics.counts['reconciled:error'] ?? 0
  await bed.client.apply({ ...MC, metadata: { name: 'shed', namespace: 'default' }, spec: { size: 1 } }, { force: true })
  await eventually('two reconciles failed', () => ((bed.metrics.counts['reconciled:error'] ?? 0) >= errorsBefore + 2 ? true : undefined))
  const cr = await bed.client.get(REF)
  t.not(findCondition(conditions(cr), 'Degraded')?.status, 'True', 'not Degraded yet')
  t.ok((bed.metrics.counts['failed:ServerError'] ?? 0) >= 2, 'counted as a server error')
  t.equal(bed.metrics.counts['failed:ApplyFailed'] ?? 0, 0)
})
