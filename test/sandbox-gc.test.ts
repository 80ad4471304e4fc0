import t, { type Test } from 'tap'
import type { KubeObject, OwnerReference } from '../operator/sandbox/types.ts'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'
import { memcachedCRD } from './sandbox-crd-fixture.ts'

const sandbox = (t: Test, opts: { crds?: KubeObject[] } = {}) => controllersBed(t, { podReadyDelayMs: 10, resyncMs: 100, ...opts })

function configMap(name: string, owners: OwnerReference[] = [], ns = 'default'): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, ownerReferences: owners }, data: { a: 'b' } }
}

function deployment(name: string, replicas: number): KubeObject {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'default' },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'memcached:1.6' }] } } },
  }
}

const ownerRef = (o: Obj, block = false): OwnerReference => ({ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid, ...(block ? { blockOwnerDeletion: true } : {}) })

t.test('a dependent whose owner uid no longer exists is deleted; one with a live owner stays', async (t) => {
  const { call, get } = await sandbox(t)
  const owner = (await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('owner') })).body as Obj
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('kept', [ownerRef(owner)]) })
  // Same name and kind, but the uid of an owner that is gone: the reference is dangling.
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('orphaned', [{ ...ownerRef(owner), uid: '00000000-0000-0000-0000-000000000000' }]) })
  await until('dangling dependent deleted', async () => (await get('configmaps', 'orphaned')) === undefined)
  t.ok(await get('configmaps', 'kept'), 'a dependent of a live owner is kept')
  await call({ verb: 'delete', resource: 'configmaps', namespace: 'default', name: 'owner' })
  await until('dependent of the deleted owner deleted', async () => (await get('configmaps', 'kept')) === undefined)
  t.pass('background deletion reached the dependent')
})

t.test('an owner in another namespace counts as absent', async (t) => {
  const { call, get } = await sandbox(t)
  await call({ verb: 'create', resource: 'namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'other' } } })
  const owner = (await call({ verb: 'create', resource: 'configmaps', namespace: 'other', body: configMap('owner', [], 'other') })).body as Obj
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('cross', [ownerRef(owner)]) })
  await until('cross-namespace dependent deleted', async () => (await get('configmaps', 'cross')) === undefined)
  t.ok(await get('configmaps', 'owner', '', 'other'), 'the owner itself is untouched')
})

t.test('a dependent with one live and one absent owner loses only the dangling reference', async (t) => {
  const { call, get } = await sandbox(t)
  const owner = (await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('owner') })).body as Obj
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('dep', [ownerRef(owner), { ...ownerRef(owner), name: 'gone', uid: '11111111-1111-1111-1111-111111111111' }]) })
  const dep = await until('dangling reference removed', async () => {
    const o = await get('configmaps', 'dep')
    return o && o.metadata.ownerReferences?.length === 1 ? o : undefined
  })
  t.equal(dep.metadata.ownerReferences[0].uid, owner.metadata.uid)
})

t.test('deleting a Deployment in the background removes its ReplicaSet and pods', async (t) => {
  const { call, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 2) })
  await until('pods running', async () => (await list('pods')).filter((p) => p.status?.phase === 'Running').length === 2)
  const res = await call({ verb: 'delete', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })
  t.equal(res.status, 200)
  await until('everything gone', async () => (await list('replicasets', 'apps')).length === 0 && (await list('pods')).length === 0)
  t.pass('ReplicaSet and pods collected')
})

t.test('Foreground deletion keeps the owner until its blocking dependents are gone', async (t) => {
  const { call, get, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 2) })
  await until('pods running', async () => (await list('pods')).filter((p) => p.status?.phase === 'Running').length === 2)
  // A blocking dependent with its own finalizer holds the owner until the finalizer goes.
  const d = (await get('deployments', 'web', 'apps')) as Obj
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: { ...configMap('held', [ownerRef(d, true)]), metadata: { name: 'held', namespace: 'default', ownerReferences: [ownerRef(d, true)], finalizers: ['example.com/hold'] } } })
  const res = await call({ verb: 'delete', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' } })
  t.equal(res.status, 200)
  t.match((res.body as Obj).metadata, { finalizers: ['foregroundDeletion'], deletionTimestamp: /Z$/ })
  await until('ReplicaSet and pods gone', async () => (await list('replicasets', 'apps')).length === 0 && (await list('pods')).length === 0)
  const held = await until('blocking dependent marked for deletion', async () => {
    const o = await get('configmaps', 'held')
    return o?.metadata.deletionTimestamp ? o : undefined
  })
  t.ok(held)
  t.match(await get('deployments', 'web', 'apps'), { metadata: { finalizers: ['foregroundDeletion'] } }, 'the owner waits for its blocking dependent')
  await call({ verb: 'patch', resource: 'configmaps', namespace: 'default', name: 'held', contentType: 'application/merge-patch+json', body: { metadata: { finalizers: null } } })
  await until('owner gone', async () => (await get('deployments', 'web', 'apps')) === undefined)
  t.pass('the finalizer was removed once the dependents were gone')
})

t.test('Orphan deletion strips the owner reference from dependents and leaves them', async (t) => {
  const { call, get, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 1) })
  await until('pod running', async () => (await list('pods')).filter((p) => p.status?.phase === 'Running').length === 1)
  const res = await call({ verb: 'delete', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', query: new URLSearchParams({ propagationPolicy: 'Orphan' }) })
  t.equal(res.status, 200)
  await until('owner gone', async () => (await get('deployments', 'web', 'apps')) === undefined)
  const [rs, ...more] = await list('replicasets', 'apps')
  t.equal(more.length, 0)
  t.notOk(rs?.metadata.ownerReferences, 'the ReplicaSet no longer names its owner')
  t.equal((await list('pods')).length, 1, 'the ReplicaSet still keeps its pod')
})

t.test('custom resources are collected too, once their CRD is established', async (t) => {
  const { call, get } = await sandbox(t, { crds: [memcachedCRD()] })
  const mc = (await call({ verb: 'create', group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', namespace: 'default', body: { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'mc' }, spec: { size: 1 } } })).body as Obj
  t.equal(mc.metadata.name, 'mc')
  await call({ verb: 'create', resource: 'configmaps', namespace: 'default', body: configMap('child', [{ ...ownerRef(mc), controller: true, blockOwnerDeletion: true }]) })
  const dangling = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'child-mc', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'nope', uid: '22222222-2222-2222-2222-222222222222' }] }, spec: { size: 1 } }
  await call({ verb: 'create', group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', namespace: 'default', body: dangling })
  await until('dangling custom resource deleted', async () => (await get('memcacheds', 'child-mc', 'cache.example.com')) === undefined)
  await call({ verb: 'delete', group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', namespace: 'default', name: 'mc' })
  await until('dependent of the custom resource deleted', async () => (await get('configmaps', 'child')) === undefined)
  t.pass('dependents of a deleted custom resource are collected')
})
