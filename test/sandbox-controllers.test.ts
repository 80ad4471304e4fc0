import t, { type Test } from 'tap'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { controllersBed, until } from './support/controllers-bed.ts'

/** A sandbox with the simulated controllers, pods Ready 30 ms after creation. */
const sandbox = (t: Test) => controllersBed(t, { podReadyDelayMs: 30, resyncMs: 200 })

function deployment(name: string, replicas: number, image = 'memcached:1.6.38'): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'memcached', image, ports: [{ containerPort: 11211 }] }] } },
    },
  }
}

type Obj = Record<string, any>

t.test('a Deployment gets a ReplicaSet whose pods become Running and Ready, and a complete status', async (t) => {
  const { call, list } = await sandbox(t)
  const created = await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 2) })
  t.equal(created.status, 201)
  const d = created.body as KubeObject
  const d2 = await until('deployment available', async () => {
    const res = await call({ verb: 'get', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })
    const o = res.body as Obj
    return o.status?.availableReplicas === 2 && o.status?.conditions?.some((c: Obj) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable') ? o : undefined
  })
  const [rs, ...moreRS] = await list('replicasets', 'apps')
  t.equal(moreRS.length, 0)
  const r = rs as Obj
  const hash = r.metadata.labels['pod-template-hash']
  t.match(hash, /^[bcdfghjklmnpqrstvwxz2456789]+$/)
  t.equal(r.metadata.name, `web-${hash}`)
  t.same(r.metadata.labels, { app: 'web', 'pod-template-hash': hash })
  t.same(r.spec.selector, { matchLabels: { app: 'web', 'pod-template-hash': hash } })
  t.same(r.spec.template.metadata.labels, { app: 'web', 'pod-template-hash': hash })
  t.same(r.metadata.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', uid: d.metadata.uid, controller: true, blockOwnerDeletion: true }])
  t.equal(r.metadata.annotations['deployment.kubernetes.io/revision'], '1')
  t.match(r.status, { replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2, observedGeneration: 1 })
  t.ok(r.metadata.managedFields.some((m: Obj) => m.manager === 'kube-controller-manager' && m.operation === 'Update'), 'the controller manager owns what it wrote')

  const pods = (await list('pods')) as Obj[]
  t.equal(pods.length, 2)
  for (const p of pods) {
    t.match(p.metadata.name, new RegExp(`^web-${hash}-[bcdfghjklmnpqrstvwxz2456789]{5}$`))
    t.equal(p.metadata.generateName, `web-${hash}-`)
    t.same(p.metadata.labels, { app: 'web', 'pod-template-hash': hash })
    t.same(p.metadata.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: r.metadata.name, uid: r.metadata.uid, controller: true, blockOwnerDeletion: true }])
    t.equal(p.spec.nodeName, 'sandbox-node')
    t.equal(p.status.phase, 'Running')
    t.same(p.status.conditions.map((c: Obj) => `${c.type}=${c.status}`), ['PodReadyToStartContainers=True', 'Initialized=True', 'Ready=True', 'ContainersReady=True', 'PodScheduled=True'])
    t.match(p.status.containerStatuses, [{ name: 'memcached', image: 'memcached:1.6.38', ready: true, restartCount: 0, started: true, state: { running: { startedAt: /Z$/ } } }])
    t.match(p.status.podIP, /^10\.244\./)
    t.equal(p.status.hostIP, '172.18.0.2')
    t.ok(p.metadata.managedFields.some((m: Obj) => m.manager === 'kubelet' && m.subresource === 'status'), 'the kubelet owns the pod status')
  }
  t.match(d2.status, { observedGeneration: d2.metadata.generation, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 })
  t.notOk('unavailableReplicas' in d2.status)
  t.match(d2.status.conditions, [
    { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable', message: 'Deployment has minimum availability.' },
    { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable', message: `ReplicaSet "web-${hash}" has successfully progressed.` },
  ])
})

t.test('scaling a Deployment up and down adds and removes pods', async (t) => {
  const { call, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 1) })
  await until('one ready pod', async () => (await list('pods')).filter((p) => (p as Obj).status?.phase === 'Running').length === 1)
  const scale = async (n: number) => {
    const res = await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: n } } })
    t.equal(res.status, 200)
  }
  await scale(4)
  await until('four available', async () => {
    const d = (await call({ verb: 'get', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })).body as Obj
    return d.status?.availableReplicas === 4 && d.status.observedGeneration === d.metadata.generation
  })
  t.equal((await list('pods')).length, 4)
  t.equal((await list('replicasets', 'apps')).length, 1, 'scaling makes no new ReplicaSet')
  await scale(0)
  await until('no pods', async () => (await list('pods')).length === 0)
  const d = await until('status at zero', async () => {
    const o = (await call({ verb: 'get', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })).body as Obj
    return o.status?.replicas === undefined && o.status?.observedGeneration === o.metadata.generation ? o : undefined
  })
  t.notOk('availableReplicas' in d.status, 'zero counts are omitted like omitempty')
  t.equal(((await list('replicasets', 'apps'))[0] as Obj).spec.replicas, 0)
})

t.test('a template change rolls to a new ReplicaSet and scales the old one to 0', async (t) => {
  const { call, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 3) })
  await until('three ready', async () => (await list('pods')).filter((p) => (p as Obj).status?.phase === 'Running').length === 3)
  const [first] = (await list('replicasets', 'apps')) as Obj[]
  const res = await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { template: { spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.39' }] } } } } })
  t.equal(res.status, 200)
  const d = await until('rollout complete', async () => {
    const o = (await call({ verb: 'get', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })).body as Obj
    const done = o.status?.observedGeneration === o.metadata.generation && o.status?.updatedReplicas === 3 && o.status?.availableReplicas === 3 && o.status?.replicas === 3
    return done && o.status.conditions.some((c: Obj) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable') ? o : undefined
  })
  const all = (await list('replicasets', 'apps')) as Obj[]
  t.equal(all.length, 2)
  const old = all.find((r) => r.metadata.uid === first?.metadata.uid) as Obj
  const next = all.find((r) => r.metadata.uid !== first?.metadata.uid) as Obj
  t.equal(old.spec.replicas, 0)
  t.equal(next.spec.replicas, 3)
  t.not(next.metadata.labels['pod-template-hash'], old.metadata.labels['pod-template-hash'])
  t.equal(next.metadata.annotations['deployment.kubernetes.io/revision'], '2')
  t.equal(d.status.updatedReplicas, 3)
  const pods = (await until('old pods gone', async () => {
    const ps = (await list('pods')) as Obj[]
    return ps.length === 3 && ps.every((p) => p.spec.containers[0].image === 'memcached:1.6.39') ? ps : undefined
  }))
  t.ok(pods.every((p) => p.metadata.ownerReferences[0].uid === next.metadata.uid))
})

t.test('a Recreate Deployment replaces all pods at once', async (t) => {
  const { call, list } = await sandbox(t)
  const body = deployment('web', 2) as Obj
  body.spec.strategy = { type: 'Recreate' }
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body })
  await until('two ready', async () => (await list('pods')).filter((p) => (p as Obj).status?.phase === 'Running').length === 2)
  await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { template: { metadata: { labels: { app: 'web', v: '2' } } } } } })
  const ps = await until('new pods ready', async () => {
    const pods = (await list('pods')) as Obj[]
    return pods.length === 2 && pods.every((p) => p.metadata.labels.v === '2' && p.status?.phase === 'Running') ? pods : undefined
  })
  t.equal(ps.length, 2)
})

t.test('a watcher sees a pod scheduled, then ContainerCreating, then Running', async (t) => {
  const { sb, call, list } = await sandbox(t)
  const seen: string[] = []
  const stop = sb.cluster.watch({ verb: 'watch', group: '', version: 'v1', resource: 'pods', namespace: 'default', query: new URLSearchParams({ resourceVersion: '0' }) }, (e) => {
    const p = e.object as Obj
    const waiting = p.status?.containerStatuses?.[0]?.state?.waiting?.reason
    const state = `${e.type} ${p.spec?.nodeName ?? '-'} ${p.status?.phase ?? '-'}${waiting ? ` ${waiting}` : ''}`
    if (seen.at(-1) !== state) seen.push(state)
  })
  t.teardown(stop)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 1) })
  await until('running', async () => (await list('pods')).some((p) => (p as Obj).status?.phase === 'Running'))
  t.same(seen, ['ADDED - Pending', 'MODIFIED sandbox-node Pending', 'MODIFIED sandbox-node Pending ContainerCreating', 'MODIFIED sandbox-node Running'])
})

t.test('a paused Deployment does not roll out, still scales, and reports DeploymentPaused then DeploymentResumed', async (t) => {
  const { call, list } = await sandbox(t)
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 1) })
  const get = async () => (await call({ verb: 'get', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web' })).body as Obj
  await until('available', async () => (await get()).status?.availableReplicas === 1)
  const patch = (body: Obj) => call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body })
  await patch({ spec: { paused: true, replicas: 2, template: { metadata: { labels: { app: 'web', v: '2' } } } } })
  const paused = await until('paused and scaled', async () => {
    const d = await get()
    return d.status?.observedGeneration === d.metadata.generation && d.status?.availableReplicas === 2 ? d : undefined
  })
  t.match(paused.status.conditions.find((c: Obj) => c.type === 'Progressing'), { status: 'Unknown', reason: 'DeploymentPaused', message: 'Deployment is paused' })
  t.equal((await list('replicasets', 'apps')).length, 1, 'no new ReplicaSet while paused')
  t.ok((await list('pods')).every((p) => (p as Obj).metadata.labels.v === undefined), 'the old template still runs')
  await patch({ spec: { paused: null } })
  const resumed = await until('rolled out after resume', async () => {
    const d = await get()
    const done = d.status?.observedGeneration === d.metadata.generation && d.status?.updatedReplicas === 2 && d.status?.replicas === 2 && d.status?.availableReplicas === 2
    return done && d.status.conditions.some((c: Obj) => c.type === 'Progressing' && c.reason === 'NewReplicaSetAvailable') ? d : undefined
  })
  t.ok(resumed)
  t.equal((await list('replicasets', 'apps')).length, 2)
})
