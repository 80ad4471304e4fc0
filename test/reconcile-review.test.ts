/** Failure paths of the reconciler that must end reported: condition, event, log line and metric. */
import t from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { eventually, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const getMc = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
type Condition = { type: string; status: string; reason: string; message: string }
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as { conditions?: Condition[] }).conditions?.find((c) => c.type === type)

// An object the caches do not show is created by a uid-guarded apply: what can fail on its way is that apply.
t.test('a failed create of an object the caches do not show is reported as Degraded, a Warning event and a metric', async (t) => {
  // A 5xx without Retry-After is reported once such failures have lasted (transient.ts): here at once.
  const bed = await startBed({ sustainedFailureMs: 0 })
  t.teardown(() => bed.stop())
  // Only the apply that creates the Service fails; lists, watches and the other writes go through.
  bed.sandbox.faults.set({ errorRate: 1, verbs: ['patch'], resources: ['services'] })
  await bed.client.create({ ...MC, metadata: { name: 'unread', namespace: 'default' }, spec: { size: 1 } })
  const cr = await eventually('Degraded', async () => {
    const o = await getMc(bed.client, 'unread')
    return condition(o, 'Degraded')?.status === 'True' ? o : undefined
  })
  t.equal(condition(cr, 'Degraded')?.reason, 'ApplyFailed')
  t.match(condition(cr, 'Degraded')?.message, /Service default\/unread/)
  const events = await bed.client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: 'default' })
  t.ok(
    events.items.some((e) => (e as unknown as { type: string; reason: string }).type === 'Warning' && (e as unknown as { reason: string }).reason === 'ApplyFailed'),
    'a Warning event',
  )
  t.ok((bed.metrics.counts['failed:ApplyFailed'] ?? 0) > 0, 'a failure metric')
  bed.sandbox.faults.set({})
  await eventually('recovered', async () => {
    const o = await getMc(bed.client, 'unread')
    return condition(o, 'Degraded')?.status === 'False' ? o : undefined
  })
})
