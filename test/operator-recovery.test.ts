import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { eventually, operatorWrites, reconcileCount, reconciles, startBed, startOperatorOn, type Bed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const sample = (name: string, size: number) => ({ ...MC, metadata: { name, namespace: 'default' }, spec: { size } })
type Status = { nodes?: string[]; readyReplicas?: number; replicas?: number; observedGeneration?: number }

async function converged(bed: Pick<Bed, 'client'>, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} converged at ${size}`, async () => {
    const cr = await bed.client.get({ ...MC, namespace: 'default', name })
    const s = (cr.status ?? {}) as Status
    return s.observedGeneration === cr.metadata.generation && s.nodes?.length === size && s.readyReplicas === size && s.replicas === size ? cr : undefined
  }, 30_000)
}

t.test('a restarted operator makes zero writes for CRs that are already done', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const names = ['r-a', 'r-b', 'r-c', 'r-d']
  for (const [i, n] of names.entries()) await bed.client.create(sample(n, i + 1))
  for (const [i, n] of names.entries()) await converged(bed, n, i + 1)
  // A new process: empty caches, no memory of what it applied.
  await bed.controller.stop()
  bed.sandbox.requests.reset()
  const second = await startOperatorOn(bed.sandbox)
  t.teardown(() => second.stop())
  await reconciles(second.metrics, 0, names.length)
  await new Promise((r) => setTimeout(r, 200))
  t.same(operatorWrites(bed.sandbox), [], 'no write at all')
  t.ok((second.metrics.counts['skipped:Deployment'] ?? 0) >= names.length, 'every Deployment compared equal')
})

t.test('dropped watches and 410 Expired on resume are recovered', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create(sample('w', 1))
  await converged(bed, 'w', 1)
  bed.sandbox.faults.set({ watchDropS: 1, expireOnResume: true })
  await new Promise((r) => setTimeout(r, 1500))
  await bed.client.patch({ ...MC, namespace: 'default', name: 'w' }, { spec: { size: 3 } }, { type: 'merge' })
  await converged(bed, 'w', 3)
  await bed.client.create(sample('w2', 2))
  await converged(bed, 'w2', 2)
  bed.sandbox.faults.set({})
  t.pass('converged through dropped watches and relists')
})

t.test('server errors on writes are retried with backoff until they pass', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  bed.sandbox.faults.set({ errorRate: 0.5, throttleRate: 0.2, retryAfterS: 0, verbs: ['patch', 'delete', 'create'], resources: ['deployments', 'services', 'poddisruptionbudgets', 'memcacheds/status'] })
  await bed.client.create(sample('flaky', 2))
  const before = reconcileCount(bed.metrics)
  await eventually('some failures', () => ((bed.metrics.counts['reconciled:error'] ?? 0) > 0 ? true : undefined))
  bed.sandbox.faults.set({})
  await converged(bed, 'flaky', 2)
  t.ok(reconcileCount(bed.metrics) > before)
  const applies = operatorWrites(bed.sandbox).filter((w) => w.resource === 'deployments').length
  t.ok(applies < 50, `retries are bounded by backoff (${applies} Deployment applies)`)
})
