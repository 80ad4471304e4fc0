import t from 'tap'
import { startBed, eventually } from './support/operator.ts'

const sample = (name: string, spec: Record<string, unknown> = { size: 3 }, namespace = 'default') => ({
  apiVersion: 'cache.example.com/v1alpha1',
  kind: 'Memcached',
  metadata: { name, namespace },
  spec,
})

t.test('a Memcached becomes a Deployment, a Service and a PDB it owns, and status.nodes lists its pods', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const cr = await bed.client.create(sample('cache'))
  const status = await eventually('status.nodes with 3 pods', async () => {
    const got = await bed.client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'cache' })
    const s = got.status as { nodes?: string[]; readyReplicas?: number } | undefined
    return s?.nodes?.length === 3 && s.readyReplicas === 3 ? s : undefined
  })
  const pods = await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default', labelSelector: 'app.kubernetes.io/instance=cache' })
  t.same(status.nodes, pods.items.map((p) => p.metadata.name).sort())
  for (const [apiVersion, kind] of [['apps/v1', 'Deployment'], ['v1', 'Service'], ['policy/v1', 'PodDisruptionBudget']] as const) {
    const child = await bed.client.get({ apiVersion, kind, namespace: 'default', name: 'cache' })
    t.same(child.metadata.ownerReferences, [{ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', name: 'cache', uid: cr.metadata.uid, controller: true, blockOwnerDeletion: true }], `${kind} is owned`)
  }
})
