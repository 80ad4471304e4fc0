/**
 * Ready follows availableReplicas, as `kubectl rollout status` does (kubectl
 * pkg/polymorphichelpers/rollout_status.go waits for available replicas): with minReadySeconds a
 * pod that just became ready is not yet available, and the CR must not say Ready/RolloutComplete
 * while the workload's own Available condition is still False.
 */
import t from 'tap'
import type { Memcached, MemcachedStatus } from '../operator/api/memcached.ts'
import { findCondition } from '../operator/reconcile/conditions.ts'
import { computeStatus, type StatusInput, type WorkloadLike } from '../operator/reconcile/status.ts'

const labels = { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' }
const cr: Memcached = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: 'team', uid: 'u', generation: 2 }, spec: { size: 3 } }
const workload = (kind: string, status: NonNullable<WorkloadLike['status']>): WorkloadLike => ({ kind, metadata: { name: 'cache', generation: 5 }, spec: { replicas: 3, selector: { matchLabels: labels } }, status: { observedGeneration: 5, ...status } })
const input = (live: WorkloadLike): StatusInput => ({ cr, desiredWorkload: { ...live, status: undefined }, liveWorkload: live, pods: [], outcome: { kind: 'ok' }, now: new Date('2026-11-21T10:00:00Z') })
const summary = (s: MemcachedStatus) => Object.fromEntries((s.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]))

for (const kind of ['Deployment', 'StatefulSet']) {
  t.test(`${kind}: every pod ready, one available (minReadySeconds not yet passed): not Ready`, async (t) => {
    const s = computeStatus(input(workload(kind, { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 1 })))
    t.same(summary(s), { Available: 'False/ReplicasNotReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/ReplicasNotReady' })
    t.equal(findCondition(s.conditions, 'Available')?.message, '1/3 replicas available (3 ready, each must stay ready for minReadySeconds)')
    t.equal(findCondition(s.conditions, 'Progressing')?.message, 'rolling out: 3/3 updated, 3/3 ready, 1/3 available, 3 running')
    t.equal(s.readyReplicas, 3, 'status.readyReplicas still counts ready pods')
  })

  t.test(`${kind}: every pod available: Ready`, async (t) => {
    const s = computeStatus(input(workload(kind, { replicas: 3, updatedReplicas: 3, readyReplicas: 3, availableReplicas: 3 })))
    t.same(summary(s), { Available: 'True/AllReplicasReady', Progressing: 'False/RolloutComplete', Degraded: 'False/AsExpected', Ready: 'True/Reconciled' })
    t.equal(findCondition(s.conditions, 'Available')?.message, '3/3 replicas ready')
  })
}

t.test('a Deployment omits availableReplicas when none is available (omitempty): none counts', async (t) => {
  const s = computeStatus(input(workload('Deployment', { replicas: 3, updatedReplicas: 3, readyReplicas: 3 })))
  t.equal(findCondition(s.conditions, 'Ready')?.status, 'False')
  t.equal(findCondition(s.conditions, 'Available')?.message, '0/3 replicas available (3 ready, each must stay ready for minReadySeconds)')
})
