/**
 * Re-creations paced across the fleet: a chart change that moves the selector of every instance
 * deletes one Deployment at a time (the budget, --max-concurrent-recreations 1), each deleted only
 * once the previous replacement has every replica ready; the others wait, Progressing
 * RecreationQueued, with nothing of them applied — against the sandbox, watched throughout.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { type KubeClient, type KubeObject } from '../operator/controller/client.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { eventually, startOperatorOn, clientFor } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const DEPLOY = { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default' } as const
const SVC = { apiVersion: 'v1', kind: 'Service', namespace: 'default' } as const
type Condition = { type: string; status: string; reason: string; message: string }
type Status = { observedGeneration?: number; readyReplicas?: number; conditions?: Condition[] }
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as Status).conditions?.find((c) => c.type === type)
const NAMES = ['one', 'two', 'three']

async function ready(c: KubeClient, name: string, size: number): Promise<KubeObject> {
  return eventually(`${name} ready`, async () => {
    const cr = await c.get({ ...MC, namespace: 'default', name })
    const s = (cr.status ?? {}) as Status
    return s.observedGeneration === cr.metadata.generation && s.readyReplicas === size && condition(cr, 'Ready')?.status === 'True' ? cr : undefined
  }, 60_000)
}

/** Three converged instances, then the chart renamed (every selector changes) under an operator with `max` slots. */
async function renameUnder(t: Test, max: number | undefined) {
  const chart = loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  const first = await startOperatorOn(sandbox, { chart, concurrency: 4 })
  for (const name of NAMES) await client.create({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: 2 } })
  for (const name of NAMES) await ready(client, name, 2)
  await first.stop()

  // The sandbox's Deployments from now on: which exist, and how many replicas each has ready.
  const present = new Map<string, { uid: string; ready: number }>()
  for (const d of (await client.list(DEPLOY, { namespace: 'default' })).items) present.set(d.metadata.name ?? '', { uid: d.metadata.uid ?? '', ready: ((d.status ?? {}) as Status).readyReplicas ?? 0 })
  const rv = (await client.list(DEPLOY, { namespace: 'default', limit: 1 })).metadata.resourceVersion
  let maxAbsent = 0
  /** At each deletion, the other instances whose Deployment was absent or not fully ready. */
  const downAtDelete: string[][] = []
  const stopDeploys = client.watch(DEPLOY, { namespace: 'default', resourceVersion: rv }, (e) => {
    const name = e.object.metadata.name ?? ''
    if (e.type === 'DELETED') {
      downAtDelete.push(NAMES.filter((n) => n !== name && (present.get(n)?.ready ?? 0) < 2))
      present.delete(name)
    } else if (e.type === 'ADDED' || e.type === 'MODIFIED') {
      present.set(name, { uid: e.object.metadata.uid ?? '', ready: ((e.object.status ?? {}) as Status).readyReplicas ?? 0 })
    }
    maxAbsent = Math.max(maxAbsent, NAMES.filter((n) => !present.has(n)).length)
  }, () => {})
  t.teardown(stopDeploys)
  // Each Service's selector from now on, as its watch delivers it.
  const selectors = new Map<string, string | undefined>()
  for (const name of NAMES) selectors.set(name, ((await client.get({ ...SVC, name })).spec as { selector: Record<string, string> }).selector['app.kubernetes.io/name'])
  const svcRv = (await client.list(SVC, { namespace: 'default', limit: 1 })).metadata.resourceVersion
  const stopSvcs = client.watch(SVC, { namespace: 'default', resourceVersion: svcRv }, (e) => {
    if (e.type !== 'DELETED') selectors.set(e.object.metadata.name ?? '', (e.object.spec as { selector?: Record<string, string> }).selector?.['app.kubernetes.io/name'])
  }, () => {})
  t.teardown(stopSvcs)
  /** The Service's selector (app.kubernetes.io/name) when the CR first said it waits. */
  const selectorWhenQueued = new Map<string, string | undefined>()
  /** The Ready condition of each status that says the CR waits. */
  const readyWhenQueued: (Condition | undefined)[] = []
  // Every Progressing condition each CR shows from now on.
  const progressing = new Map<string, Condition[]>(NAMES.map((n) => [n, []]))
  const crRv = (await client.list(MC, { namespace: 'default', limit: 1 })).metadata.resourceVersion
  const stopCrs = client.watch(MC, { namespace: 'default', resourceVersion: crRv }, (e) => {
    const p = condition(e.object, 'Progressing')
    const seen = progressing.get(e.object.metadata.name ?? '')
    if (p && seen && seen.at(-1)?.message !== p.message) seen.push(p)
    const name = e.object.metadata.name ?? ''
    if (p?.reason === 'RecreationQueued' && !selectorWhenQueued.has(name)) selectorWhenQueued.set(name, selectors.get(name))
    if (p?.reason === 'RecreationQueued') readyWhenQueued.push(condition(e.object, 'Ready'))
  }, () => {})
  t.teardown(stopCrs)

  const yaml = readFileSync(join(DEFAULT_CHART_DIR, 'Chart.yaml'), 'utf8').replace(/^name: memcached$/m, 'name: cache')
  const renamed = loadChart(chartWith({ 'Chart.yaml': yaml }))
  const second = await startOperatorOn(sandbox, { chart: renamed, concurrency: 4, ...(max !== undefined ? { maxConcurrentRecreations: max } : {}) })
  t.teardown(() => second.stop())
  for (const name of NAMES) {
    await eventually(`${name}'s Deployment re-created with the new selector`, async () => {
      const d = await client.get({ ...DEPLOY, name }).catch(() => undefined)
      return (d?.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels?.['app.kubernetes.io/name'] === 'cache' ? d : undefined
    }, 60_000)
  }
  for (const name of NAMES) await ready(client, name, 2)
  return { maxAbsent, downAtDelete, progressing, selectorWhenQueued, selectors, readyWhenQueued, metrics: second.metrics }
}

t.test('a selector change of every instance re-creates one Deployment at a time; the others wait RecreationQueued and each converges', async (t) => {
  const { maxAbsent, downAtDelete, progressing, selectorWhenQueued, selectors, readyWhenQueued, metrics } = await renameUnder(t, undefined)
  t.equal(downAtDelete.length, 3, 'each Deployment deleted once')
  t.equal(maxAbsent, 1, 'at most one Deployment absent at any time')
  t.same(downAtDelete, [[], [], []], 'each deleted while every other instance had all its replicas ready')
  const queued = NAMES.filter((n) => progressing.get(n)!.some((c) => c.reason === 'RecreationQueued'))
  t.ok(queued.length >= 2, `the CRs waiting for their turn said so (${queued.join(', ')})`)
  for (const n of queued) {
    const c = progressing.get(n)!.find((p) => p.reason === 'RecreationQueued')!
    t.equal(c.status, 'True')
    t.match(c.message, new RegExp(`^Deployment default/${n} must be deleted and re-created \\(spec\\.selector cannot change in place\\) and waits for its turn: [12] of [12] waiting; being re-created now: Deployment default/\\w+; nothing of this Memcached is applied until then`))
  }
  t.ok(readyWhenQueued.length > 0 && readyWhenQueued.every((c) => c?.status === 'False' && c.reason === 'RecreationQueued'), 'Ready is False, RecreationQueued, while it waits')
  // Nothing of a waiting CR is applied: its Service keeps selecting the old pods until its turn.
  t.same([...selectorWhenQueued.values()], queued.map(() => 'memcached'), 'each waiting CR’s Service still had the old selector')
  t.same(NAMES.map((n) => selectors.get(n)), ['cache', 'cache', 'cache'], 'every Service has the new selector in the end')
  t.ok(metrics.recreationCounts.every(([, inFlight]) => inFlight <= 1), 'the in-flight gauge never went above 1')
  t.ok(metrics.recreationCounts.some(([queuedNow]) => queuedNow >= 1), 'the queued gauge counted the waiting ones')
  t.same(metrics.recreationCounts.at(-1), [0, 0], 'nothing queued or in flight at the end')
})

t.test('--max-concurrent-recreations 0: every instance is re-created at once, as before pacing', async (t) => {
  const { maxAbsent, progressing } = await renameUnder(t, 0)
  t.ok(maxAbsent >= 2, `several Deployments absent at once (${maxAbsent})`)
  t.notOk(NAMES.some((n) => progressing.get(n)!.some((c) => c.reason === 'RecreationQueued')), 'none waited')
})

t.test('a StatefulSet’s podManagementPolicy changed by the chart: re-created one at a time, the other waits naming the field', async (t) => {
  const chart = loadChart()
  const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
  t.teardown(() => sandbox.close())
  const client = clientFor(sandbox, 'test-user/1', 'test-user')
  t.teardown(() => client.close())
  const STS = { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default' } as const
  const names = ['s-one', 's-two']
  const first = await startOperatorOn(sandbox, { chart, concurrency: 4 })
  for (const name of names) await client.create({ ...MC, metadata: { name, namespace: 'default' }, spec: { size: 2, workload: { kind: 'StatefulSet' }, service: { headless: true } } })
  for (const name of names) await ready(client, name, 2)
  await first.stop()

  const present = new Set(names)
  let maxAbsent = 0
  const rv = (await client.list(STS, { namespace: 'default', limit: 1 })).metadata.resourceVersion
  const stop = client.watch(STS, { namespace: 'default', resourceVersion: rv }, (e) => {
    if (e.type === 'DELETED') present.delete(e.object.metadata.name ?? '')
    else present.add(e.object.metadata.name ?? '')
    maxAbsent = Math.max(maxAbsent, names.filter((n) => !present.has(n)).length)
  }, () => {})
  t.teardown(stop)
  const queued: string[] = []
  const crRv = (await client.list(MC, { namespace: 'default', limit: 1 })).metadata.resourceVersion
  const stopCrs = client.watch(MC, { namespace: 'default', resourceVersion: crRv }, (e) => {
    const p = condition(e.object, 'Progressing')
    if (p?.reason === 'RecreationQueued') queued.push(p.message)
  }, () => {})
  t.teardown(stopCrs)

  const values = readFileSync(join(DEFAULT_CHART_DIR, 'values.yaml'), 'utf8').replace(/^ {2}podManagementPolicy: Parallel$/m, '  podManagementPolicy: OrderedReady')
  const changed = loadChart(chartWith({ 'values.yaml': values }))
  const second = await startOperatorOn(sandbox, { chart: changed, concurrency: 4 })
  t.teardown(() => second.stop())
  for (const name of names) {
    await eventually(`${name}'s StatefulSet re-created OrderedReady`, async () => {
      const s = await client.get({ ...STS, name }).catch(() => undefined)
      return (s?.spec as { podManagementPolicy?: string } | undefined)?.podManagementPolicy === 'OrderedReady' ? s : undefined
    }, 60_000)
  }
  for (const name of names) await ready(client, name, 2)
  t.equal(maxAbsent, 1, 'at most one StatefulSet absent at any time')
  t.ok(queued.length > 0, 'the other waited')
  t.match(queued[0], /^StatefulSet default\/s-(one|two) must be deleted and re-created \(spec\.podManagementPolicy cannot change in place\) and waits for its turn: 1 of 1 waiting/)
})
