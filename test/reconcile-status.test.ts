import t from 'tap'
import type { Memcached, MemcachedStatus } from '../operator/api/memcached.ts'
import { RenderError } from '../operator/render/errors.ts'
import { findCondition } from '../operator/reconcile/conditions.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { podSummary } from '../operator/reconcile/cache-summary.ts'
import { computeStatus, formatSelector, outcomeOfRenderError, podNames, selectorMatches, serverList, statusEqual, type WorkloadLike, type PodLike, type ReconcileOutcome, type StatusInput } from '../operator/reconcile/status.ts'

const labels = { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'cache' }
const t0 = new Date('2026-11-21T10:00:00Z')
const t1 = new Date('2026-11-21T10:05:00Z')

const cr = (generation = 2, status?: MemcachedStatus): Memcached => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'cache', namespace: 'team', uid: 'u', generation }, spec: { size: 3 }, ...(status ? { status } : {}) })
const rendered = (replicas: number | null = 3): WorkloadLike => ({ metadata: { name: 'cache' }, spec: { ...(replicas === null ? {} : { replicas }), selector: { matchLabels: { ...labels } } } })
const liveDep = (status: NonNullable<WorkloadLike['status']>, generation = 5, replicas = 3): WorkloadLike => ({ metadata: { name: 'cache', generation }, spec: { replicas, selector: { matchLabels: { ...labels } } }, status: { observedGeneration: generation, ...status } })
const ready = (n: number) => liveDep({ replicas: n, updatedReplicas: n, readyReplicas: n, availableReplicas: n }, 5, n)
const pod = (name: string, extra: Partial<{ phase: string; deleting: boolean; labels: Record<string, string>; namespace: string }> = {}): PodLike => ({
  metadata: { name, namespace: extra.namespace ?? 'team', labels: extra.labels ?? { ...labels, 'pod-template-hash': 'abc' }, ...(extra.deleting ? { deletionTimestamp: '2026-11-21T09:00:00Z' } : {}) },
  status: { phase: extra.phase ?? 'Running' },
})

const input = (over: Partial<StatusInput> = {}): StatusInput => ({ cr: cr(), desiredWorkload: rendered(), liveWorkload: ready(3), pods: [pod('cache-b'), pod('cache-a'), pod('cache-c')], outcome: { kind: 'ok' }, now: t0, ...over })
const summary = (s: MemcachedStatus) => Object.fromEntries((s.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]))

t.test('a healthy instance: pod names sorted, counts, selector for kubectl scale, generation everywhere', async (t) => {
  const s = computeStatus(input())
  t.same(s.nodes, ['cache-a', 'cache-b', 'cache-c'])
  t.equal(s.replicas, 3)
  t.equal(s.readyReplicas, 3)
  t.equal(s.selector, 'app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached')
  t.equal(s.observedGeneration, 2)
  t.same(summary(s), { Available: 'True/AllReplicasReady', Progressing: 'False/RolloutComplete', Degraded: 'False/AsExpected', Ready: 'True/Reconciled' })
  t.equal(findCondition(s.conditions, 'Ready')?.message, '3/3 replicas ready; the cluster matches the spec')
  for (const c of s.conditions ?? []) {
    t.equal(c.observedGeneration, 2, `${c.type} carries the generation`)
    t.equal(c.lastTransitionTime, '2026-11-21T10:00:00Z')
  }
  t.equal(findCondition(s.conditions, 'Available')?.message, '3/3 replicas ready')
})

t.test('conditions through the life of an instance', async (t) => {
  const cases: { name: string; over: Partial<StatusInput>; want: Record<string, string>; messages?: Record<string, string> }[] = [
    { name: 'just applied, not yet in the cache', over: { liveWorkload: undefined, pods: [] }, want: { Available: 'False/DeploymentNotFound', Progressing: 'True/Creating', Degraded: 'False/AsExpected', Ready: 'False/DeploymentNotFound' } },
    { name: 'created, no pod ready', over: { liveWorkload: liveDep({ replicas: 3, updatedReplicas: 3, readyReplicas: 0, availableReplicas: 0 }) }, want: { Available: 'False/ReplicasNotReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/ReplicasNotReady' }, messages: { Available: '0/3 replicas ready', Progressing: 'rolling out: 3/3 updated, 0/3 ready, 3 running', Ready: '0/3 replicas ready' } },
    { name: 'deployment controller has not seen the new spec', over: { liveWorkload: { ...ready(3), status: { ...ready(3).status, observedGeneration: 4 } } }, want: { Available: 'True/AllReplicasReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/RollingOut' }, messages: { Progressing: 'waiting for the Deployment controller to observe generation 5', Ready: 'waiting for the Deployment controller to observe generation 5' } },
    { name: 'rollout half done: old pods still serve', over: { liveWorkload: liveDep({ replicas: 4, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3 }) }, want: { Available: 'True/AllReplicasReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/RollingOut' } },
    { name: 'scaling up', over: { desiredWorkload: rendered(5) }, want: { Available: 'False/ReplicasNotReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/ReplicasNotReady' } },
    { name: 'scaling down: surplus pods still running', over: { desiredWorkload: rendered(1) }, want: { Available: 'True/AllReplicasReady', Progressing: 'True/RollingOut', Degraded: 'False/AsExpected', Ready: 'False/RollingOut' } },
    { name: 'scaled to zero', over: { desiredWorkload: rendered(0), liveWorkload: ready(0), pods: [] }, want: { Available: 'True/ScaledToZero', Progressing: 'False/RolloutComplete', Degraded: 'False/AsExpected', Ready: 'True/Reconciled' } },
    { name: 'replicas omitted means 1', over: { desiredWorkload: rendered(null), liveWorkload: ready(1) }, want: { Available: 'True/AllReplicasReady', Progressing: 'False/RolloutComplete', Degraded: 'False/AsExpected', Ready: 'True/Reconciled' } },
    {
      name: 'rollout stuck',
      over: { liveWorkload: { ...liveDep({ replicas: 4, updatedReplicas: 1, readyReplicas: 3 }), status: { observedGeneration: 5, replicas: 4, updatedReplicas: 1, readyReplicas: 3, availableReplicas: 3, conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded', message: 'ReplicaSet "cache-x" has timed out progressing.' }] } } },
      want: { Available: 'True/AllReplicasReady', Progressing: 'False/ProgressDeadlineExceeded', Degraded: 'True/ProgressDeadlineExceeded', Ready: 'False/ProgressDeadlineExceeded' },
      messages: { Degraded: 'ReplicaSet "cache-x" has timed out progressing.' },
    },
    {
      // pkg/controller/deployment/sync.go copies the ReplicaSet's FailedCreate to the Deployment.
      name: 'pods refused by admission or quota',
      over: { liveWorkload: { ...liveDep({ replicas: 1, updatedReplicas: 1, readyReplicas: 1 }), status: { observedGeneration: 5, replicas: 1, updatedReplicas: 1, readyReplicas: 1, conditions: [{ type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'pods "cache-x-abcde" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1' }] } } },
      want: { Available: 'False/ReplicasNotReady', Progressing: 'True/RollingOut', Degraded: 'True/ReplicaFailure', Ready: 'False/ReplicaFailure' },
      messages: { Degraded: 'pods cannot be created: pods "cache-x-abcde" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1' },
    },
    {
      name: 'a ReplicaFailure that cleared',
      over: { liveWorkload: { ...ready(3), status: { ...ready(3).status, conditions: [{ type: 'ReplicaFailure', status: 'False', reason: 'FailedCreate', message: 'old' }] } } },
      want: { Available: 'True/AllReplicasReady', Progressing: 'False/RolloutComplete', Degraded: 'False/AsExpected', Ready: 'True/Reconciled' },
    },
  ]
  for (const c of cases) {
    const s = computeStatus(input(c.over))
    t.same(summary(s), c.want, c.name)
    for (const [type, message] of Object.entries(c.messages ?? {})) t.equal(findCondition(s.conditions, type)?.message, message, `${c.name}: ${type} message`)
  }
})

t.test('every failed outcome is Degraded with its reason and message, and the running objects still count', async (t) => {
  const outcomes: [ReconcileOutcome, string][] = [
    [{ kind: 'invalid', message: 'spec.size: must be >= 0' }, 'InvalidSpec'],
    [{ kind: 'template', message: 'templates/deployment.ejs:12: x is not defined' }, 'TemplateError'],
    [{ kind: 'refused', message: 'Namespace/x: not managed' }, 'ObjectRefused'],
    [{ kind: 'ownership', message: 'Service team/cache exists and has no controller' }, 'OwnershipConflict'],
    [{ kind: 'apply-failed', message: 'Deployment team/cache: 422 …' }, 'ApplyFailed'],
    [{ kind: 'prune-failed', message: 'PodDisruptionBudget team/cache: 403' }, 'PruneFailed'],
    [{ kind: 'error', message: 'boom' }, 'ReconcileError'],
  ]
  for (const [outcome, reason] of outcomes) {
    const s = computeStatus(input({ outcome, desiredWorkload: outcome.kind === 'invalid' ? undefined : rendered() }))
    const degraded = findCondition(s.conditions, 'Degraded')
    t.same([degraded?.status, degraded?.reason, degraded?.message], ['True', reason, 'message' in outcome ? outcome.message : ''], reason)
    t.same([findCondition(s.conditions, 'Ready')?.status, findCondition(s.conditions, 'Ready')?.reason], ['False', reason], `${reason}: not Ready, for the same reason`)
    t.same(s.nodes, ['cache-a', 'cache-b', 'cache-c'], `${reason}: the previous pods are still reported`)
    t.equal(findCondition(s.conditions, 'Available')?.status, 'True', `${reason}: still available`)
  }
  // A Deployment of the rendered name that another owner controls exists: never "does not exist".
  const foreign = computeStatus(input({ outcome: { kind: 'ownership', message: 'Deployment team/cache exists and has no controller', deployment: true }, liveWorkload: undefined, pods: [] }))
  t.same([findCondition(foreign.conditions, 'Available')?.reason, findCondition(foreign.conditions, 'Available')?.message], ['OwnershipConflict', 'a Deployment of that name exists but is not controlled by this Memcached'])
  const serviceOnly = computeStatus(input({ outcome: { kind: 'ownership', message: 'Service team/cache exists and has no controller' }, liveWorkload: undefined, pods: [] }))
  t.equal(findCondition(serviceOnly.conditions, 'Available')?.reason, 'DeploymentNotFound', 'a conflict on another object: the Deployment indeed does not exist')
  const never = computeStatus(input({ outcome: { kind: 'invalid', message: 'bad' }, desiredWorkload: undefined, liveWorkload: undefined, pods: [] }))
  t.same(summary(never), { Available: 'False/DeploymentNotFound', Progressing: 'False/NotApplied', Degraded: 'True/InvalidSpec', Ready: 'False/InvalidSpec' }, 'invalid from the start')
  t.same([never.nodes, never.replicas, never.readyReplicas, never.selector], [[], 0, 0, undefined])
})

t.test('without a rendered Deployment the live one gives selector and size; without either the old selector stays', async (t) => {
  const s = computeStatus(input({ desiredWorkload: undefined, outcome: { kind: 'template', message: 'x' } }))
  t.equal(s.selector, 'app.kubernetes.io/instance=cache,app.kubernetes.io/name=memcached')
  t.equal(findCondition(s.conditions, 'Available')?.message, '3/3 replicas ready')
  const kept = computeStatus(input({ cr: cr(2, { selector: 'a=b' }), desiredWorkload: undefined, liveWorkload: undefined, outcome: { kind: 'template', message: 'x' } }))
  t.equal(kept.selector, 'a=b')
  t.same(kept.nodes, [])
  const noSelector = computeStatus(input({ desiredWorkload: { metadata: { name: 'cache' }, spec: { replicas: 3 } }, liveWorkload: { metadata: { name: 'cache' }, spec: { selector: 'bogus' as never } } }))
  t.equal(noSelector.selector, undefined, 'a Deployment without a usable selector gives none')
  t.same(noSelector.nodes, [])
})

t.test('nodes: pods being deleted, finished, of another namespace or not selected are left out; pending pods are in', async (t) => {
  const pods = [
    pod('cache-running'),
    pod('cache-pending', { phase: 'Pending' }),
    pod('cache-nophase'),
    pod('cache-deleting', { deleting: true }),
    pod('cache-succeeded', { phase: 'Succeeded' }),
    pod('cache-failed', { phase: 'Failed' }),
    pod('cache-elsewhere', { namespace: 'other' }),
    pod('other-instance', { labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'other' } }),
    pod('cache-running'),
  ]
  delete (pods[2] as PodLike).status
  t.same(computeStatus(input({ pods })).nodes, ['cache-nophase', 'cache-pending', 'cache-running'])
  t.same(podNames([pod('b'), pod('a', { namespace: 'x' })], { matchLabels: labels }, undefined), ['a', 'b'], 'no namespace filter without a namespace')
})

const template = (port: { name?: string; containerPort: number } | null = { name: 'memcache', containerPort: 11211 }) => ({ spec: { containers: [{ ports: port ? [{ name: 'metrics', containerPort: 9150 }, port] : [] }] } })
const statefulSet = (replicas = 3, extra: Partial<NonNullable<WorkloadLike['spec']>> = {}): WorkloadLike => ({ kind: 'StatefulSet', metadata: { name: 'cache' }, spec: { replicas, serviceName: 'cache-hl', selector: { matchLabels: { ...labels } }, template: template(), ...extra } })
const deployment = (port?: Parameters<typeof template>[0]): WorkloadLike => ({ kind: 'Deployment', metadata: { name: 'cache' }, spec: { replicas: 3, selector: { matchLabels: { ...labels } }, template: template(port) } })
const readyPod = (name: string, podIP: string | undefined, ready = true, extra: Parameters<typeof pod>[1] = {}): PodLike => {
  const p = pod(name, extra)
  return { ...p, status: { ...p.status, ...(podIP ? { podIP } : {}), conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } }
}

t.test('serverList of a StatefulSet: every ordinal by its stable DNS name, ready or not, with the memcache port', async (t) => {
  const s = computeStatus(input({ desiredWorkload: statefulSet(3), liveWorkload: { ...ready(3), kind: 'StatefulSet' }, pods: [] }))
  t.same(s.serverList, ['cache-0.cache-hl.team.svc:11211', 'cache-1.cache-hl.team.svc:11211', 'cache-2.cache-hl.team.svc:11211'], 'no pod exists yet: the names are listed all the same')
  t.equal(s.servers, 3)
  t.same(serverList(statefulSet(2, { ordinals: { start: 5 } }), [], undefined, 'team'), ['cache-5.cache-hl.team.svc:11211', 'cache-6.cache-hl.team.svc:11211'], 'ordinals.start')
  t.same(serverList(statefulSet(0), [], undefined, 'team'), [], 'size 0')
  t.same(serverList(statefulSet(2, { template: template({ name: 'other', containerPort: 1 }) }), [], undefined, 'team'), [], 'no port named memcache: nothing to connect to')
  const before = computeStatus(input({ desiredWorkload: statefulSet(3), pods: [readyPod('cache-0', '10.0.0.1'), readyPod('cache-1', '10.0.0.2')] }))
  const after = computeStatus(input({ cr: cr(2, before), desiredWorkload: statefulSet(3), pods: [readyPod('cache-0', '10.0.0.7', false), readyPod('cache-1', '10.0.0.2'), readyPod('cache-2', '10.0.0.3')] }))
  t.same(after.serverList, before.serverList, 'pods restarting or becoming ready do not change the list')
  t.equal(computeStatus(input({ desiredWorkload: undefined, liveWorkload: { ...statefulSet(2), status: { replicas: 2, readyReplicas: 2 } }, outcome: { kind: 'template', message: 'x' } })).servers, 2, 'without a render, the live StatefulSet gives the list')
  t.same(summary(computeStatus(input({ desiredWorkload: statefulSet(3), liveWorkload: undefined, pods: [] }))), { Available: 'False/StatefulSetNotFound', Progressing: 'True/Creating', Degraded: 'False/AsExpected', Ready: 'False/StatefulSetNotFound' })
})

t.test('serverList of a Deployment: the ready pods\' IPs, sorted by address, terminating and unready pods left out', async (t) => {
  const pods = [
    readyPod('cache-a', '10.0.0.10'),
    readyPod('cache-b', '10.0.0.9'),
    readyPod('cache-c', '10.0.1.1', false),
    readyPod('cache-d', undefined),
    readyPod('cache-e', '10.0.0.11', true, { deleting: true }),
    readyPod('cache-f', '10.0.0.12', true, { namespace: 'other' }),
    readyPod('other-x', '10.0.0.13', true, { labels: { 'app.kubernetes.io/name': 'memcached', 'app.kubernetes.io/instance': 'other' } }),
    pod('cache-g'),
  ]
  const s = computeStatus(input({ desiredWorkload: deployment(), pods }))
  t.same(s.serverList, ['10.0.0.9:11211', '10.0.0.10:11211'])
  t.equal(s.servers, 2)
  t.same(s.nodes, ['cache-a', 'cache-b', 'cache-c', 'cache-d', 'cache-g'], 'nodes still lists every pod that exists')
  t.same(serverList(deployment(), [readyPod('cache-a', 'fd00::2'), readyPod('cache-b', '10.0.0.1')], { matchLabels: labels }, 'team'), ['10.0.0.1:11211', '[fd00::2]:11211'], 'an IPv6 address is bracketed')
  t.same(serverList(deployment(null), pods, { matchLabels: labels }, 'team'), [], 'no port named memcache')
  t.same(computeStatus(input({ desiredWorkload: rendered(), pods })).serverList, [], 'a rendered Deployment without a pod template has no port')
})

t.test('a workload kind being switched: Progressing SwitchingWorkload with what is awaited', async (t) => {
  const switching = 'waiting for StatefulSet team/cache to have all replicas ready (1/3 ready); Deployment team/cache keeps serving until then and is pruned after'
  const s = computeStatus(input({ desiredWorkload: statefulSet(3), liveWorkload: { ...liveDep({ replicas: 3, updatedReplicas: 3, readyReplicas: 1 }), kind: 'StatefulSet' }, outcome: { kind: 'ok', switching } }))
  t.same(summary(s), { Available: 'False/ReplicasNotReady', Progressing: 'True/SwitchingWorkload', Degraded: 'False/AsExpected', Ready: 'False/ReplicasNotReady' })
  t.equal(findCondition(s.conditions, 'Progressing')?.message, switching)
})

t.test('the pod cache keeps of a pod its phase, IP and Ready condition, and nothing else of its status', async (t) => {
  const full = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'cache-0', namespace: 'team', uid: 'p', resourceVersion: '7', labels: { ...labels }, annotations: { a: 'b' }, managedFields: [] },
    spec: { containers: [{ name: 'memcached', image: 'memcached' }] },
    status: { phase: 'Running', podIP: '10.0.0.1', podIPs: [{ ip: '10.0.0.1' }], hostIP: '192.168.0.1', conditions: [{ type: 'PodScheduled', status: 'True' }, { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-21T10:00:00Z' }], containerStatuses: [{ name: 'memcached', ready: true }] },
  } as unknown as KubeObject
  t.same(podSummary(full), { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'cache-0', namespace: 'team', uid: 'p', resourceVersion: '7', labels }, status: { phase: 'Running', podIP: '10.0.0.1', conditions: [{ type: 'Ready', status: 'True' }] } })
  const pending = podSummary({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' }, status: { phase: 'Pending' } } as KubeObject)
  t.same(pending.status, { phase: 'Pending' })
  t.equal(serverList(deployment(), [podSummary(full) as unknown as PodLike], { matchLabels: labels }, 'team')[0], '10.0.0.1:11211', 'what it keeps is what serverList reads')
})

t.test('selectors: string form and matching as apimachinery does', async (t) => {
  t.equal(formatSelector({ matchLabels: { b: '2', a: '1' } }), 'a=1,b=2')
  t.equal(formatSelector({}), '')
  const expr = { matchLabels: { app: 'x' }, matchExpressions: [
    { key: 'tier', operator: 'In' as const, values: ['cache', 'db'] },
    { key: 'env', operator: 'NotIn' as const, values: ['prod'] },
    { key: 'canary', operator: 'DoesNotExist' as const },
    { key: 'zone', operator: 'Exists' as const },
  ] }
  t.equal(formatSelector(expr), 'app=x,!canary,env notin (prod),tier in (cache,db),zone')
  t.ok(selectorMatches(expr, { app: 'x', tier: 'db', zone: 'a' }))
  t.ok(selectorMatches(expr, { app: 'x', tier: 'db', zone: 'a', env: 'dev' }))
  t.notOk(selectorMatches(expr, { app: 'x', tier: 'web', zone: 'a' }), 'In')
  t.notOk(selectorMatches(expr, { app: 'x', tier: 'db', zone: 'a', env: 'prod' }), 'NotIn')
  t.notOk(selectorMatches(expr, { app: 'x', tier: 'db', zone: 'a', canary: '' }), 'DoesNotExist')
  t.notOk(selectorMatches(expr, { app: 'x', tier: 'db' }), 'Exists')
  t.notOk(selectorMatches(expr, { tier: 'db', zone: 'a' }), 'matchLabels')
  t.notOk(selectorMatches({ matchExpressions: [{ key: 'k', operator: 'In' }] }, { k: 'v' }), 'In without values selects nothing')
  t.ok(selectorMatches({}, undefined), 'an empty selector selects everything')
})

t.test('recomputing an unchanged world gives an equal status: no write, no time churn', async (t) => {
  const first = computeStatus(input())
  const again = computeStatus(input({ cr: cr(2, first), now: t1 }))
  t.ok(statusEqual(first, again))
  t.same(again, first, 'identical, transition times included')
  const progressed = computeStatus(input({ cr: cr(2, first), now: t1, liveWorkload: liveDep({ replicas: 3, updatedReplicas: 3, readyReplicas: 2, availableReplicas: 2 }) }))
  t.notOk(statusEqual(first, progressed))
  t.equal(findCondition(progressed.conditions, 'Available')?.lastTransitionTime, '2026-11-21T10:05:00Z', 'a flip moves the time')
  t.equal(findCondition(progressed.conditions, 'Degraded')?.lastTransitionTime, '2026-11-21T10:00:00Z', 'an unchanged condition keeps it')
  const newGeneration = computeStatus(input({ cr: cr(3, first), now: t1 }))
  t.notOk(statusEqual(first, newGeneration), 'a new generation is written')
})

t.test('status equality ignores condition order, transition times and absent fields only', async (t) => {
  const base = computeStatus(input())
  const conditions = [...(base.conditions ?? [])].reverse().map((c) => ({ ...c, lastTransitionTime: '2020-01-01T00:00:00Z' }))
  t.ok(statusEqual(base, { ...base, conditions }))
  t.ok(statusEqual({ nodes: ['a'], selector: undefined }, { nodes: ['a'] }))
  t.ok(statusEqual(undefined, {}))
  t.ok(statusEqual({ conditions: [] }, {}))
  t.notOk(statusEqual(base, { ...base, nodes: ['cache-a'] }))
  t.notOk(statusEqual(base, { ...base, readyReplicas: 2 }))
  t.notOk(statusEqual(base, { ...base, conditions: conditions.map((c) => (c.type === 'Degraded' ? { ...c, message: 'other' } : c)) }))
  t.notOk(statusEqual(undefined, { nodes: [] }), 'an empty node list is written once')
})

t.test('render errors map to outcomes', async (t) => {
  t.same(outcomeOfRenderError(new RenderError('values', ['spec.size: must be >= 0'])), { kind: 'invalid', message: 'spec.size: must be >= 0' })
  t.same(outcomeOfRenderError(new RenderError('guard', ['a', 'b'])), { kind: 'refused', message: '2 problems:\n  - a\n  - b' })
  for (const kind of ['template', 'yaml', 'input'] as const) t.equal(outcomeOfRenderError(new RenderError(kind, ['x'])).kind, 'template', kind)
})
