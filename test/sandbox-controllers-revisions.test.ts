// Deployment revisions and the simulated controllers' Events, as kube-controller-manager keeps them
// (pkg/controller/deployment/sync.go, pkg/controller/deployment/util/deployment_util.go,
// pkg/controller/controller_utils.go, k8s.io/client-go/tools/record/events_cache.go), seen through
// the API and through real kubectl (k8s.io/kubectl/pkg/polymorphichelpers/rollback.go, history.go).
import t from 'tap'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'
import { kubectlFor } from './support/kubectl.ts'
import { deployment as plain } from './support/sandbox-requests.ts'

const deployment = (name: string, spec: Obj): Obj => {
  const d = plain(name) as Obj
  d.spec = { ...d.spec, ...spec }
  return d
}
const image = (_d: Obj, img: string): Obj => ({ spec: { template: { spec: { containers: [{ name: 'app', image: img }] } } } })

async function rolledOut(get: (r: string, n: string, g?: string) => Promise<Obj | undefined>, name: string, revision: string): Promise<Obj> {
  return await until(`deployment ${name} at revision ${revision}, rolled out`, async () => {
    const d = await get('deployments', name, 'apps')
    const s = d?.status
    return d?.metadata.annotations?.['deployment.kubernetes.io/revision'] === revision && s?.updatedReplicas === d?.spec.replicas && s?.replicas === d?.spec.replicas && s?.availableReplicas === d?.spec.replicas ? d : undefined
  })
}

t.test('sync.go getNewReplicaSet: revisions count up, the Deployment carries its new ReplicaSet\'s, a template that comes back takes the next one with revision-history', async (t) => {
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 10 })
  const patch = (body: Obj) => call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/strategic-merge-patch+json', body })
  const d = deployment('web', { replicas: 2 })
  ;(d as Obj).metadata.annotations = { 'kubernetes.io/change-cause': 'first', 'kubectl.kubernetes.io/last-applied-configuration': '{}' }
  t.equal((await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: d })).status, 201)
  await rolledOut(get, 'web', '1')
  const first = (await list('replicasets', 'apps'))[0] as Obj
  t.match(first.metadata.annotations, { 'deployment.kubernetes.io/revision': '1', 'deployment.kubernetes.io/desired-replicas': '2', 'deployment.kubernetes.io/max-replicas': '3', 'kubernetes.io/change-cause': 'first' })
  t.notOk('kubectl.kubernetes.io/last-applied-configuration' in first.metadata.annotations, 'annotationsToSkip are not copied')

  await patch({ metadata: { annotations: { 'kubernetes.io/change-cause': 'second' } }, ...image(d, 'memcached:2') })
  await rolledOut(get, 'web', '2')
  await patch(image(d, 'memcached:3'))
  await rolledOut(get, 'web', '3')
  await patch(image(d, 'memcached:1.6'))
  const back = await rolledOut(get, 'web', '4')
  t.equal(back.metadata.generation, 4, 'the revision written through /status does not bump the generation')
  const rss = await list('replicasets', 'apps')
  t.equal(rss.length, 3, 'the first template\'s ReplicaSet is reused')
  const again = rss.find((r) => r.metadata.name === first.metadata.name) as Obj
  t.match(again.metadata.annotations, { 'deployment.kubernetes.io/revision': '4', 'deployment.kubernetes.io/revision-history': '1' })
  t.equal(again.metadata.annotations['kubernetes.io/change-cause'], 'second', 'the Deployment\'s annotations are copied to its existing new ReplicaSet')
  const mf = (back.metadata.managedFields as Obj[]).find((m) => m.subresource === 'status')
  t.match(mf, { manager: 'kube-controller-manager', operation: 'Update' })
  t.ok(mf?.fieldsV1['f:metadata']?.['f:annotations']?.['f:deployment.kubernetes.io/revision'], 'the controller owns the revision annotation, written through /status')
})

t.test('cleanupDeployment (sync.go): revisionHistoryLimit keeps that many scaled-down old ReplicaSets, the oldest revisions go', async (t) => {
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  const d = deployment('web', { replicas: 1, revisionHistoryLimit: 1 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: d })
  for (let i = 2; i <= 4; i++) {
    await rolledOut(get, 'web', String(i - 1))
    await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/strategic-merge-patch+json', body: image(d, `memcached:${i}`) })
  }
  await rolledOut(get, 'web', '4')
  const revisions = await until('two ReplicaSets left', async () => {
    const r = (await list('replicasets', 'apps')).map((rs) => rs.metadata.annotations['deployment.kubernetes.io/revision']).sort()
    return r.length === 2 ? r : undefined
  })
  t.same(revisions, ['3', '4'])
})

t.test('events: ScalingReplicaSet on the Deployment (sync.go), SuccessfulCreate/SuccessfulDelete on the ReplicaSet (controller_utils.go), repeats folded as the EventCorrelator does', async (t) => {
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  const d = deployment('web', { replicas: 2 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: d })
  const dep = await rolledOut(get, 'web', '1')
  const rs = (await list('replicasets', 'apps'))[0] as Obj
  const evs = await until('the scaling and creation events', async () => {
    const all = await list('events')
    return all.filter((e) => e.reason === 'SuccessfulCreate').length === 2 && all.some((e) => e.reason === 'ScalingReplicaSet') ? all : undefined
  })
  t.match(evs.find((e) => e.reason === 'ScalingReplicaSet'), {
    type: 'Normal', message: `Scaled up replica set ${rs.metadata.name} from 0 to 2`, count: 1,
    source: { component: 'deployment-controller' }, reportingComponent: 'deployment-controller',
    involvedObject: { kind: 'Deployment', apiVersion: 'apps/v1', name: 'web', namespace: 'default', uid: dep.metadata.uid },
  })
  const pods = (await list('pods')).map((p) => p.metadata.name).sort()
  t.same(evs.filter((e) => e.reason === 'SuccessfulCreate').map((e) => e.message).sort(), pods.map((p) => `Created pod: ${p}`))
  t.match(evs.find((e) => e.reason === 'SuccessfulCreate'), { type: 'Normal', source: { component: 'replicaset-controller' }, involvedObject: { kind: 'ReplicaSet', name: rs.metadata.name, uid: rs.metadata.uid } })

  await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 1 } } })
  const deleted = await until('a SuccessfulDelete event', async () => (await list('events')).find((e) => e.reason === 'SuccessfulDelete'))
  t.match(deleted.message, /^Deleted pod: web-[a-z0-9]+-[a-z0-9]{5}$/)
  await until('scaled down', async () => (await list('events')).find((e) => e.message === `Scaled down replica set ${rs.metadata.name} from 2 to 1`))

  // The same message again (2 → 1 a second time) patches the first Event's count.
  await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 2 } } })
  await until('back at 2', async () => (await list('pods')).length === 2)
  await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 1 } } })
  const repeated = await until('the repeat counted', async () => (await list('events')).find((e) => e.message === `Scaled down replica set ${rs.metadata.name} from 2 to 1` && e.count === 2))
  t.equal((await list('events')).filter((e) => e.message === repeated.message).length, 1, 'one Event, count 2')
})

t.test('EventAggregator: from the 10th different message of one reason on one object, Events fold into one "(combined from similar events)"', async (t) => {
  const { call, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('big', { replicas: 15 }) })
  await until('15 pods', async () => (await list('pods')).length === 15)
  const created = await until('the creations recorded', async () => {
    const evs = (await list('events')).filter((e) => e.reason === 'SuccessfulCreate')
    const combined = evs.find((e) => e.message.startsWith('(combined from similar events): Created pod: '))
    return combined?.count === 6 ? evs : undefined
  })
  t.equal(created.length, 10, '9 Events of their own, then one combined Event counting the other 6')
})

t.test('real kubectl: rollout history, history --revision, rollout undo, describe shows the controllers\' events (rollback.go)', async (t) => {
  const { sb, get, list } = await controllersBed(t, { podReadyDelayMs: 10 })
  const kubectl = kubectlFor(sb.kubeconfigPath)
  await kubectl(['create', 'deployment', 'web', '--image=memcached:1.6.38', '--replicas=2'])
  await rolledOut(get, 'web', '1')
  await kubectl(['set', 'image', 'deployment/web', 'memcached=memcached:1.6.39'])
  await kubectl(['annotate', 'deployment/web', 'kubernetes.io/change-cause=upgrade to 1.6.39'])
  t.match(await kubectl(['rollout', 'status', 'deployment/web', '--timeout=30s']), /successfully rolled out/)
  await rolledOut(get, 'web', '2')
  t.match(await kubectl(['rollout', 'history', 'deployment/web']), /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+upgrade to 1\.6\.39\n/)
  t.match(await kubectl(['rollout', 'history', 'deployment/web', '--revision=1']), /with revision #1\n[\s\S]*Image:\s+memcached:1\.6\.38/)

  t.match(await kubectl(['rollout', 'undo', 'deployment/web']), /deployment.apps\/web rolled back/)
  const undone = await rolledOut(get, 'web', '3')
  t.equal(undone.spec.template.spec.containers[0].image, 'memcached:1.6.38')
  t.equal((await list('replicasets', 'apps')).length, 2, 'the undo reuses revision 1\'s ReplicaSet')
  t.match(await kubectl(['rollout', 'history', 'deployment/web']), /REVISION\s+CHANGE-CAUSE\n2\s+upgrade to 1\.6\.39\n3\s+<none>\n/)
  t.match(await kubectl(['rollout', 'undo', 'deployment/web', '--to-revision=2']), /rolled back/)
  await rolledOut(get, 'web', '4')

  const describe = await kubectl(['describe', 'deployment', 'web'])
  t.match(describe, /Events:[\s\S]*Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set web-[a-z0-9]+ from 0 to 2/)
  t.match(describe, /Scaled down replica set web-[a-z0-9]+ from 2 to 1/)
  const rs = (await list('replicasets', 'apps')).find((r) => r.metadata.annotations['deployment.kubernetes.io/revision'] === '4') as Obj
  t.match(await kubectl(['describe', 'rs', rs.metadata.name]), /Events:[\s\S]*Normal\s+SuccessfulCreate\s+\S+\s+replicaset-controller\s+Created pod: web-[a-z0-9]+-[a-z0-9]{5}/)
})
