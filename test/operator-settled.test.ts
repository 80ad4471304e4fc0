/**
 * A reconcile of a CR whose inputs (spec, chart, Secret checksums, optional kinds served) are the
 * same as at its last complete reconcile, and whose objects are all still the version its apply
 * left, renders nothing and applies nothing: a pod becoming ready, a child's status, a resync.
 * Anything that could change the render, or a change to an object by someone else, goes through
 * the whole render, diff and apply again. Renders are counted by wrapping the chart's templates.
 */
import t, { type Test } from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { loadChart, type Chart } from '../operator/render/chart.ts'
import { eventually, operatorWrites, reconcileCount, startLoggedBed, type LoggedBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Status = { nodes?: string[]; readyReplicas?: number }

interface Bed extends LoggedBed {
  /** How many times the chart's templates ran (one render runs every template). */
  renders(): number
  /** Makes the operator's chart function return another chart from now on. */
  useChart(chart: Chart): void
}

/** The chart with each template's runs counted. */
function counted(chart: Chart, counter: { n: number }): Chart {
  return { ...chart, templates: chart.templates.map((tpl) => ({ ...tpl, render: (locals: Record<string, unknown>) => ((counter.n += 1), tpl.render(locals)) })) }
}

async function startBed(t: Test): Promise<Bed> {
  const base = loadChart()
  const counter = { n: 0 }
  let current = counted(base, counter)
  const bed = await startLoggedBed(t, base, () => current, 'debug')
  return {
    ...bed,
    renders: () => counter.n / base.templates.length,
    useChart: (chart) => {
      current = counted(chart, counter)
    },
  }
}

const getCr = (c: KubeClient, name: string) => c.get({ ...MC, namespace: 'default', name })
const getDeployment = (c: KubeClient, name: string) => c.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name })
const replicasOf = (d: KubeObject) => (d.spec as { replicas?: number }).replicas
/** The CR once status.nodes lists `size` pods, all ready. */
const converged = (c: KubeClient, name: string, size: number) =>
  eventually(`${name} has ${size} ready nodes`, async () => {
    const st = ((await getCr(c, name)).status ?? {}) as Status
    return st.nodes?.length === size && st.readyReplicas === size ? st : undefined
  })

t.test('pods becoming ready update the status from one render: the reconciles they bring render and apply nothing', async (t) => {
  const bed = await startBed(t)
  await bed.client.create({ ...MC, metadata: { name: 'calm', namespace: 'default' }, spec: { size: 2 } })
  const st = await converged(bed.client, 'calm', 2)
  t.equal(st.nodes?.length, 2)
  t.ok(reconcileCount(bed.metrics) >= 2, `several reconciles (${reconcileCount(bed.metrics)})`)
  // One render, the create's: its applies leave the objects as a later apply would (only the
  // operator's Apply entry), so the reconciles that follow find them settled.
  const writes = bed.sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && ['create', 'patch'].includes(r.verb) && !r.subresource && r.resource !== 'events')
  t.equal(bed.renders(), 1, 'one render')
  t.same(writes.map((w) => `${w.verb} ${w.patchType} ${w.resource} ${w.code}`).sort(), ['patch apply deployments 201', 'patch apply poddisruptionbudgets 201', 'patch apply services 201'], 'Service, Deployment and PodDisruptionBudget created once each by an apply, and never written again')
  t.ok(bed.logs.some((l) => l.includes('"key":"default/calm"') && l.includes('not rendered')), 'the debug log says the render was skipped')
  t.ok((bed.metrics.counts['skipped:Deployment'] ?? 0) > 0, 'the skipped objects are counted as before')
})

t.test('a spec change renders and applies again', async (t) => {
  const bed = await startBed(t)
  await bed.client.create({ ...MC, metadata: { name: 'grow', namespace: 'default' }, spec: { size: 1 } })
  await converged(bed.client, 'grow', 1)
  const before = bed.renders()
  await bed.client.patch({ ...MC, namespace: 'default', name: 'grow' }, { spec: { size: 3 } }, { type: 'merge' })
  await converged(bed.client, 'grow', 3)
  t.equal(replicasOf(await getDeployment(bed.client, 'grow')), 3)
  t.ok(bed.renders() > before, 'rendered again')
})

t.test('a child changed by someone else is rendered, diffed and applied again', async (t) => {
  const bed = await startBed(t)
  await bed.client.create({ ...MC, metadata: { name: 'drift', namespace: 'default' }, spec: { size: 2 } })
  await converged(bed.client, 'drift', 2)
  const before = bed.renders()
  await bed.client.patch({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'drift' }, { spec: { replicas: 1 } }, { type: 'merge' })
  await eventually('replicas put back', async () => (replicasOf(await getDeployment(bed.client, 'drift')) === 2 ? true : undefined))
  t.ok(bed.renders() > before, 'rendered again')
  await converged(bed.client, 'drift', 2)
})

t.test('a new chart renders again at the next reconcile', async (t) => {
  const bed = await startBed(t)
  await bed.client.create({ ...MC, metadata: { name: 'chart', namespace: 'default' }, spec: { size: 1 } })
  await converged(bed.client, 'chart', 1)
  const before = bed.renders()
  // The same files read again: another chart object, as a reload after a change gives.
  bed.useChart(loadChart(undefined, true))
  // A pod deleted: its replacement's events bring reconciles.
  const pod = (await bed.client.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: 'default' })).items.find((p) => p.metadata.name?.startsWith('chart-'))
  t.ok(pod, 'a pod of the CR')
  await bed.client.delete({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: pod!.metadata.name! })
  await eventually('rendered with the new chart', () => (bed.renders() > before ? true : undefined))
  await converged(bed.client, 'chart', 1)
})
