/**
 * The simulated StatefulSet controller against kube-controller-manager's
 * pkg/controller/statefulset (stateful_set_control.go, stateful_set_utils.go,
 * stateful_pod_control.go) and pkg/controller/history, and what real kubectl shows of it.
 */
import t from 'tap'
import { revisionData, revisionHash } from '../operator/sandbox/controllers/statefulset.ts'
import type { ApiRequest, WatchEvent } from '../operator/sandbox/types.ts'
import { controllersBed, kubectlFor, type ControllersBed, type Obj, until } from './support/controllers-bed.ts'

const sts = (name: string, spec: Obj = {}, image = 'memcached:1.6.38'): Obj => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name, namespace: 'default' },
  spec: { serviceName: name, replicas: 3, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'memcached', image }] } }, ...spec },
})

async function apply(bed: ControllersBed, body: Obj): Promise<Obj> {
  const res = await bed.call({ verb: 'patch', group: 'apps', version: 'v1', resource: 'statefulsets', namespace: 'default', name: body.metadata.name, body, contentType: 'application/apply-patch+yaml', query: new URLSearchParams({ fieldManager: 'test', force: 'true' }) })
  if (res.status >= 300) throw new Error(JSON.stringify(res.body))
  return res.body as Obj
}

const podsOf = async (bed: ControllersBed, app: string) => (await bed.list('pods')).filter((p) => p.metadata.labels?.app === app).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))
const ready = (p: Obj) => p.status?.phase === 'Running' && p.status.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True')
const revisionOf = (p: Obj) => p.metadata.labels['controller-revision-hash']

/** Waits until the set's status shows `n` ready pods all at its update revision, for its generation. */
async function rolledOut(bed: ControllersBed, name: string, n: number): Promise<Obj> {
  return until(`${name} rolled out to ${n}`, async () => {
    const s = await bed.get('statefulsets', name, 'apps')
    const st = s?.status ?? {}
    return st.observedGeneration === s?.metadata.generation && st.replicas === n && (st.readyReplicas ?? 0) === n && (st.updatedReplicas ?? 0) === n && st.currentRevision === st.updateRevision ? s : undefined
  })
}

/** Records pod events (ADDED, Ready, DELETED) in order. */
function recordPods(bed: ControllersBed): string[] {
  const log: string[] = []
  const seenReady = new Set<string>()
  const stop = bed.sb.cluster.watch({ verb: 'watch', group: '', version: 'v1', resource: 'pods', namespace: 'default', query: new URLSearchParams({ resourceVersion: '0' }) } as ApiRequest, (e: WatchEvent) => {
    const p = e.object as Obj
    const name = p.metadata?.name as string
    if (e.type === 'ADDED') {
      log.push(`add ${name}`)
      if (ready(p)) seenReady.add(p.metadata.uid)
    }
    else if (e.type === 'DELETED') {
      log.push(`delete ${name}`)
      seenReady.delete(p.metadata.uid)
    } else if (e.type === 'MODIFIED' && ready(p) && !seenReady.has(p.metadata.uid)) {
      seenReady.add(p.metadata.uid)
      log.push(`ready ${name}`)
    }
  })
  t.teardown(stop)
  return log
}

t.test('real kubectl: apply, rollout status, get sts, set image, rollout history, scale and delete of a StatefulSet', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 20 })
  const kubectl = kubectlFor(bed.sb)
  const manifest = sts('web', { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }] })
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(manifest))
  t.match(await kubectl(['rollout', 'status', 'sts/web', '--timeout=30s']), /partitioned roll out complete: 3 new pods have been updated/)
  t.match(await kubectl(['get', 'sts', 'web']), /\nweb\s+3\/3\s+\d+s\n/)
  const pods = await podsOf(bed, 'web')
  t.same(pods.map((p) => p.metadata.name), ['web-0', 'web-1', 'web-2'])
  const set = (await bed.get('statefulsets', 'web', 'apps')) as Obj
  pods.forEach((p, i) => {
    t.equal(p.spec.hostname, `web-${i}`)
    t.equal(p.spec.subdomain, 'web')
    t.equal(p.metadata.labels['statefulset.kubernetes.io/pod-name'], `web-${i}`)
    t.equal(p.metadata.labels['apps.kubernetes.io/pod-index'], String(i))
    t.equal(revisionOf(p), set.status.updateRevision)
    t.same(p.metadata.ownerReferences, [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: set.metadata.uid, controller: true, blockOwnerDeletion: true }])
    t.same(p.spec.volumes, [{ name: 'data', persistentVolumeClaim: { claimName: `data-web-${i}` } }])
  })
  t.same({ ...set.status, currentRevision: undefined, updateRevision: undefined }, { observedGeneration: 1, replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, availableReplicas: 3, collisionCount: 0, currentRevision: undefined, updateRevision: undefined })

  await kubectl(['set', 'image', 'sts/web', 'memcached=memcached:1.6.39'])
  t.match(await kubectl(['rollout', 'status', 'sts/web', '--timeout=30s']), /partitioned roll out complete: 3 new pods have been updated/)
  const updated = await rolledOut(bed, 'web', 3)
  t.not(updated.status.updateRevision, set.status.updateRevision, 'a new revision')
  t.same((await podsOf(bed, 'web')).map((p) => [p.spec.containers[0].image, revisionOf(p)]), [0, 1, 2].map(() => ['memcached:1.6.39', updated.status.updateRevision]))
  t.match(await kubectl(['rollout', 'history', 'sts/web']), /REVISION\s+CHANGE-CAUSE\n1\s+<none>\n2\s+<none>\n/)
  t.match(await kubectl(['rollout', 'history', 'sts/web', '--revision=1']), /Image:\s+memcached:1\.6\.38/)
  t.match(await kubectl(['get', 'controllerrevisions']), new RegExp(`\\n${set.status.updateRevision}\\s+statefulset.apps/web\\s+1\\s`))

  // rollout undo patches the template back from revision 1: that revision is reused as revision 3.
  t.match(await kubectl(['rollout', 'undo', 'sts/web']), /statefulset.apps\/web rolled back/)
  t.match(await kubectl(['rollout', 'status', 'sts/web', '--timeout=30s']), /partitioned roll out complete: 3 new pods have been updated/)
  const undone = await rolledOut(bed, 'web', 3)
  t.equal(undone.status.updateRevision, set.status.updateRevision)
  t.same((await podsOf(bed, 'web')).map((p) => p.spec.containers[0].image), ['memcached:1.6.38', 'memcached:1.6.38', 'memcached:1.6.38'])
  t.match(await kubectl(['rollout', 'history', 'sts/web']), /REVISION\s+CHANGE-CAUSE\n2\s+<none>\n3\s+<none>\n/)

  t.match(await kubectl(['scale', 'sts/web', '--replicas=1']), /statefulset.apps\/web scaled/)
  await rolledOut(bed, 'web', 1)
  t.same((await podsOf(bed, 'web')).map((p) => p.metadata.name), ['web-0'])
  t.match(await kubectl(['describe', 'sts', 'web']), /SuccessfulDelete\s+.*statefulset-controller\s+delete Pod web-2 in StatefulSet web successful/)

  await kubectl(['delete', 'sts', 'web'])
  await until('pods and revisions collected', async () => (await podsOf(bed, 'web')).length === 0 && (await bed.list('controllerrevisions', 'apps')).length === 0)
  t.pass('the garbage collector deleted the pods and ControllerRevisions')
})

t.test('OrderedReady (stateful_set_control.go): each pod is created once its predecessor is Running and Ready; scale-down goes from the highest ordinal, one at a time', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 60 })
  const log = recordPods(bed)
  await apply(bed, sts('ordered'))
  await rolledOut(bed, 'ordered', 3)
  t.same(log, ['add ordered-0', 'ready ordered-0', 'add ordered-1', 'ready ordered-1', 'add ordered-2', 'ready ordered-2'])
  log.length = 0
  await apply(bed, sts('ordered', { replicas: 1 }))
  await rolledOut(bed, 'ordered', 1)
  t.same(log, ['delete ordered-2', 'delete ordered-1'])
})

t.test('Parallel (stateful_set_control.go): all pods are created without waiting for readiness', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 400 })
  const log = recordPods(bed)
  await apply(bed, sts('par', { podManagementPolicy: 'Parallel' }))
  await rolledOut(bed, 'par', 3)
  t.same(log.slice(0, 3).sort(), ['add par-0', 'add par-1', 'add par-2'], 'three pods exist before any is ready')
})

t.test('spec.ordinals.start (stateful_set_utils.go getStartOrdinal): pods are numbered from it', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  await apply(bed, sts('ord', { replicas: 2, ordinals: { start: 5 } }))
  await rolledOut(bed, 'ord', 2)
  t.same((await podsOf(bed, 'ord')).map((p) => [p.metadata.name, p.metadata.labels['apps.kubernetes.io/pod-index']]), [['ord-5', '5'], ['ord-6', '6']])
})

t.test('RollingUpdate (updateStatefulSet): pods are replaced from the highest ordinal down, each after the one above is ready; partition holds the lower ordinals', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 30 })
  await apply(bed, sts('roll'))
  const first = await rolledOut(bed, 'roll', 3)
  const log = recordPods(bed)
  await apply(bed, sts('roll', {}, 'memcached:1.6.39'))
  const second = await rolledOut(bed, 'roll', 3)
  t.same(log.filter((l) => !l.startsWith('add')), ['delete roll-2', 'ready roll-2', 'delete roll-1', 'ready roll-1', 'delete roll-0', 'ready roll-0'])

  await apply(bed, sts('roll', { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } } }, 'memcached:1.6.40'))
  const third = await until('the pod above the partition updated', async () => {
    const s = await bed.get('statefulsets', 'roll', 'apps')
    return s?.status.observedGeneration === s?.metadata.generation && s?.status.updatedReplicas === 1 && s?.status.readyReplicas === 3 ? s : undefined
  })
  t.equal(third.status.currentRevision, second.status.updateRevision, 'the rollout is not complete below the partition')
  t.equal(third.status.currentReplicas, 2)
  t.same((await podsOf(bed, 'roll')).map((p) => p.spec.containers[0].image), ['memcached:1.6.39', 'memcached:1.6.39', 'memcached:1.6.40'])
  // A pod below the partition that goes away comes back at the current revision.
  const old0 = (await podsOf(bed, 'roll'))[0] as Obj
  await bed.call({ verb: 'delete', resource: 'pods', namespace: 'default', name: 'roll-0' })
  const back = await until('roll-0 re-created', async () => (await podsOf(bed, 'roll')).find((p) => p.metadata.name === 'roll-0' && p.metadata.uid !== old0.metadata.uid && ready(p)))
  t.equal(back.spec.containers[0].image, 'memcached:1.6.39')
  t.equal(revisionOf(back), second.status.updateRevision)
  t.not(first.status.updateRevision, second.status.updateRevision)
})

t.test('OnDelete (updateStatefulSet): a template change replaces no pod; a deleted pod comes back at the update revision', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  await apply(bed, sts('od', { replicas: 2, updateStrategy: { type: 'OnDelete' } }))
  const before = await rolledOut(bed, 'od', 2)
  await apply(bed, sts('od', { replicas: 2, updateStrategy: { type: 'OnDelete' } }, 'memcached:1.6.39'))
  const pending = await until('the update revision observed', async () => {
    const s = await bed.get('statefulsets', 'od', 'apps')
    return s?.status.observedGeneration === 2 ? s : undefined
  })
  t.not(pending.status.updateRevision, before.status.updateRevision)
  t.equal(pending.status.currentRevision, before.status.updateRevision)
  t.same([pending.status.currentReplicas, pending.status.updatedReplicas], [2, undefined])
  await new Promise((r) => setTimeout(r, 200))
  t.same((await podsOf(bed, 'od')).map((p) => p.spec.containers[0].image), ['memcached:1.6.38', 'memcached:1.6.38'], 'nothing replaced')
  await bed.call({ verb: 'delete', resource: 'pods', namespace: 'default', name: 'od-1' })
  const back = await until('od-1 back', async () => (await podsOf(bed, 'od')).find((p) => p.metadata.name === 'od-1' && p.spec.containers[0].image === 'memcached:1.6.39'))
  t.equal(revisionOf(back), pending.status.updateRevision)
})

t.test('ControllerRevisions (pkg/controller/history): hashed names, the template patch, revision numbers, reuse and revisionHistoryLimit', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  const v1 = sts('hist', { replicas: 1, revisionHistoryLimit: 1 })
  await apply(bed, v1)
  const s1 = await rolledOut(bed, 'hist', 1)
  const revs = async () => (await bed.list('controllerrevisions', 'apps')).map((r) => [r.metadata.name, r.revision]).sort((a, b) => a[1] - b[1])
  const r1 = (await bed.get('controllerrevisions', s1.status.updateRevision, 'apps')) as Obj
  t.equal(r1.revision, 1)
  t.same(r1.data, revisionData(s1 as never), 'data is {"spec":{"template":{…,"$patch":"replace"}}}')
  t.equal(r1.data.spec.template.$patch, 'replace')
  t.equal(r1.metadata.name, `hist-${revisionHash(r1.data, 0)}`)
  t.equal(r1.metadata.labels['controller.kubernetes.io/hash'], revisionHash(r1.data, 0))
  t.equal(r1.metadata.labels.app, 'hist', 'the template labels')
  t.equal(r1.metadata.ownerReferences[0].uid, s1.metadata.uid)

  await apply(bed, sts('hist', { replicas: 1, revisionHistoryLimit: 1 }, 'memcached:1.6.39'))
  const s2 = await rolledOut(bed, 'hist', 1)
  t.same(await revs(), [[s1.status.updateRevision, 1], [s2.status.updateRevision, 2]])
  // Back to the first template: its revision is reused, renumbered 3.
  await apply(bed, v1)
  const s3 = await rolledOut(bed, 'hist', 1)
  t.equal(s3.status.updateRevision, s1.status.updateRevision)
  await until('revision renumbered', async () => (await revs()).some(([n, r]) => n === s1.status.updateRevision && r === 3))
  await apply(bed, sts('hist', { replicas: 1, revisionHistoryLimit: 1 }, 'memcached:1.6.40'))
  const s4 = await rolledOut(bed, 'hist', 1)
  // Unused revisions beyond the limit of 1 go, oldest first: revision 2 is deleted.
  await until('history truncated', async () => (await revs()).length === 2)
  t.same(await revs(), [[s1.status.updateRevision, 3], [s4.status.updateRevision, 4]])
})

t.test('minReadySeconds: a ready pod is available only after it, and OrderedReady waits for availability', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  const log = recordPods(bed)
  await apply(bed, sts('slow', { replicas: 2, minReadySeconds: 2 }))
  const early = await until('slow-0 ready', async () => {
    const s = await bed.get('statefulsets', 'slow', 'apps')
    return s?.status.readyReplicas === 1 ? s : undefined
  })
  t.equal(early.status.availableReplicas, 0, 'ready, not yet available')
  t.notOk(log.includes('add slow-1'), 'slow-1 waits for slow-0 to be available')
  const done = await until('both available', async () => {
    const s = await bed.get('statefulsets', 'slow', 'apps')
    return s?.status.availableReplicas === 2 ? s : undefined
  }, 10_000)
  t.equal(done.status.readyReplicas, 2)
})

t.test('graceful termination: OrderedReady waits for a terminating pod before deleting or re-creating the next', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10, podTerminationMs: 150 })
  await apply(bed, sts('grace'))
  await rolledOut(bed, 'grace', 3)
  const log: string[] = []
  const stop = bed.sb.cluster.watch({ verb: 'watch', group: '', version: 'v1', resource: 'pods', namespace: 'default', query: new URLSearchParams({ resourceVersion: (await bed.get('statefulsets', 'grace', 'apps'))?.metadata.resourceVersion }) } as ApiRequest, (e: WatchEvent) => {
    const p = e.object as Obj
    if (e.type === 'DELETED') log.push(`gone ${p.metadata.name}`)
    else if (e.type === 'MODIFIED' && p.metadata.deletionTimestamp && !log.includes(`terminating ${p.metadata.name}`)) log.push(`terminating ${p.metadata.name}`)
    else if (e.type === 'ADDED') log.push(`add ${p.metadata.name}`)
  })
  t.teardown(stop)
  await apply(bed, sts('grace', {}, 'memcached:1.6.39'))
  await rolledOut(bed, 'grace', 3)
  t.same(log, ['terminating grace-2', 'gone grace-2', 'add grace-2', 'terminating grace-1', 'gone grace-1', 'add grace-1', 'terminating grace-0', 'gone grace-0', 'add grace-0'])
})

t.test('ControllerRevision validation (apps/validation ValidateControllerRevisionCreate/Update): data required and immutable, revision not negative', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  const create = (body: Obj) => bed.call({ verb: 'create', group: 'apps', version: 'v1', resource: 'controllerrevisions', namespace: 'default', body })
  const causes = (res: { body: unknown }) => ((res.body as Obj).details?.causes as Obj[] | undefined)?.map((c) => `${c.field}: ${c.message}`)
  const bad = await create({ apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'r' }, revision: -1 })
  t.equal(bad.status, 422)
  t.same(causes(bad), ['data: Required value: data is mandatory', 'revision: Invalid value: -1: must be greater than or equal to 0'])
  const ok = await create({ apiVersion: 'apps/v1', kind: 'ControllerRevision', metadata: { name: 'r' }, data: { a: 1 }, revision: 1 })
  t.equal(ok.status, 201)
  const renumbered = await bed.call({ verb: 'patch', group: 'apps', version: 'v1', resource: 'controllerrevisions', namespace: 'default', name: 'r', body: { revision: 2 }, contentType: 'application/merge-patch+json' })
  t.equal(renumbered.status, 200, 'the revision number may change')
  const changed = await bed.call({ verb: 'patch', group: 'apps', version: 'v1', resource: 'controllerrevisions', namespace: 'default', name: 'r', body: { data: { a: 2 } }, contentType: 'application/merge-patch+json' })
  t.equal(changed.status, 422)
  t.match(causes(changed), [/^data: Invalid value: .*: field is immutable$/])
})

t.test('orphans (ControllerRefManager.ClaimPods, adoptOrphanRevisions): a set re-created after --cascade=orphan adopts its pods and revision instead of re-creating them', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  const kubectl = kubectlFor(bed.sb)
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(sts('keep', { replicas: 2 })))
  const before = await rolledOut(bed, 'keep', 2)
  const uids = (await podsOf(bed, 'keep')).map((p) => p.metadata.uid)
  await kubectl(['delete', 'sts', 'keep', '--cascade=orphan'])
  await until('pods orphaned', async () => (await podsOf(bed, 'keep')).every((p) => !p.metadata.ownerReferences))
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(sts('keep', { replicas: 2 })))
  const after = await rolledOut(bed, 'keep', 2)
  t.not(after.metadata.uid, before.metadata.uid)
  const pods = await podsOf(bed, 'keep')
  t.same(pods.map((p) => p.metadata.uid), uids, 'the same pods')
  t.same(pods.map((p) => p.metadata.ownerReferences?.[0]?.uid), [after.metadata.uid, after.metadata.uid], 'now owned by the new set')
  t.equal(after.status.updateRevision, before.status.updateRevision, 'the orphaned revision is adopted')
  t.equal(((await bed.get('controllerrevisions', after.status.updateRevision, 'apps')) as Obj).metadata.ownerReferences[0].uid, after.metadata.uid)
})

t.test('a pod the server refuses (stateful_pod_control.go recordPodEvent): one FailedCreate Warning with the server\'s message, not one per retry', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  await bed.call({ verb: 'create', resource: 'namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'locked', labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } } })
  const set = sts('web')
  set.metadata.namespace = 'locked'
  const created = await bed.call({ verb: 'create', group: 'apps', version: 'v1', resource: 'statefulsets', namespace: 'locked', body: set })
  t.equal(created.status, 201)
  const failed = async () => (await bed.list('events', '', 'locked')).filter((e) => e.reason === 'FailedCreate')
  const [event] = await until('a FailedCreate event', async () => ((await failed()).length > 0 ? failed() : undefined))
  t.match(event, { type: 'Warning', involvedObject: { kind: 'StatefulSet', name: 'web' }, source: { component: 'statefulset-controller' } })
  t.match(event?.message, /^create Pod web-0 in StatefulSet web failed error: pods "web-0" is forbidden: violates PodSecurity "restricted:latest": /)
  await new Promise((r) => setTimeout(r, 500))
  t.equal((await failed()).length, 1, 'retries write no new Event')
  t.same((await bed.list('pods', '', 'locked')).length, 0)
})

t.test('identity (stateful_set_utils.go identityMatches, updateIdentity): a pod that loses its pod-name label gets it back', async (t) => {
  const bed = await controllersBed(t, { podReadyDelayMs: 10 })
  await apply(bed, sts('id', { replicas: 1 }))
  await rolledOut(bed, 'id', 1)
  await bed.call({ verb: 'patch', resource: 'pods', namespace: 'default', name: 'id-0', body: { metadata: { labels: { 'statefulset.kubernetes.io/pod-name': null, 'apps.kubernetes.io/pod-index': '7' } } }, contentType: 'application/merge-patch+json' })
  const pod = await until('labels restored', async () => {
    const p = await bed.get('pods', 'id-0')
    return p?.metadata.labels['statefulset.kubernetes.io/pod-name'] === 'id-0' ? p : undefined
  })
  t.equal(pod.metadata.labels['apps.kubernetes.io/pod-index'], '0')
})
