// The disruption controller (pkg/controller/disruption/disruption.go getExpectedPodCount,
// getExpectedScale, countHealthyPods, updatePdbStatus; pkg/apis/policy/helper
// UpdateDisruptionAllowedCondition), through the API and through real kubectl.
import t from 'tap'
import { controllersBed, until, type Obj } from './support/controllers-bed.ts'
import { kubectlFor } from './support/kubectl.ts'
import { deployment as plain } from './support/sandbox-requests.ts'

const deployment = (name: string, replicas: number): Obj => {
  const d = plain(name) as Obj
  d.spec.replicas = replicas
  return d
}
const pdb = (name: string, spec: Obj): Obj => ({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name, namespace: 'default' }, spec })

t.test('disruption.go getExpectedPodCount: integer and percentage minAvailable and maxUnavailable, percentages scaled against the Deployment\'s replicas and rounded up', async (t) => {
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 4) })
  await until('4 ready pods', async () => (await list('pods')).filter((p) => p.status?.conditions?.some((c: Obj) => c.type === 'Ready' && c.status === 'True')).length === 4)
  const cases: [string, Obj, Obj][] = [
    ['min-int', { minAvailable: 3 }, { currentHealthy: 4, desiredHealthy: 3, expectedPods: 4, disruptionsAllowed: 1 }],
    ['min-pct', { minAvailable: '30%' }, { currentHealthy: 4, desiredHealthy: 2, expectedPods: 4, disruptionsAllowed: 2 }],
    ['max-int', { maxUnavailable: 1 }, { currentHealthy: 4, desiredHealthy: 3, expectedPods: 4, disruptionsAllowed: 1 }],
    ['max-pct', { maxUnavailable: '30%' }, { currentHealthy: 4, desiredHealthy: 2, expectedPods: 4, disruptionsAllowed: 2 }],
    ['min-all', { minAvailable: '100%' }, { currentHealthy: 4, desiredHealthy: 4, expectedPods: 4, disruptionsAllowed: 0 }],
    ['none', { minAvailable: 1, selector: { matchLabels: { app: 'nothing' } } }, { currentHealthy: 0, desiredHealthy: 1, expectedPods: 0, disruptionsAllowed: 0 }],
  ]
  for (const [name, spec] of cases) {
    t.equal((await call({ verb: 'create', group: 'policy', resource: 'poddisruptionbudgets', namespace: 'default', body: pdb(name, { selector: { matchLabels: { app: 'web' } }, ...spec }) })).status, 201)
  }
  for (const [name, , want] of cases) {
    const got = await until(`${name}'s status`, async () => {
      const o = await get('poddisruptionbudgets', name, 'policy')
      return o?.status?.observedGeneration === 1 ? o : undefined
    })
    t.match(got.status, want, name)
    const allowed = want.disruptionsAllowed > 0
    t.match(got.status.conditions, [{ type: 'DisruptionAllowed', status: allowed ? 'True' : 'False', reason: allowed ? 'SufficientPods' : 'InsufficientPods', message: '', observedGeneration: 1, lastTransitionTime: /Z$/ }], `${name}: condition`)
  }
  const noPods = await until('the NoPods event', async () => (await list('events')).find((e) => e.reason === 'NoPods'))
  t.match(noPods, { type: 'Normal', message: 'No matching pods found', involvedObject: { kind: 'PodDisruptionBudget', name: 'none' }, source: { component: 'controllermanager' } })

  // Scaling the Deployment to 10 moves the percentages with it, before the pods exist.
  await call({ verb: 'patch', group: 'apps', resource: 'deployments', namespace: 'default', name: 'web', contentType: 'application/merge-patch+json', body: { spec: { replicas: 10 } } })
  const maxPct = await until('max-pct at 10 ready pods', async () => {
    const o = await get('poddisruptionbudgets', 'max-pct', 'policy')
    return o?.status?.currentHealthy === 10 ? o : undefined
  })
  t.match(maxPct.status, { expectedPods: 10, desiredHealthy: 7, disruptionsAllowed: 3 })
  t.match((await get('poddisruptionbudgets', 'min-int', 'policy'))?.status, { expectedPods: 10, desiredHealthy: 3, disruptionsAllowed: 7 })
})

t.test('disruption.go countHealthyPods: a pod that stops being Ready lowers currentHealthy and disruptionsAllowed; the condition turns InsufficientPods', async (t) => {
  // The kubelet reports the pod Ready again after the ready delay: long enough to be seen.
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 400 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 2) })
  await call({ verb: 'create', group: 'policy', resource: 'poddisruptionbudgets', namespace: 'default', body: pdb('p', { selector: { matchLabels: { app: 'web' } }, minAvailable: 1 }) })
  const before = await until('one disruption allowed', async () => {
    const o = await get('poddisruptionbudgets', 'p', 'policy')
    return o?.status?.disruptionsAllowed === 1 ? o : undefined
  })
  t.match(before.status.conditions, [{ status: 'True', reason: 'SufficientPods' }])
  const pod = (await list('pods'))[0] as Obj
  const conditions = pod.status.conditions.map((c: Obj) => (c.type === 'Ready' ? { ...c, status: 'False' } : c))
  await call({ verb: 'patch', resource: 'pods', namespace: 'default', name: pod.metadata.name, subresource: 'status', contentType: 'application/merge-patch+json', body: { status: { conditions } } })
  const after = await until('no disruption allowed', async () => {
    const o = await get('poddisruptionbudgets', 'p', 'policy')
    return o?.status?.currentHealthy === 1 ? o : undefined
  })
  t.match(after.status, { currentHealthy: 1, desiredHealthy: 1, expectedPods: 2, disruptionsAllowed: 0 })
  t.match(after.status.conditions, [{ status: 'False', reason: 'InsufficientPods' }])
  t.not(after.status.conditions[0].lastTransitionTime, undefined)
})

t.test('disruption.go getExpectedScale: a pod without a controller under a percentage budget is an UnmanagedPods warning; a maxUnavailable budget still counts the managed pods', async (t) => {
  const { call, get, list } = await controllersBed(t, { podReadyDelayMs: 5 })
  await call({ verb: 'create', group: 'apps', resource: 'deployments', namespace: 'default', body: deployment('web', 2) })
  await call({ verb: 'create', resource: 'pods', namespace: 'default', body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'stray', labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox:1' }] } } })
  await call({ verb: 'create', group: 'policy', resource: 'poddisruptionbudgets', namespace: 'default', body: pdb('p', { selector: { matchLabels: { app: 'web' } }, maxUnavailable: 1 }) })
  const got = await until('3 healthy pods counted', async () => {
    const o = await get('poddisruptionbudgets', 'p', 'policy')
    return o?.status?.currentHealthy === 3 ? o : undefined
  })
  t.match(got.status, { expectedPods: 2, desiredHealthy: 1, disruptionsAllowed: 2 })
  const warning = await until('the UnmanagedPods event', async () => (await list('events')).find((e) => e.reason === 'UnmanagedPods'))
  t.match(warning, { type: 'Warning', message: /^Pods selected by this PodDisruptionBudget \(selector: &LabelSelector\{MatchLabels:map\[string\]string\{app: web,\}/ })
})

t.test('real kubectl: get pdb shows the allowed disruptions of 3 ready pods', async (t) => {
  const { sb, get } = await controllersBed(t, { podReadyDelayMs: 5 })
  const kubectl = kubectlFor(sb.kubeconfigPath)
  await kubectl(['create', 'deployment', 'cache', '--image=memcached:1.6.38', '--replicas=3'])
  // (kubectl create poddisruptionbudget sends protobuf, which the sandbox does not decode for PDBs.)
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(pdb('cache', { selector: { matchLabels: { app: 'cache' } }, maxUnavailable: 1 })))
  await kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(pdb('cache-min', { selector: { matchLabels: { app: 'cache' } }, minAvailable: '50%' })))
  await until('both budgets computed', async () => (await get('poddisruptionbudgets', 'cache', 'policy'))?.status?.currentHealthy === 3 && (await get('poddisruptionbudgets', 'cache-min', 'policy'))?.status?.currentHealthy === 3)
  const out = await kubectl(['get', 'pdb'])
  t.match(out, /NAME\s+MIN AVAILABLE\s+MAX UNAVAILABLE\s+ALLOWED DISRUPTIONS\s+AGE\ncache\s+N\/A\s+1\s+1\s+\S+\ncache-min\s+50%\s+N\/A\s+1\s+\S+\n/)
  t.match(await kubectl(['describe', 'pdb', 'cache']), /Allowed disruptions:\s+1\n\s+Current:\s+3\n\s+Desired:\s+2\n\s+Total:\s+3/)
})
