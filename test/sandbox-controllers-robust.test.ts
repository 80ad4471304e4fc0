import t, { type Test } from 'tap'
import type { ApiResponse } from '../operator/sandbox/types.ts'
import { controllersBed, until, type Obj, type Req } from './support/controllers-bed.ts'

/** The controllers around a sandbox, and requests to its Deployments (in `default`, unless given). */
async function deployments(t: Test, opts: { podReadyDelayMs: number; resyncMs?: number }) {
  const bed = await controllersBed(t, opts)
  const call = (r: Req): Promise<ApiResponse> => bed.call({ group: 'apps', resource: 'deployments', namespace: 'default', ...r })
  return { ...bed, call }
}

const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

t.test('concurrent writers: the controllers converge through conflicts and never leave timers behind', async (t) => {
  const before = timeouts()
  const { sb, controllers, call } = await deployments(t, { podReadyDelayMs: 5, resyncMs: 50 })
  const body = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'memcached:1.6' }] } } } }
  t.equal((await call({ verb: 'create', body })).status, 201)
  // Another client keeps changing the Deployment (scale, template, annotations) while the
  // controllers write ReplicaSets and status: their stale writes conflict and are retried.
  for (let i = 0; i < 12; i++) {
    const patch = i % 3 === 0 ? { spec: { replicas: (i % 4) + 1 } } : i % 3 === 1 ? { metadata: { annotations: { touch: String(i) } } } : { spec: { template: { metadata: { annotations: { rev: String(i) } } } } }
    const res = await call({ verb: 'patch', name: 'web', contentType: 'application/merge-patch+json', body: patch })
    t.equal(res.status, 200)
    await new Promise((r) => setTimeout(r, 3))
  }
  await call({ verb: 'patch', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 3 } } })
  const d = await until('converged', async () => {
    const o = (await call({ verb: 'get', name: 'web' })).body as Obj
    const s = o.status ?? {}
    return s.observedGeneration === o.metadata.generation && s.replicas === 3 && s.updatedReplicas === 3 && s.availableReplicas === 3 ? o : undefined
  })
  t.ok(d)
  const pods = ((await sb.cluster.handle({ verb: 'list', group: '', version: 'v1', resource: 'pods', namespace: 'default', query: new URLSearchParams() })).body as Obj).items as Obj[]
  const live = pods.filter((p) => !p.metadata.deletionTimestamp)
  t.equal(live.length, 3, 'exactly the desired pods, no duplicates from stale caches')
  t.ok(live.every((p) => p.metadata.annotations?.rev === '11'), 'all pods run the last template')
  const rsList = ((await call({ verb: 'list', resource: 'replicasets' })).body as Obj).items as Obj[]
  t.equal(rsList.filter((r) => r.spec.replicas > 0).length, 1, 'one active ReplicaSet')
  await controllers.stop()
  await controllers.stop()
  await sb.close()
  t.ok(timeouts() <= before, 'stop() cleared every timer')
})

t.test('revision history limit removes the oldest idle ReplicaSets', async (t) => {
  const { call } = await deployments(t, { podReadyDelayMs: 1 })
  const body = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 1, revisionHistoryLimit: 1, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'memcached:1' }] } } } }
  await call({ verb: 'create', body })
  const settle = (what: string) => until(what, async () => {
    const o = (await call({ verb: 'get', name: 'web' })).body as Obj
    return o.status?.observedGeneration === o.metadata.generation && o.status?.updatedReplicas === 1 && o.status?.replicas === 1 && o.status?.availableReplicas === 1
  })
  await settle('first rollout')
  for (const image of ['memcached:2', 'memcached:3']) {
    await call({ verb: 'patch', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { template: { spec: { containers: [{ name: 'c', image }] } } } } })
    await settle(`rolled to ${image}`)
  }
  const rs = await until('history trimmed', async () => {
    const items = ((await call({ verb: 'list', resource: 'replicasets' })).body as Obj).items as Obj[]
    return items.length === 2 ? items : undefined
  })
  t.same(rs.map((r) => r.metadata.annotations['deployment.kubernetes.io/revision']).sort(), ['2', '3'])
})

t.test('rolling back to an earlier template reuses its ReplicaSet as the newest revision', async (t) => {
  const { call } = await deployments(t, { podReadyDelayMs: 1 })
  const body = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 2, strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } }, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'memcached:1' }] } } } }
  // maxSurge and maxUnavailable may not both be 0 (apps/validation ValidateRollingUpdateDeployment).
  t.equal((await call({ verb: 'create', body })).status, 201)
  const settle = () => until('settled', async () => {
    const o = (await call({ verb: 'get', name: 'web' })).body as Obj
    return o.status?.observedGeneration === o.metadata.generation && o.status?.updatedReplicas === 2 && o.status?.replicas === 2 && o.status?.availableReplicas === 2
  })
  await settle()
  for (const image of ['memcached:2', 'memcached:1']) {
    await call({ verb: 'patch', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { template: { spec: { containers: [{ name: 'c', image }] } } } } })
    await settle()
  }
  const items = ((await call({ verb: 'list', resource: 'replicasets' })).body as Obj).items as Obj[]
  t.equal(items.length, 2)
  const active = items.find((r) => r.spec.replicas === 2) as Obj
  t.equal(active.spec.template.spec.containers[0].image, 'memcached:1')
  t.equal(active.metadata.annotations['deployment.kubernetes.io/revision'], '3')
})
