/** Sharding every cache by the CR's labels (reconcile/shard.ts). */
import t from 'tap'
import { selectorKeys, shardSelector, stampShard } from '../operator/reconcile/shard.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'

t.test('the label keys a selector reads; a selector that does not parse, or reads a label the operator sets, is refused', async (t) => {
  t.same(selectorKeys(undefined), [])
  t.same(selectorKeys(' '), [])
  t.same(selectorKeys('shard=a,tier notin (x,y),!legacy,shard!=b'), ['legacy', 'shard', 'tier'])
  t.throws(() => selectorKeys('shard in (a'), /^label selector "shard in \(a": /)
  t.throws(() => selectorKeys('app.kubernetes.io/managed-by=memcached-operator'), /app\.kubernetes\.io\/managed-by is set by the operator on every object it renders/)
})

t.test('the children\'s selector: the operator\'s label, and the shard\'s selector when there is one', async (t) => {
  t.equal(shardSelector('m=o', undefined), 'm=o')
  t.equal(shardSelector('m=o', ''), 'm=o')
  t.equal(shardSelector('m=o', 'shard in (a,b)'), 'm=o,shard in (a,b)')
})

t.test('every object, and a workload\'s pod template, carries the CR\'s values of the keys (and none of a key the CR lacks)', async (t) => {
  const deployment = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'c', labels: { app: 'c', tier: 'stale' } }, spec: { replicas: 1, template: { spec: { containers: [] } } } } as unknown as RenderedObject
  const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'c' }, spec: { ports: [] } } as unknown as RenderedObject
  const cr = { metadata: { labels: { shard: 'a', other: 'x' } } }
  const [d, s] = stampShard([deployment, service], cr, ['shard', 'tier'])
  t.same(d!.metadata.labels, { app: 'c', shard: 'a' }, 'the CR\'s value; a key the CR lacks removed')
  t.same((d as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels, { shard: 'a' }, 'the pods\' template too')
  t.same(s!.metadata.labels, { shard: 'a' })
  t.notOk('template' in ((s as unknown as { spec: object }).spec), 'no template where there was none')
  t.same(deployment.metadata.labels, { app: 'c', tier: 'stale' }, 'the input is not modified')
  t.equal(stampShard([service], cr, [])[0], service, 'no keys: the objects as they are')
})
