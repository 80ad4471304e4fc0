/**
 * Damage limits and the pause switch against the sandbox, with real kubectl where a user would use
 * it: a chart change that would re-create every workload is held by the fleet's delete budget after
 * the budgeted number, and one that would restart every instance by the restart budget — the
 * waiting CRs say so (Progressing and Ready BudgetExhausted, `kubectl get mc` Status), with nothing
 * of them applied; a render that drops most of a CR's objects is refused until annotated; a paused
 * CR writes nothing to its objects until the annotation goes. One sandbox, a namespace per case.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import type { KubeClient, KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../operator/render/chart.ts'
import type { BudgetLimits } from '../operator/reconcile/budget.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { chartWith } from './support/chart.ts'
import { kubectlFor } from './support/kubectl.ts'
import { clientFor, eventually, startOperatorOn } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Condition = { type: string; status: string; reason: string; message: string }
type Status = { observedGeneration?: number; readyReplicas?: number; conditions?: Condition[] }
const condition = (o: KubeObject, type: string) => ((o.status ?? {}) as Status).conditions?.find((c) => c.type === type)

const chart = loadChart()
const sandbox = await startSandbox({ podReadyDelayMs: 20, installCRDs: [memcachedCRD(chart) as unknown as KubeObject] })
t.teardown(() => sandbox.close())
const client = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => client.close())
const kubectl = kubectlFor(sandbox.kubeconfigPath)

async function ready(c: KubeClient, namespace: string, name: string): Promise<KubeObject> {
  return eventually(`${namespace}/${name} ready`, async () => {
    const cr = await c.get({ ...MC, namespace, name })
    const s = (cr.status ?? {}) as Status
    return s.observedGeneration === cr.metadata.generation && condition(cr, 'Ready')?.status === 'True' ? cr : undefined
  }, 60_000)
}

/** A namespace with `names` converged under the bundled chart (by an operator stopped after). */
async function converged(t: Test, namespace: string, names: readonly string[], spec: Record<string, unknown> = { size: 1 }): Promise<void> {
  await client.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
  const first = await startOperatorOn(sandbox, { chart, concurrency: 4, namespaces: [namespace] })
  for (const name of names) await client.create({ ...MC, metadata: { name, namespace }, spec })
  for (const name of names) await ready(client, namespace, name)
  await first.stop()
}

/** An operator of `namespace` with a chart and a budget, stopped at the end of the test. */
async function operator(t: Test, namespace: string, with_: Chart, budget: BudgetLimits, extra: { maxConcurrentRecreations?: number } = {}) {
  const op = await startOperatorOn(sandbox, { chart: with_, concurrency: 4, namespaces: [namespace], budget, ...extra })
  t.teardown(() => op.stop())
  return op
}

const chartYaml = readFileSync(join(DEFAULT_CHART_DIR, 'Chart.yaml'), 'utf8')
const valuesYaml = readFileSync(join(DEFAULT_CHART_DIR, 'values.yaml'), 'utf8')

t.test('a chart change that would re-create every workload is held by the delete budget after the budgeted number; the others wait BudgetExhausted with nothing applied', async (t) => {
  const ns = 'budget-deletes'
  const names = ['a', 'b', 'c', 'd']
  await converged(t, ns, names)
  // A renamed chart moves every Deployment's selector: each must be deleted and re-created.
  const renamed = loadChart(chartWith({ 'Chart.yaml': chartYaml.replace(/^name: memcached$/m, 'name: cache') }))
  const op = await operator(t, ns, renamed, { deletes: 2, restarts: 0, windowMs: 3_600_000 }, { maxConcurrentRecreations: 0 })
  const selectorOf = async (name: string) => ((await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name })).spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels['app.kubernetes.io/name']
  const waiting = await eventually('two re-created, two waiting', async () => {
    const crs = await Promise.all(names.map((name) => client.get({ ...MC, namespace: ns, name })))
    const held = crs.filter((cr) => condition(cr, 'Progressing')?.reason === 'BudgetExhausted')
    const moved = (await Promise.all(names.map(selectorOf))).filter((s) => s === 'cache').length
    return held.length === 2 && moved === 2 ? held : undefined
  }, 60_000)
  for (const cr of waiting) {
    const name = cr.metadata.name ?? ''
    t.equal(await selectorOf(name), 'memcached', `${name}'s Deployment was not touched`)
    const svc = await client.get({ apiVersion: 'v1', kind: 'Service', namespace: ns, name })
    t.equal((svc.spec as { selector: Record<string, string> }).selector['app.kubernetes.io/name'], 'memcached', `${name}'s Service still selects the old pods: nothing of it was applied`)
    t.match(condition(cr, 'Progressing'), { status: 'True', message: new RegExp(`^the change would delete Deployment ${ns}/${name} and the fleet's budget of deletes is spent \\(2 of 2 in the window, --max-deletes\\); nothing of this Memcached is applied until the window has room`) })
    t.match(condition(cr, 'Ready'), { status: 'False', reason: 'BudgetExhausted' })
  }
  const events = (await client.list({ apiVersion: 'v1', kind: 'Event' }, { namespace: ns })).items.filter((e) => (e as unknown as { reason: string }).reason === 'BudgetExhausted')
  t.same(new Set(events.map((e) => (e as unknown as { involvedObject: { name: string }; type: string }).involvedObject.name)), new Set(waiting.map((c) => c.metadata.name)), 'a Warning event on each waiting CR')
  t.ok(events.every((e) => (e as unknown as { type: string }).type === 'Warning'))
  t.ok((op.metrics.counts['budgetExhausted:delete'] ?? 0) >= 2, 'the metric counted the waits')
  t.same(op.metrics.budgetUsed, { delete: 2, restart: 0 }, 'the gauge shows the budget spent')
  const table = await kubectl(['get', 'mc', '-n', ns])
  t.equal(table.split('\n').filter((l) => / BudgetExhausted /.test(l)).length, 2, `kubectl get mc shows the waiting ones:\n${table}`)
})

t.test('a chart change that restarts every instance goes as far as the restart budget; the rest wait', async (t) => {
  const ns = 'budget-restarts'
  const names = ['a', 'b', 'c']
  await converged(t, ns, names)
  const newImage = loadChart(chartWith({ 'values.yaml': valuesYaml.replace('tag: 1.6.38-alpine', 'tag: 1.6.39-alpine') }))
  await operator(t, ns, newImage, { deletes: 0, restarts: 1, windowMs: 3_600_000 })
  const imageOf = async (name: string) => ((await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name })).spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image
  await eventually('one rolled, two waiting', async () => {
    const crs = await Promise.all(names.map((name) => client.get({ ...MC, namespace: ns, name })))
    const held = crs.filter((cr) => condition(cr, 'Progressing')?.reason === 'BudgetExhausted')
    const rolled = (await Promise.all(names.map(imageOf))).filter((i) => i.endsWith(':1.6.39-alpine')).length
    return held.length === 2 && rolled === 1 ? true : undefined
  }, 60_000)
  for (const name of names) {
    const cr = await client.get({ ...MC, namespace: ns, name })
    if (condition(cr, 'Progressing')?.reason !== 'BudgetExhausted') continue
    t.equal(await imageOf(name), 'memcached:1.6.38-alpine', `${name} keeps its pods`)
    t.match(condition(cr, 'Progressing')?.message, /^the change would restart the pods of Deployment budget-restarts\/\w and the fleet's budget of pod restarts is spent \(1 of 1 in the window, --max-restarts\)/)
  }
})

t.test('a render that drops most of a CR\'s objects is refused (Degraded PruneRefused) until kubectl annotates it for its generation', async (t) => {
  const ns = 'budget-prune'
  await converged(t, ns, ['x'], { size: 2 })
  // A chart that lost its Service and PodDisruptionBudget templates: two of the three objects go.
  const lost = loadChart(chartWith({ 'templates/service.ejs': '', 'templates/poddisruptionbudget.ejs': '' }))
  await operator(t, ns, lost, { deletes: 0, restarts: 0, windowMs: 60_000 })
  const refused = await eventually('refused', async () => {
    const cr = await client.get({ ...MC, namespace: ns, name: 'x' })
    return condition(cr, 'Degraded')?.reason === 'PruneRefused' ? cr : undefined
  })
  t.match(condition(refused, 'Degraded')?.message, /^the render would prune 2 of the 3 objects this Memcached controls \(Service budget-prune\/x, PodDisruptionBudget budget-prune\/x\), more than 50%/)
  t.ok(await client.get({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'x' }), 'the Service is still there')
  const table = await kubectl(['get', 'mc', 'x', '-n', ns])
  t.match(table, / PruneRefused /, 'kubectl get shows why')
  const generation = await kubectl(['get', 'mc', 'x', '-n', ns, '-o', 'jsonpath={.metadata.generation}'])
  await kubectl(['annotate', 'mc', 'x', '-n', ns, `memcached.cache.example.com/allow-mass-prune=${generation}`])
  await eventually('pruned once allowed', async () => {
    const svc = await client.get({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'x' }).catch(() => undefined)
    return svc === undefined ? true : undefined
  })
  const cr = await ready(client, ns, 'x')
  t.equal(condition(cr, 'Degraded')?.status, 'False')
})

t.test('a paused CR writes nothing to its objects, kubectl get shows Paused, and removing the annotation resumes it', async (t) => {
  const ns = 'pause'
  await converged(t, ns, ['p'])
  const op = await operator(t, ns, chart, { deletes: 20, restarts: 50, windowMs: 600_000 })
  await kubectl(['annotate', 'mc', 'p', '-n', ns, 'memcached.cache.example.com/paused=true'])
  const paused = await eventually('paused', async () => {
    const cr = await client.get({ ...MC, namespace: ns, name: 'p' })
    return condition(cr, 'Paused')?.status === 'True' ? cr : undefined
  })
  t.match(condition(paused, 'Ready'), { status: 'False', reason: 'Paused', message: /^reconcile paused by the annotation memcached\.cache\.example\.com\/paused="true"/ })
  // Writes other than the CR's own status (which notes the new generation it saw while paused).
  const writes = () => sandbox.requests.log().filter((r) => r.userAgent === 'memcached-operator/test' && r.verb !== 'get' && r.verb !== 'list' && r.verb !== 'watch' && !(r.resource === 'memcacheds' && r.subresource === 'status'))
  const writesBefore = writes().length
  const reconciledBefore = op.metrics.counts['reconciled:success'] ?? 0
  await kubectl(['scale', 'mc', 'p', '-n', ns, '--replicas=3'])
  const table = await eventually('kubectl get shows Paused', async () => {
    const out = await kubectl(['get', 'mc', 'p', '-n', ns])
    return / Paused /.test(out) ? out : undefined
  })
  t.match(table, /^NAME\s+SIZE\s+READY\s+SERVERS\s+STATUS\s+AGE\np\s+3\s+1\s+1\s+Paused\s/, 'the Status column says Paused')
  // The new generation is reconciled (and writes nothing).
  await eventually('the scale was reconciled', () => ((op.metrics.counts['reconciled:success'] ?? 0) > reconciledBefore ? true : undefined))
  const deployment = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'p' })
  t.equal((deployment.spec as { replicas: number }).replicas, 1, 'the Deployment was not scaled')
  t.same(writes().slice(writesBefore), [], 'nothing written but the CR\'s status while paused')
  t.equal(condition(await client.get({ ...MC, namespace: ns, name: 'p' }), 'Paused')?.status, 'True', 'still paused')
  await kubectl(['annotate', 'mc', 'p', '-n', ns, 'memcached.cache.example.com/paused-'])
  await eventually('resumed and scaled', async () => {
    const d = await client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: ns, name: 'p' })
    return (d.spec as { replicas: number }).replicas === 3 ? true : undefined
  })
  const cr = await ready(client, ns, 'p')
  t.match(condition(cr, 'Paused'), { status: 'False', reason: 'Resumed' })
})
